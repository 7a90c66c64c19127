/*
 * A stand-in for the JNI library: a shared object linked against
 * libquiver_bundled.a, exporting only its own entry point. check_bundled.sh
 * checks what it exports and needs, and probe_main dlopen()s it and calls
 * probe_roundtrip, which writes a file, reads it back and runs zstd and lz4
 * through the encoding API, so all three bundled libraries are exercised.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "quiver/quiver.h"

#define ROWS 20000

__attribute__((visibility("default"))) int probe_roundtrip(const char *path, char *msg, size_t msg_size);

static int say(char *msg, size_t n, int rc, const char *what, const struct qv_error *err) {
    snprintf(msg, n, "%s: %s", what, err && err->code ? err->message : "mismatch");
    return rc ? rc : EIO;
}

/* Writes ROWS rows of (id int64, name utf8) with compact on, reads every
 * row group back and compares. */
static int file_roundtrip(const char *path, struct qv_reservation *r, char *msg, size_t n) {
    struct qv_error err = {0};
    struct qv_field cols[2] = {{.name = "id", .type = QV_TYPE_INT64},
                               {.name = "name", .type = QV_TYPE_UTF8}};
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2, .children = cols};
    struct qv_schema *schema = NULL;
    int rc = qv_schema_create(&root, r, &schema, &err);
    if (rc) return say(msg, n, rc, "schema", &err);
    struct qv_writer_options wo = {.row_group_rows = 8192, .compact = 1};
    struct qv_writer *w = NULL;
    rc = qv_writer_open(path, schema, &wo, r, &w, &err);
    if (rc) {
        qv_schema_destroy(schema);
        return say(msg, n, rc, "writer open", &err);
    }
    struct qv_builder *b = qv_writer_builder(w);
    struct qv_appender *id = qv_builder_column(b, 0), *name = qv_builder_column(b, 1);
    char text[64];
    for (int64_t i = 0; i < ROWS && !rc; i++) {
        int len = snprintf(text, sizeof text, "row %lld of the bundled probe", (long long)(i % 977));
        rc = qv_append_int64(id, i * 7);
        if (!rc) rc = qv_append_string(name, text, (size_t)len);
        if (!rc && (i + 1) % 1000 == 0) rc = qv_writer_end_rows(w, &err);
    }
    if (!rc) rc = qv_writer_end_rows(w, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    qv_writer_close(w);
    qv_schema_destroy(schema);
    if (rc) return say(msg, n, rc, "write", &err);

    struct qv_reader *rd = NULL;
    rc = qv_reader_open(path, NULL, r, &rd, &err);
    if (rc) return say(msg, n, rc, "reader open", &err);
    int64_t seen = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd) && !rc; g++) {
        struct ArrowArray batch;
        rc = qv_reader_read_row_group(rd, g, NULL, 0, r, &batch, &err);
        if (rc) break;
        const int64_t *ids = batch.children[0]->buffers[1];
        const int32_t *offs = batch.children[1]->buffers[1];
        const char *data = batch.children[1]->buffers[2];
        for (int64_t i = 0; i < batch.length && !rc; i++, seen++) {
            int len = snprintf(text, sizeof text, "row %lld of the bundled probe", (long long)(seen % 977));
            if (ids[i] != seen * 7 || offs[i + 1] - offs[i] != len || memcmp(data + offs[i], text, (size_t)len))
                rc = say(msg, n, 0, "read back", NULL);
        }
        batch.release(&batch);
    }
    qv_reader_close(rd);
    if (rc) return err.code ? say(msg, n, rc, "read", &err) : rc;
    if (seen != ROWS) return say(msg, n, 0, "row count", NULL);
    return 0;
}

/* Encodes the same int64 values with zstd and with lz4 forced, decodes them
 * and compares. */
static int codec_roundtrip(int encoding, struct qv_reservation *r, char *msg, size_t n) {
    static int64_t in[4096], out[4096];
    for (int i = 0; i < 4096; i++) in[i] = (i % 100) * 1000003;
    struct qv_values v = {.kind = QV_KIND_INT64, .count = 4096, .values = in};
    struct qv_encode_options o = {.force = encoding};
    struct qv_encoded enc;
    struct qv_error err = {0};
    int rc = qv_encode(&v, &o, r, &enc, &err);
    if (rc) return say(msg, n, rc, qv_encoding_name(encoding), &err);
    struct qv_decode_out d = {.values = out};
    rc = qv_decode(enc.data, enc.size, QV_KIND_INT64, 0, 4096, r, &d, &err);
    qv_encoded_release(r, &enc);
    if (rc) return say(msg, n, rc, qv_encoding_name(encoding), &err);
    if (memcmp(in, out, sizeof in)) return say(msg, n, 0, qv_encoding_name(encoding), NULL);
    return 0;
}

int probe_roundtrip(const char *path, char *msg, size_t msg_size) {
    struct qv_error err = {0};
    struct qv_pool *pool = NULL;
    struct qv_reservation *r = NULL;
    int rc = qv_pool_create(NULL, &pool, &err);
    if (!rc) rc = qv_reservation_create(pool, NULL, &r, &err);
    if (rc) {
        qv_pool_destroy(pool);
        return say(msg, msg_size, rc, "pool", &err);
    }
    rc = file_roundtrip(path, r, msg, msg_size);
    if (!rc) rc = codec_roundtrip(QV_ENC_ZSTD, r, msg, msg_size);
    if (!rc) rc = codec_roundtrip(QV_ENC_LZ4, r, msg, msg_size);
    uint64_t left = qv_reservation_used(r);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
    if (!rc && left) {
        snprintf(msg, msg_size, "%llu bytes still charged after the round trip", (unsigned long long)left);
        return EIO;
    }
    return rc;
}
