/* Writes the seed corpus for fuzz_reader: small valid files of every type,
 * with one and several row groups, a file of columns stored relative to
 * others, and a file of long strings whose values
 * are zstd frames sized by bytes, over several checksum blocks (format 2),
 * a file whose column is stored in ans frames;
 * with a second directory, seeds for fuzz_encoding too.
 * Usage: make_fuzz_seeds DIR [ENCODING_DIR] */
#include <stdio.h>
#include <string.h>

#include "quiver/encoding.h"
#include "quiver/format.h"
#include "encoding/encoding_testing.h"
#include "random_batch.h"

/* One seed file: a pool, a reservation, a schema and a builder of it. */
struct seed {
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
    struct qv_builder *b;
};

/* Opens a seed of n_cols columns `cols`, or of every type when cols is
 * NULL. Returns nonzero on failure. */
static int seed_open(struct seed *sd, const struct qv_field *cols, int64_t n_cols) {
    struct qv_error err;
    if (qv_pool_create(NULL, &sd->p, &err) || qv_reservation_create(sd->p, NULL, &sd->r, &err)) return 1;
    const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = n_cols,
                                  .children = cols};
    if (cols ? qv_schema_create(&root, sd->r, &sd->s, &err) : rb_all_types_schema(sd->r, &sd->s))
        return 1;
    return qv_builder_create(sd->s, sd->r, NULL, &sd->b, &err) != 0;
}

/* Unless rc (the appends' result) is an error, writes the builder's rows
 * to DIR/NAME in row groups of rg_rows (0: the writer's default); then
 * frees everything of the seed. Returns nonzero on failure. */
static int seed_write(struct seed *sd, int rc, const char *dir, const char *name, int64_t rg_rows) {
    struct qv_error err = {0};
    struct ArrowArray batch = {0};
    if (!rc) rc = qv_builder_finish(sd->b, &batch, &err);
    qv_builder_destroy(sd->b);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct qv_writer *w = NULL;
    struct qv_writer_options wo = {.row_group_rows = rg_rows};
    if (!rc) rc = qv_writer_open(path, sd->s, &wo, sd->r, &w, &err);
    if (!rc) rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fprintf(stderr, "fuzz_seeds: %s: %s\n", name, err.message);
    qv_writer_close(w);
    if (batch.release) batch.release(&batch);
    qv_schema_destroy(sd->s);
    qv_reservation_destroy(sd->r);
    qv_pool_destroy(sd->p);
    return rc != 0;
}

/* Random rows of every type (random_batch.c, seeded with the row count). */
static int write_one(const char *dir, const char *name, int64_t rows, int64_t rg_rows, double nulls) {
    struct seed sd;
    if (seed_open(&sd, NULL, 0)) return 1;
    struct rb_options o = {.null_prob = nulls, .max_list = 3, .max_string = 12};
    uint64_t seed = (uint64_t)rows;
    return seed_write(&sd, rb_append_rows(sd.b, rows, &seed, &o), dir, name, rg_rows);
}

/* 2000 strings of 100..1100 bytes: about 1.2 MB of text in sized zstd
 * frames (several per chunk), over many 32 KiB blocks. */
static int write_strings(const char *dir) {
    static const struct qv_field cols[] = {{.name = "text", .type = QV_TYPE_UTF8, .nullable = true}};
    struct seed sd;
    if (seed_open(&sd, cols, 1)) return 1;
    static const char words[] = "the quick brown fox jumps over the lazy dog ";
    char buf[1200];
    int rc = 0;
    for (int i = 0; !rc && i < 2000; i++) {
        int n = snprintf(buf, sizeof buf, "%d ", i);
        size_t len = 100 + (size_t)(i * 7919 % 1000);
        for (size_t k = (size_t)n; k < len; k++) buf[k] = words[k % (sizeof words - 1)];
        rc = i % 13 == 4 ? qv_append_null(qv_builder_column(sd.b, 0))
                         : qv_append_string(qv_builder_column(sd.b, 0), buf, len);
    }
    return seed_write(&sd, rc, dir, "strings.qvr", 0);
}

/* Seeds for fuzz_encoding (its input layout: kind index into its table,
 * u16 count, segment bytes): chunks using issue 15's skew encodings, a
 * forced patched int64 chunk with outliers, an int32 hour cycle the
 * cascade codes with the entropy stage (zstd frames over packed values),
 * and a skewed uint16 column as a frequency-ordered dictionary (forced:
 * the cascade now stores it in the entropy stage's sequential frames). */
