/* Writes the seed corpus for fuzz_reader: small valid files of every type,
 * with one and several row groups, and a file of long strings whose values
 * are zstd frames sized by bytes, over several checksum blocks (format 2).
 * Usage: make_fuzz_seeds DIR */
#include <stdio.h>
#include <string.h>

#include "quiver/format.h"
#include "random_batch.h"

static int write_one(const char *dir, const char *name, int64_t rows, int64_t rg_rows, double nulls) {
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
    struct qv_error err;
    if (qv_pool_create(NULL, &p, &err) || qv_reservation_create(p, NULL, &r, &err)) return 1;
    if (rb_all_types_schema(r, &s)) return 1;
    struct rb_options o = {.null_prob = nulls, .max_list = 3, .max_string = 12};
    struct ArrowArray b;
    if (rb_batch(s, rows, (uint64_t)rows, &o, r, &b)) return 1;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct qv_writer *w;
    struct qv_writer_options wo = {.row_group_rows = rg_rows};
    int rc = qv_writer_open(path, s, &wo, r, &w, &err);
    if (!rc) rc = qv_writer_write(w, &b, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fprintf(stderr, "fuzz_seeds: %s\n", err.message);
    qv_writer_close(w);
    b.release(&b);
    qv_schema_destroy(s);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    return rc != 0;
}

/* 2000 strings of 100..1100 bytes: about 1.2 MB of text in sized zstd
 * frames (several per chunk), over many 32 KiB blocks. */
static int write_strings(const char *dir) {
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
    struct qv_error err;
    static const struct qv_field cols[] = {{.name = "text", .type = QV_TYPE_UTF8, .nullable = true}};
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 1,
                                         .children = cols};
    if (qv_pool_create(NULL, &p, &err) || qv_reservation_create(p, NULL, &r, &err)) return 1;
    if (qv_schema_create(&root, r, &s, &err)) return 1;
    struct qv_builder *b;
    if (qv_builder_create(s, r, NULL, &b, &err)) return 1;
    static const char words[] = "the quick brown fox jumps over the lazy dog ";
    char buf[1200];
    int rc = 0;
    for (int i = 0; !rc && i < 2000; i++) {
        int n = snprintf(buf, sizeof buf, "%d ", i);
        size_t len = 100 + (size_t)(i * 7919 % 1000);
        for (size_t k = (size_t)n; k < len; k++) buf[k] = words[k % (sizeof words - 1)];
        rc = i % 13 == 4 ? qv_append_null(qv_builder_column(b, 0))
                         : qv_append_string(qv_builder_column(b, 0), buf, len);
    }
    struct ArrowArray batch = {0};
    if (!rc) rc = qv_builder_finish(b, &batch, &err);
    qv_builder_destroy(b);
    char path[1024];
    snprintf(path, sizeof path, "%s/strings.qvr", dir);
    struct qv_writer *w = NULL;
    if (!rc) rc = qv_writer_open(path, s, NULL, r, &w, &err);
    if (!rc) rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fprintf(stderr, "fuzz_seeds: strings: %s\n", err.message);
    qv_writer_close(w);
    if (batch.release) batch.release(&batch);
    qv_schema_destroy(s);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    return rc != 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
        return 2;
    }
    return write_one(argv[1], "one.qvr", 1, 0, 0.0) | write_one(argv[1], "small.qvr", 40, 0, 0.3) |
           write_one(argv[1], "groups.qvr", 2100, 1024, 0.2) | write_strings(argv[1]);
}
