/* Writes the seed corpus for fuzz_reader: small valid files of every type,
 * with one and several row groups. Usage: make_fuzz_seeds DIR */
#include <stdio.h>

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

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
        return 2;
    }
    return write_one(argv[1], "one.qvr", 1, 0, 0.0) | write_one(argv[1], "small.qvr", 40, 0, 0.3) |
           write_one(argv[1], "groups.qvr", 2100, 1024, 0.2);
}