static int write_enc_seed(const char *dir, const char *name, uint8_t kind_index,
                          enum qv_value_kind kind, const void *vals, int64_t n, int force) {
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_error err;
    if (qv_pool_create(NULL, &p, &err) || qv_reservation_create(p, NULL, &r, &err)) return 1;
    struct qv_values v = {.kind = kind, .count = n, .values = vals};
    struct qv_encode_options o = {.force = force};
    struct qv_encoded e;
    int rc = qv_encode(&v, &o, r, &e, &err);
    if (rc) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", name, err.message);
    } else {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *f = fopen(path, "wb");
        uint8_t head[3] = {kind_index, (uint8_t)(n & 0xff), (uint8_t)(n >> 8)};
        rc = !f || fwrite(head, 1, 3, f) != 3 || fwrite(e.data, 1, e.size, f) != e.size;
        if (f && fclose(f)) rc = 1;
        qv_encoded_release(r, &e);
    }
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    return rc != 0;
}

static int write_encoding_seeds(const char *dir) {
    static int64_t i64[3000];
    static int32_t i32[20000];
    static uint16_t u16[30000];
    uint64_t x = 7;
    for (int i = 0; i < 3000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        i64[i] = (int64_t)(x >> 60) + (i % 97 == 5 ? INT64_C(1) << 40 : 0) - (i % 301 == 9 ? 500 : 0);
    }
    for (int i = 0; i < 20000; i++) i32[i] = i % 24;
    for (int i = 0; i < 30000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        u16[i] = (uint16_t)(__builtin_ctzll(x | (UINT64_C(1) << 40)) * 131 + 7);
    }
    /* Indices into fuzz_encoding.c's kinds[]: INT32 3, UINT16 2, INT64 4. */
    /* Line numbers 1..k (k = 1..7): the sequential layout (format 4.0), as
     * the cascade chooses it (it does for the hour cycle too); then forced
     * over the skewed uint16 values, which it does not choose it for. */
    static int32_t lines[20000];
    for (int i = 0; i < 20000;) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        for (int j = 1; j <= 1 + (int)(x >> 61) && i < 20000; j++) lines[i++] = j;
    }
    int rc = write_enc_seed(dir, "entropy_lines_i32", 3, QV_KIND_INT32, lines, 20000, QV_ENC_AUTO);
    qv_encode_force_entropy_layout(3);
    rc |= write_enc_seed(dir, "entropy_seq_skewed_u16", 2, QV_KIND_UINT16, u16, 30000, QV_ENC_AUTO);
    qv_encode_force_entropy_layout(0);
    /* ans frames (encoding 18, format 5.0): geometric codes above 1000, as
     * the cascade stores them (frames of 16 vectors), the line
     * numbers with the ans layout forced, and the hour cycle under ans
     * forced at the root (one frame over the whole tree). */
    static int64_t geo[20000];
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        geo[i] = 1000 + __builtin_ctzll((x >> 40) | (UINT64_C(1) << 15));
    }
    rc |= write_enc_seed(dir, "ans_geo_i64", 4, QV_KIND_INT64, geo, 20000, QV_ENC_AUTO);
    /* Seven values drawn evenly (2.8 bits each): the first frame, 16,384
     * bytes coded into some 5.7 KiB, is a wide block (kind 2, format 6.0),
     * the last one's 3,616 bytes a block of kind 1. */
    static int64_t seven[20000];
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        seven[i] = 50 + (int64_t)((x >> 33) % 7);
    }
    rc |= write_enc_seed(dir, "ans_wide_seven_i64", 4, QV_KIND_INT64, seven, 20000, QV_ENC_AUTO);
    qv_encode_force_entropy_layout(4);
    rc |= write_enc_seed(dir, "ans_forced_lines_i32", 3, QV_KIND_INT32, lines, 20000, QV_ENC_AUTO);
    qv_encode_force_entropy_layout(0);
    rc |= write_enc_seed(dir, "ans_root_hours_i32", 3, QV_KIND_INT32, i32, 3000, QV_ENC_ANS);
    /* Flags that hold along orders of 1 to 14 lines (format 8.0): zstd
     * frames of sequential bits (seqpack residuals of 1 bit), chosen; and
     * line numbers forced to seqpack at the root (4 bits). */
    static int64_t flags[20000];
    for (int i = 0; i < 20000;) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        const int len = 1 + (int)((x >> 33) % 14);
        const int64_t f = (int64_t)(x >> 63);
        for (int j = 0; j < len && i < 20000; j++) flags[i++] = f;
    }
    rc |= write_enc_seed(dir, "seqbits_flags_i64", 4, QV_KIND_INT64, flags, 20000, QV_ENC_AUTO);
    rc |= write_enc_seed(dir, "seqpack_lines_i32", 3, QV_KIND_INT32, lines, 20000, QV_ENC_SEQPACK);
    /* Discounts of 0 to 10 (format 9.0): radix pairs of base-11 digits in
     * 7-bit groups, chosen. */
    static int64_t disc[20000];
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        disc[i] = (int64_t)((x >> 33) % 11);
    }
    rc |= write_enc_seed(dir, "radix_discounts_i64", 4, QV_KIND_INT64, disc, 20000, QV_ENC_AUTO);
    /* A sequence (ids counting down by 7): delta whose deltas are one
     * constant, which decodes as base + j steps. */
    static int64_t seq[5000];
    for (int i = 0; i < 5000; i++) seq[i] = 1000000 - 7 * (int64_t)i;
    rc |= write_enc_seed(dir, "delta_sequence_i64", 4, QV_KIND_INT64, seq, 5000, QV_ENC_DELTA);
    /* Codes of a geometric bit length (bucket's tokens skewed, extra bits
     * of 0 to 19), forced to bucket (format 7.0). */
    static int32_t codes[6000];
    for (int i = 0; i < 6000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        const unsigned len = (unsigned)__builtin_ctzll(x | (UINT64_C(1) << 20));
        codes[i] = (int32_t)((x >> 40) & ((UINT64_C(1) << len) - 1));
    }
    rc |= write_enc_seed(dir, "bucket_codes_i32", 3, QV_KIND_INT32, codes, 6000, QV_ENC_BUCKET);
    return rc | write_enc_seed(dir, "patched_i64", 4, QV_KIND_INT64, i64, 3000, QV_ENC_PATCHED) |
           write_enc_seed(dir, "entropy_hours_i32", 3, QV_KIND_INT32, i32, 20000, QV_ENC_AUTO) |
           write_enc_seed(dir, "dict_skewed_u16", 2, QV_KIND_UINT16, u16, 30000, QV_ENC_DICT);
}

