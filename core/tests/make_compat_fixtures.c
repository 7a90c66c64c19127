/* Writes the old-format fixtures of core/tests/data (compat_fixtures.h)
 * with the code it is built from, and prints the encoding trees of each
 * file's first row group. Run it only to record what a format version's
 * writer wrote (core/tests/data/README.md says which commit wrote them);
 * never to refresh fixtures after a format change: they are the old files
 * the new reader must still read.
 *
 *   make_compat_fixtures <dir> [prefix]
 *
 * With a prefix (for example v2_0_), only the fixtures whose file names start
 * with it are written: the older ones are never rewritten by a newer writer. */
#include <stdio.h>
#include <string.h>

#include "compat_fixtures.h"

static int write_one(const struct cf_spec *s, const char *dir, struct qv_reservation *r) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, s->file);
    struct qv_schema *schema = NULL;
    struct ArrowArray batch = {0};
    struct qv_error err = {0};
    struct qv_writer *w = NULL;
    int rc = cf_schema(s, r, &schema);
    if (!rc) rc = cf_batch(s, schema, r, &batch);
    struct qv_writer_options o = {.row_group_rows = s->row_group_rows, .compact = s->compact};
    if (!rc) rc = qv_writer_open(path, schema, &o, r, &w, &err);
    if (!rc) rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    qv_writer_close(w);
    if (batch.release) batch.release(&batch);
    if (rc) fprintf(stderr, "%s: %s\n", path, err.message);
    struct qv_reader *rd = NULL;
    if (!rc) rc = qv_reader_open(path, NULL, r, &rd, &err);
    for (int32_t c = 0; !rc && c < (int32_t)schema->root.n_children; c++) {
        int32_t node = qv_reader_column_node(rd, c);
        struct qv_chunk_info ci;
        rc = qv_reader_chunk_info(rd, 0, node, &ci, &err);
        for (int i = 0; !rc && i < ci.n_segments; i++) {
            char desc[512];
            rc = qv_reader_segment_describe(rd, 0, node, i, r, desc, sizeof desc, NULL, NULL, &err);
            if (!rc) printf("%s %s[%d]: %s\n", s->file, schema->root.children[c].name, i, desc);
        }
    }
    qv_reader_close(rd);
    qv_schema_destroy(schema);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s <dir> [prefix]\n", argv[0]);
        return 2;
    }
    struct qv_pool *pool;
    struct qv_reservation *r;
    if (qv_pool_create(NULL, &pool, NULL) || qv_reservation_create(pool, NULL, &r, NULL)) return 1;
    int rc = 0;
    const char *prefix = argc == 3 ? argv[2] : "";
    for (int i = 0; !rc && i < cf_n_specs; i++)
        if (strncmp(cf_specs[i].file, prefix, strlen(prefix)) == 0)
            rc = write_one(&cf_specs[i], argv[1], r);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
    return rc ? 1 : 0;
}