/* A nullable int64 column of geometric codes above 1000, every seventh
 * row null: the writer stores its values in ans frames (encoding 18); two
 * row groups. */
static int write_ans(const char *dir) {
    static const struct qv_field cols[] = {{.name = "code", .type = QV_TYPE_INT64, .nullable = true}};
    struct seed sd;
    if (seed_open(&sd, cols, 1)) return 1;
    uint64_t x = 18;
    int rc = 0;
    for (int i = 0; !rc && i < 24000; i++) {
        int64_t v = 1000 + __builtin_ctzll(rb_next(&x) | (UINT64_C(1) << 15));
        rc = i % 7 == 3 ? qv_append_null(qv_builder_column(sd.b, 0))
                        : qv_append_int64(qv_builder_column(sd.b, 0), v);
    }
    return seed_write(&sd, rc, dir, "ans.qvr", 12000);
}

/* Columns that move together, so the writer stores receipt and key2
 * relative to ship and key (encoding 17) and the reader's fuzzing reaches
 * the column reader's reference path; two row groups, ship with nulls. */
static int write_relative(const char *dir) {
    static const struct qv_field cols[] = {
        {.name = "ship", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "receipt", .type = QV_TYPE_DATE32},
        {.name = "key", .type = QV_TYPE_INT64},
        {.name = "key2", .type = QV_TYPE_INT64, .nullable = true},
    };
    struct seed sd;
    if (seed_open(&sd, cols, 4)) return 1;
    struct qv_builder *b = sd.b;
    uint64_t x = 11;
    int rc = 0;
    for (int i = 0; !rc && i < 3000; i++) {
        int32_t ship = 8000 + (int32_t)(rb_next(&x) % 2500);
        int64_t key = (int64_t)(rb_next(&x) >> 24);
        rc |= i % 97 == 5 ? qv_append_null(qv_builder_column(b, 0))
                          : qv_append_date32(qv_builder_column(b, 0), ship);
        rc |= qv_append_date32(qv_builder_column(b, 1), ship + 1 + (int32_t)(rb_next(&x) % 30));
        rc |= qv_append_int64(qv_builder_column(b, 2), key);
        rc |= i % 31 == 7 ? qv_append_null(qv_builder_column(b, 3))
                          : qv_append_int64(qv_builder_column(b, 3), key + (int64_t)(rb_next(&x) % 64));
    }
    return seed_write(&sd, rc, dir, "relative.qvr", 1500);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: make_fuzz_seeds DIR [ENCODING_DIR]\n");
        return 2;
    }
    int rc = write_one(argv[1], "one.qvr", 1, 0, 0.0) | write_one(argv[1], "small.qvr", 40, 0, 0.3) |
             write_one(argv[1], "groups.qvr", 2100, 1024, 0.2) | write_strings(argv[1]) |
             write_relative(argv[1]) | write_ans(argv[1]);
    if (argc == 3) rc |= write_encoding_seeds(argv[2]);
    return rc;
}
