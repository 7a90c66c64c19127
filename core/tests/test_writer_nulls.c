/* What the writer stores under null slots (core/src/format/null_fill.c):
 * each fill on its own (non-null slots untouched, null slots holding what
 * the mode says, for every value kind), allocation failures, and whole
 * files: every type round-trips with every fill and null density, garbage
 * under nulls no longer costs bytes, a constant column with nulls encodes as
 * a constant and filters mask its nulls, and the same rows make the same
 * bytes however the batches cut them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_testing.h"
#include "format/null_fill.h"
#include "memory/memory_testing.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "random_batch.h"
#include "test_util.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *r;
};

static int setup(void **state) {
    struct env *e = calloc(1, sizeof *e);
    assert_int_equal(qv_pool_create(NULL, &e->pool, NULL), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->r, NULL), 0);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    assert_int_equal(qv_reservation_used(e->r), 0); /* nothing leaked */
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
    free(e);
    return 0;
}

static uint64_t next(uint64_t *s) { return rb_next(s); }

/* A validity of n bits with nulls at probability p (and the first two
 * slots null, so leading nulls are always exercised). */
static uint8_t *make_validity(int64_t n, double p, uint64_t *seed, int64_t *nulls) {
    uint8_t *v = calloc((size_t)(n + 7) / 8 + 8, 1);
    *nulls = 0;
    for (int64_t i = 0; i < n; i++) {
        int valid = i >= 2 && (double)(next(seed) >> 11) / 9007199254740992.0 >= p;
        if (valid) qv_bit_set(v, i);
        else (*nulls)++;
    }
    return v;
}

/* ---- The fill on its own ---- */

/* Checks a fixed-width fill: non-null slots as given, null slots per mode. */
static void check_fixed(const uint8_t *in, const uint8_t *out, size_t w, int64_t n,
                        const uint8_t *valid, int mode) {
    int64_t first = -1;
    for (int64_t i = 0; i < n && first < 0; i++)
        if (qv_bit_get(valid, i)) first = i;
    /* The majority value, counted the slow way. */
    int64_t best = -1, best_count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!qv_bit_get(valid, i)) continue;
        int64_t c = 0;
        for (int64_t j = 0; j < n; j++)
            c += qv_bit_get(valid, j) && !memcmp(in + (size_t)i * w, in + (size_t)j * w, w);
        if (c > best_count) best = i, best_count = c;
    }
    int64_t valid_n = 0, first_null = -1;
    for (int64_t i = 0; i < n; i++) {
        valid_n += qv_bit_get(valid, i);
        if (!qv_bit_get(valid, i) && first_null < 0) first_null = i;
    }
    uint8_t zero[64] = {0};
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *got = out + (size_t)i * w;
        if (qv_bit_get(valid, i)) {
            assert_memory_equal(got, in + (size_t)i * w, w);
        } else if (mode == QV__FILL_ZERO || first < 0) {
            assert_memory_equal(got, zero, w);
        } else if (mode == QV__FILL_PREVIOUS) {
            const uint8_t *want = i == 0 ? in + (size_t)first * w : out + (size_t)(i - 1) * w;
            assert_memory_equal(got, want, w);
        } else {
            /* One value in every null slot; a strict majority of the
             * non-null values is the vote's winner. */
            assert_memory_equal(got, out + (size_t)first_null * w, w);
            if (best_count * 2 > valid_n) assert_memory_equal(got, in + (size_t)best * w, w);
        }
    }
}

static void test_fill_fixed_widths(void **state) {
    struct env *e = *state;
    static const enum qv_value_kind kinds[] = {QV_KIND_INT8, QV_KIND_UINT16, QV_KIND_INT32,
                                               QV_KIND_FLOAT64, QV_KIND_FIXED_BINARY};
    static const double probs[] = {0.0, 0.3, 0.9, 1.0};
    uint64_t seed = 11;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        size_t w = kinds[k] == QV_KIND_INT8 ? 1 : kinds[k] == QV_KIND_UINT16 ? 2
                 : kinds[k] == QV_KIND_INT32 ? 4 : kinds[k] == QV_KIND_FLOAT64 ? 8 : 12;
        for (size_t p = 0; p < 4; p++) {
            for (int low_card = 0; low_card < 2; low_card++) {
                const int64_t n = 777;
                int64_t nulls;
                uint8_t *valid = make_validity(n, probs[p], &seed, &nulls);
                uint8_t *vals = malloc((size_t)n * w);
                for (size_t b = 0; b < (size_t)n * w; b++)
                    vals[b] = (uint8_t)(low_card ? (next(&seed) % 8 == 0 ? next(&seed) : 5)
                                                 : next(&seed));
                struct qv_values v = {.kind = kinds[k], .fixed_width = (int32_t)w, .count = n,
                                      .values = vals};
                for (int mode = 0; mode < QV__FILL_MODES; mode++) {
                    struct qv__filled f;
                    struct qv_error err;
                    assert_int_equal(qv__null_fill(&v, valid, nulls, mode, e->r, &f, &err), 0);
                    if (nulls == 0 || mode == QV__FILL_KEEP) {
                        assert_ptr_equal(f.v.values, vals);
                        assert_null(f.values);
                    } else {
                        assert_true(f.mode != QV__FILL_AUTO && f.mode != QV__FILL_KEEP);
                        if (mode != QV__FILL_AUTO && nulls < n) assert_int_equal(f.mode, mode);
                        check_fixed(vals, f.v.values, w, n, valid, f.mode);
                    }
                    assert_int_equal(f.v.count, n);
                    assert_int_equal(f.v.kind, kinds[k]);
                    qv__null_fill_release(e->r, &f);
                }
                free(vals);
                free(valid);
            }
        }
    }
}

/* AUTO picks the frequent value where it leaves fewer exceptions than
 * repeating the previous value would, and the previous value otherwise. */
static void test_fill_auto_choice(void **state) {
    struct env *e = *state;
    const int64_t n = 4096;
    int64_t *vals = malloc((size_t)n * 8);
    uint8_t *valid = calloc((size_t)n / 8, 1);
    int64_t nulls = 0;
    uint64_t seed = 3;
    /* Mostly 7, every other slot null, a rare other value: frequent. */
    for (int64_t i = 0; i < n; i++) {
        vals[i] = i % 97 == 1 ? (int64_t)(next(&seed) & 0xffff) : 7;
        if (i % 2) qv_bit_set(valid, i);
        else nulls++, vals[i] = (int64_t)next(&seed);
    }
    struct qv_values v = {.kind = QV_KIND_INT64, .count = n, .values = vals};
    struct qv__filled f;
    assert_int_equal(qv__null_fill(&v, valid, nulls, QV__FILL_AUTO, e->r, &f, NULL), 0);
    assert_int_equal(f.mode, QV__FILL_FREQUENT);
    for (int64_t i = 0; i < n; i += 2) assert_int_equal(((const int64_t *)f.v.values)[i], 7);
    qv__null_fill_release(e->r, &f);
    /* Sorted distinct values: the previous value (keeps them sorted). */
    for (int64_t i = 0; i < n; i++) vals[i] = i % 2 ? i * 3 : (int64_t)next(&seed);
    assert_int_equal(qv__null_fill(&v, valid, nulls, QV__FILL_AUTO, e->r, &f, NULL), 0);
    assert_int_equal(f.mode, QV__FILL_PREVIOUS);
    for (int64_t i = 1; i < n; i++)
        assert_true(((const int64_t *)f.v.values)[i] >= ((const int64_t *)f.v.values)[i - 1]);
    qv__null_fill_release(e->r, &f);
    free(vals);
    free(valid);
}

/* Strings: a few distinct words repeat the previous word under the nulls
 * (dictionary codes keep their runs); varied strings leave them empty. */
static void test_fill_auto_strings(void **state) {
    struct env *e = *state;
    const int64_t n = 5000;
    int32_t *off = malloc((size_t)(n + 1) * 4);
    char *data = malloc((size_t)n * 16);
    uint8_t *valid = calloc((size_t)n / 8 + 1, 1);
    uint64_t seed = 17;
    for (int varied = 0; varied < 2; varied++) {
        int64_t nulls = 0;
        int32_t at = 0;
        memset(valid, 0, (size_t)n / 8 + 1);
        for (int64_t i = 0; i < n; i++) {
            off[i] = at;
            if (next(&seed) % 4 == 0) {
                nulls++;
                continue;
            }
            qv_bit_set(valid, i);
            uint64_t x = varied ? next(&seed) : next(&seed) % 6;
            at += (int32_t)snprintf(data + at, 16, "w%llu", (unsigned long long)(x % 1000000000));
        }
        off[n] = at;
        struct qv_values v = {.kind = QV_KIND_BINARY, .count = n, .values = off,
                              .data = (const uint8_t *)data};
        struct qv__filled f;
        assert_int_equal(qv__null_fill(&v, valid, nulls, QV__FILL_AUTO, e->r, &f, NULL), 0);
        assert_int_equal(f.mode, varied ? QV__FILL_ZERO : QV__FILL_PREVIOUS);
        qv__null_fill_release(e->r, &f);
    }
    free(off);
    free(data);
    free(valid);
}

static void test_fill_bool(void **state) {
    struct env *e = *state;
    uint64_t seed = 5;
    for (int round = 0; round < 20; round++) {
        const int64_t n = 1 + (int64_t)(next(&seed) % 3000);
        int64_t nulls;
        uint8_t *valid = make_validity(n, round % 4 * 0.3, &seed, &nulls);
        uint8_t *bits = malloc((size_t)(n + 7) / 8);
        for (int64_t b = 0; b < (n + 7) / 8; b++)
            bits[b] = (uint8_t)(round % 2 ? next(&seed) : (next(&seed) | next(&seed)));
        int64_t first = -1, ones = 0, valid_n = n - nulls;
        for (int64_t i = 0; i < n; i++)
            if (qv_bit_get(valid, i)) {
                if (first < 0) first = i;
                ones += qv_bit_get(bits, i);
            }
        struct qv_values v = {.kind = QV_KIND_BOOL, .count = n, .values = bits};
        for (int mode = QV__FILL_AUTO; mode < QV__FILL_MODES; mode++) {
            if (mode == QV__FILL_KEEP) continue;
            struct qv__filled f;
            assert_int_equal(qv__null_fill(&v, valid, nulls, mode, e->r, &f, NULL), 0);
            const uint8_t *got = f.v.values;
            for (int64_t i = 0; i < n; i++) {
                if (qv_bit_get(valid, i)) {
                    assert_int_equal(qv_bit_get(got, i), qv_bit_get(bits, i));
                    continue;
                }
                int want = f.mode == QV__FILL_ZERO || first < 0 ? 0
                           : f.mode == QV__FILL_FREQUENT       ? ones * 2 >= valid_n
                           : i == 0                            ? qv_bit_get(bits, first)
                                                               : qv_bit_get(got, i - 1);
                assert_int_equal(qv_bit_get(got, i), want);
            }
            qv__null_fill_release(e->r, &f);
        }
        free(bits);
        free(valid);
    }
}

/* Binary values of both offset widths, offsets not starting at 0, garbage
 * bytes under the nulls. */
static void test_fill_binary(void **state) {
    struct env *e = *state;
    uint64_t seed = 9;
    for (int wide = 0; wide < 2; wide++) {
        for (int round = 0; round < 12; round++) {
            const int64_t n = 50 + (int64_t)(next(&seed) % 2000);
            int64_t nulls;
            uint8_t *valid = make_validity(n, round % 4 * 0.3, &seed, &nulls);
            uint8_t *data = malloc((size_t)n * 12 + 16);
            int64_t *off64 = malloc((size_t)(n + 1) * 8);
            int32_t *off32 = malloc((size_t)(n + 1) * 4);
            int64_t at = 5; /* offsets start past 0 */
            int same = round % 3 == 2;
            for (int64_t i = 0; i <= n; i++) {
                off64[i] = at;
                off32[i] = (int32_t)at;
                if (i == n) break;
                int64_t len = same && qv_bit_get(valid, i) ? 4 : (int64_t)(next(&seed) % 12);
                for (int64_t j = 0; j < len; j++)
                    data[at + j] = (uint8_t)(same && qv_bit_get(valid, i) ? 'q' : 'a' + next(&seed) % 3);
                at += len;
            }
            struct qv_values v = {.kind = wide ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY,
                                  .count = n, .data = data};
            v.values = wide ? (const void *)off64 : (const void *)off32;
            for (int mode = QV__FILL_AUTO; mode < QV__FILL_MODES; mode++) {
                if (mode == QV__FILL_KEEP) continue;
                struct qv__filled f;
                assert_int_equal(qv__null_fill(&v, valid, nulls, mode, e->r, &f, NULL), 0);
                if (mode == QV__FILL_AUTO && nulls && same && nulls < n)
                    assert_int_equal(f.mode, QV__FILL_FREQUENT);
                else if (mode == QV__FILL_AUTO && nulls)
                    assert_true(f.mode == QV__FILL_ZERO || f.mode == QV__FILL_PREVIOUS);
                int64_t prev = -1;
                for (int64_t i = 0; i < n; i++) {
                    int64_t a = wide ? ((const int64_t *)f.v.values)[i] : ((const int32_t *)f.v.values)[i];
                    int64_t b = wide ? ((const int64_t *)f.v.values)[i + 1] : ((const int32_t *)f.v.values)[i + 1];
                    assert_true(b >= a);
                    if (qv_bit_get(valid, i)) {
                        assert_int_equal(b - a, off64[i + 1] - off64[i]);
                        assert_memory_equal(f.v.data + a, data + off64[i], (size_t)(b - a));
                        prev = i;
                    } else if (f.mode == QV__FILL_ZERO || nulls == n) {
                        assert_int_equal(b, a);
                    } else if (f.mode == QV__FILL_PREVIOUS) {
                        int64_t src = prev;
                        if (src < 0)
                            for (src = 0; !qv_bit_get(valid, src); src++) {}
                        assert_int_equal(b - a, off64[src + 1] - off64[src]);
                        assert_memory_equal(f.v.data + a, data + off64[src], (size_t)(b - a));
                    } else if (same) {
                        assert_int_equal(b - a, 4);
                        assert_memory_equal(f.v.data + a, "qqqq", 4);
                    }
                }
                qv__null_fill_release(e->r, &f);
            }
            free(data);
            free(off64);
            free(off32);
            free(valid);
        }
    }
}

/* Null strings that are already empty need no copy. */
static void test_fill_binary_already_empty(void **state) {
    struct env *e = *state;
    const int32_t off[] = {0, 3, 3, 6, 6};
    const uint8_t valid[] = {0x5}; /* slots 0 and 2 valid */
    struct qv_values v = {.kind = QV_KIND_BINARY, .count = 4, .values = off,
                          .data = (const uint8_t *)"abcdef"};
    struct qv__filled f;
    assert_int_equal(qv__null_fill(&v, valid, 2, QV__FILL_AUTO, e->r, &f, NULL), 0);
    assert_int_equal(f.mode, QV__FILL_ZERO);
    assert_null(f.values);
    assert_ptr_equal(f.v.values, off);
    qv__null_fill_release(e->r, &f);
}

/* Every allocation of a fill fails cleanly: ENOMEM, the error set, nothing
 * left charged. */
static void test_fill_allocation_failure(void **state) {
    struct env *e = *state;
    const int64_t n = 3000;
    uint64_t seed = 13;
    int64_t nulls;
    uint8_t *valid = make_validity(n, 0.5, &seed, &nulls);
    int32_t *off = malloc((size_t)(n + 1) * 4);
    uint8_t *data = malloc((size_t)n * 3);
    int64_t *words = malloc((size_t)n * 8);
    for (int64_t i = 0; i <= n; i++) off[i] = (int32_t)(i * 3);
    for (int64_t i = 0; i < n * 3; i++) data[i] = (uint8_t)('a' + i % 7);
    for (int64_t i = 0; i < n; i++) words[i] = (int64_t)next(&seed);
    struct qv_values cases[] = {
        {.kind = QV_KIND_INT64, .count = n, .values = words},
        {.kind = QV_KIND_BOOL, .count = n, .values = data},
        {.kind = QV_KIND_BINARY, .count = n, .values = off, .data = data},
    };
    for (size_t c = 0; c < 3; c++) {
        for (int mode = QV__FILL_ZERO; mode < QV__FILL_MODES; mode++) {
            int failed = 0;
            for (uint64_t nth = 1; nth < 10; nth++) {
                qv_pool_inject_alloc_failure(e->pool, nth);
                struct qv__filled f;
                struct qv_error err = {0};
                int rc = qv__null_fill(&cases[c], valid, nulls, mode, e->r, &f, &err);
                qv_pool_inject_alloc_failure(e->pool, 0);
                if (rc) {
                    assert_int_equal(rc, ENOMEM);
                    assert_true(err.message[0] != 0);
                    assert_null(f.values);
                    assert_null(f.data);
                    failed++;
                }
                qv__null_fill_release(e->r, &f);
                qv_reservation_release_slack(e->r);
                assert_int_equal(qv_reservation_used(e->r), 0);
            }
            assert_true(failed >= 1); /* every fill allocates and each failure was seen */
        }
    }
    free(valid);
    free(off);
    free(data);
    free(words);
}

/* ---- Whole files ---- */

static void write_file(struct env *e, const char *path, const struct qv_schema *s,
                       struct ArrowArray *batches, int nb, int64_t rg_rows, int fill, int force,
                       int owned) {
    struct qv_writer *w;
    struct qv_error err;
    struct qv_writer_options o = {.row_group_rows = rg_rows};
    assert_int_equal(qv_writer_open(path, s, &o, e->r, &w, &err), 0);
    qv_writer_force_null_fill(w, fill);
    qv_writer_force_encoding(w, force);
    for (int i = 0; i < nb; i++) {
        int rc = owned ? qv_writer_write_owned(w, &batches[i], &err)
                       : qv_writer_write(w, &batches[i], &err);
        if (rc) fail_msg("write: %s", err.message);
    }
    int rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

/* Compares a whole file with `expect` (null flags and non-null values; the
 * equality ignores what null slots hold). */
static void check_file(struct env *e, const char *path, const struct qv_schema *s,
                       const struct ArrowArray *expect) {
    struct qv_reader *rd;
    struct qv_error err;
    int rc = qv_reader_open(path, NULL, e->r, &rd, &err);
    if (rc) fail_msg("open: %s", err.message);
    int64_t start = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++) {
        struct ArrowArray got;
        rc = qv_reader_read_row_group(rd, g, NULL, 0, e->r, &got, &err);
        if (rc) fail_msg("read rg %lld: %s", (long long)g, err.message);
        assert_int_equal(qv_arrow_array_validate(&got, &s->root, QV_VALIDATE_FULL, &err), 0);
        for (int64_t c = 0; c < s->root.n_children; c++) {
            struct ArrowArray view = *expect->children[c];
            view.offset += start;
            view.length = got.length;
            char why[512] = "";
            if (!qv_arrow_array_equal(&s->root.children[c], &view, got.children[c], why, sizeof why))
                fail_msg("column %s: %s", s->root.children[c].name, why);
        }
        start += got.length;
        got.release(&got);
    }
    assert_int_equal(start, expect->length);
    qv_reader_close(rd);
}

/* Every type (nested ones included), every fill, sparse to all-null
 * columns, one and several row groups. */
static void test_all_types_every_fill(void **state) {
    struct env *e = *state;
    struct qv_schema *s;
    assert_int_equal(rb_all_types_schema(e->r, &s), 0);
    char path[512];
    tu_path(path, sizeof path, "nulls_all_types.qvr");
    static const double probs[] = {0.05, 0.5, 0.97, 1.0};
    static const int64_t rgs[] = {0, 1000};
    for (size_t p = 0; p < 4; p++) {
        for (int low = 0; low < 2; low++) {
            struct rb_options o = {.null_prob = probs[p], .max_list = 3, .max_string = 30,
                                   .low_cardinality = low};
            struct ArrowArray batch;
            assert_int_equal(rb_batch(s, 2500, 100 + p * 2 + (uint64_t)low, &o, e->r, &batch), 0);
            for (int mode = 0; mode < QV__FILL_MODES; mode++) {
                for (size_t g = 0; g < 2; g++) {
                    write_file(e, path, s, &batch, 1, rgs[g], mode, QV_ENC_AUTO, 0);
                    check_file(e, path, s, &batch);
                }
            }
            batch.release(&batch);
        }
    }
    unlink(path);
    qv_schema_destroy(s);
}

/* A batch whose null slots hold garbage (random bytes, non-empty strings),
 * built by hand since the builder writes zeros under nulls. Columns: i64,
 * f64, s (utf8), b (bool), d (decimal128(10, 2)), c (int64 that is 7
 * wherever it is not null). */
#define GCOLS 6
struct gbatch {
    struct ArrowArray kids[GCOLS];
    struct ArrowArray *kp[GCOLS];
    const void *bufs[GCOLS][3];
    const void *root_bufs[1];
};

/* Children and borrowed views: their memory is someone else's. */
static void borrowed_release(struct ArrowArray *a) { a->release = NULL; }

static void gbatch_release(struct ArrowArray *a) {
    struct gbatch *g = a->private_data;
    for (int c = 0; c < GCOLS; c++)
        for (int b = 0; b < 3; b++) free((void *)g->bufs[c][b]);
    free(g);
    a->release = NULL;
}

static const struct qv_field gfields[GCOLS] = {
    {.name = "i64", .type = QV_TYPE_INT64, .nullable = true},
    {.name = "f64", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "d", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 10, .scale = 2},
    {.name = "c", .type = QV_TYPE_INT64, .nullable = true},
};
static const struct qv_field groot = {.name = "", .type = QV_TYPE_STRUCT, .n_children = GCOLS,
                                      .children = (struct qv_field *)gfields};

static void gbatch_make(int64_t n, double null_p, uint64_t seed, struct ArrowArray *out) {
    struct gbatch *g = calloc(1, sizeof *g);
    for (int c = 0; c < GCOLS; c++) {
        int64_t nulls;
        uint8_t *valid = make_validity(n, null_p, &seed, &nulls);
        struct ArrowArray *k = &g->kids[c];
        g->kp[c] = k;
        g->bufs[c][0] = valid;
        k->length = n;
        k->null_count = nulls;
        k->n_buffers = gfields[c].type == QV_TYPE_UTF8 ? 3 : 2;
        k->buffers = g->bufs[c];
        k->release = borrowed_release; /* the parent frees the buffers */
        if (gfields[c].type == QV_TYPE_UTF8) {
            int32_t *off = malloc((size_t)(n + 1) * 4);
            char *data = malloc((size_t)n * 10 + 1);
            int32_t at = 0;
            for (int64_t i = 0; i < n; i++) {
                off[i] = at;
                int len = (int)(next(&seed) % 10);
                for (int j = 0; j < len; j++) data[at++] = (char)('a' + next(&seed) % 26);
            }
            off[n] = at;
            g->bufs[c][1] = off;
            g->bufs[c][2] = data;
        } else if (gfields[c].type == QV_TYPE_BOOL) {
            uint8_t *bits = malloc((size_t)(n + 7) / 8 + 1);
            for (int64_t b = 0; b < (n + 7) / 8; b++) bits[b] = (uint8_t)next(&seed);
            g->bufs[c][1] = bits;
        } else if (gfields[c].type == QV_TYPE_DECIMAL128) {
            int64_t *v = malloc((size_t)n * 16 + 1);
            for (int64_t i = 0; i < n; i++) {
                int valid_i = qv_bit_get(valid, i);
                int64_t x = (int64_t)(next(&seed) % 2000000) - 1000000;
                v[2 * i] = valid_i ? x : (int64_t)next(&seed);
                v[2 * i + 1] = valid_i ? (x < 0 ? -1 : 0) : (int64_t)next(&seed);
            }
            g->bufs[c][1] = v;
        } else {
            uint64_t *v = malloc((size_t)n * 8 + 1);
            for (int64_t i = 0; i < n; i++) {
                if (!qv_bit_get(valid, i)) v[i] = next(&seed);
                else if (c == 0) v[i] = (uint64_t)((int64_t)(next(&seed) % 2001) - 1000);
                else if (c == 1) {
                    double d = (double)(next(&seed) % 100000) / 100.0;
                    memcpy(&v[i], &d, 8);
                } else v[i] = 7;
            }
            g->bufs[c][1] = v;
        }
    }
    memset(out, 0, sizeof *out);
    out->length = n;
    out->n_buffers = 1;
    out->buffers = g->root_bufs;
    out->n_children = GCOLS;
    out->children = g->kp;
    out->private_data = g;
    out->release = gbatch_release;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/* Garbage under 95% nulls: the fill makes the file several times smaller,
 * and the rows read back the same. */
static void test_garbage_under_nulls_costs_little(void **state) {
    struct env *e = *state;
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&groot, e->r, &s, NULL), 0);
    char path[512];
    tu_path(path, sizeof path, "nulls_garbage.qvr");
    const int64_t n = 200000;
    struct ArrowArray batch, owned;
    gbatch_make(n, 0.95, 77, &batch);
    /* Owned batches are encoded where they are, garbage included. */
    gbatch_make(n, 0.95, 77, &owned);
    write_file(e, path, s, &owned, 1, 0, QV__FILL_KEEP, QV_ENC_AUTO, 1);
    check_file(e, path, s, &batch);
    uint64_t kept = file_size(path);
    gbatch_make(n, 0.95, 77, &owned);
    write_file(e, path, s, &owned, 1, 0, QV__FILL_AUTO, QV_ENC_AUTO, 1);
    check_file(e, path, s, &batch);
    uint64_t filled = file_size(path);
    print_message("95%% null, garbage under nulls: %llu bytes kept, %llu filled\n",
                  (unsigned long long)kept, (unsigned long long)filled);
    /* Six columns of mostly random bytes against their 5% of real values. */
    assert_true(filled * 5 < kept);
    batch.release(&batch);
    unlink(path);
    qv_schema_destroy(s);
}

static int64_t count_rows(struct env *e, const char *path, const char *filter) {
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    struct qv_scan_options so = {.filter = filter, .threads = QV_SCAN_SYNC};
    struct ArrowArrayStream st;
    int rc = qv_scan_open(rd, &so, e->r, &st, &err);
    if (rc) fail_msg("scan: %s", err.message);
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc) fail_msg("get_next: %s", st.get_last_error(&st));
        if (!b.release) break;
        rows += b.length;
        b.release(&b);
    }
    st.release(&st);
    qv_reader_close(rd);
    return rows;
}

/* Column c is 7 wherever it is not null: filled, it encodes as a constant
 * (forcing constant works; with the garbage kept it cannot), and filters on
 * it still see its nulls as null, on the encoded-domain path too. */
static void test_constant_with_nulls(void **state) {
    struct env *e = *state;
    static const struct qv_field one = {.name = "c", .type = QV_TYPE_INT64, .nullable = true};
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 1,
                                         .children = (struct qv_field *)&one};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&root, e->r, &s, NULL), 0);
    char path[512];
    tu_path(path, sizeof path, "nulls_constant.qvr");
    const int64_t n = 5000;
    struct ArrowArray full;
    gbatch_make(n, 0.6, 5, &full);
    /* A one-column batch over column c of the garbage batch (borrowed). */
    struct ArrowArray *kid = full.children[5];
    struct ArrowArray batch = full;
    batch.n_children = 1;
    batch.children = &kid;
    batch.release = borrowed_release;
    int64_t nulls = kid->null_count;

    write_file(e, path, s, &batch, 1, 2048, QV__FILL_AUTO, QV_ENC_CONSTANT, 0);
    check_file(e, path, s, &batch);
    assert_int_equal(count_rows(e, path, "c = 7"), n - nulls);
    assert_int_equal(count_rows(e, path, "c != 7"), 0);
    assert_int_equal(count_rows(e, path, "c IS NULL"), nulls);
    assert_int_equal(count_rows(e, path, "c < 100"), n - nulls);
    /* Chosen by the cascade: the same answers. */
    write_file(e, path, s, &batch, 1, 2048, QV__FILL_AUTO, QV_ENC_AUTO, 0);
    check_file(e, path, s, &batch);
    assert_int_equal(count_rows(e, path, "c = 7"), n - nulls);
    assert_int_equal(count_rows(e, path, "c IS NOT NULL"), n - nulls);

    /* The producer's garbage kept: constant cannot hold it. */
    struct qv_writer *w;
    struct qv_error err;
    struct qv_writer_options o = {.row_group_rows = 2048};
    assert_int_equal(qv_writer_open(path, s, &o, e->r, &w, &err), 0);
    qv_writer_force_null_fill(w, QV__FILL_KEEP);
    qv_writer_force_encoding(w, QV_ENC_CONSTANT);
    int rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    assert_int_equal(rc, EINVAL);
    qv_writer_close(w);
    full.release(&full);
    unlink(path);
    qv_schema_destroy(s);
}

/* The same rows make the same file whether they come as one owned batch
 * (encoded in place, garbage under the nulls) or as slices copied through
 * the writer's builder (zeros under the nulls), at several row-group
 * sizes: the fill depends on the non-null values alone. */
static void test_same_bytes_any_batching(void **state) {
    struct env *e = *state;
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&groot, e->r, &s, NULL), 0);
    char a[512], b[512];
    tu_path(a, sizeof a, "nulls_whole.qvr");
    tu_path(b, sizeof b, "nulls_sliced.qvr");
    const int64_t n = 9000;
    static const int64_t rgs[] = {0, 1000, 4096};
    uint64_t seed = 21;
    for (size_t g = 0; g < 3; g++) {
        struct ArrowArray whole, ref;
        gbatch_make(n, 0.4, 31, &whole);
        gbatch_make(n, 0.4, 31, &ref);
        /* Slices of random sizes, copied by the writer. */
        struct qv_writer *w;
        struct qv_error err;
        struct qv_writer_options o = {.row_group_rows = rgs[g]};
        assert_int_equal(qv_writer_open(b, s, &o, e->r, &w, &err), 0);
        for (int64_t at = 0; at < n;) {
            int64_t len = 1 + (int64_t)(next(&seed) % 1500);
            if (len > n - at) len = n - at;
            struct ArrowArray kids[GCOLS], *kp[GCOLS], view = ref;
            for (int c = 0; c < GCOLS; c++) {
                kids[c] = *ref.children[c];
                kids[c].offset = at;
                kids[c].length = len;
                kids[c].null_count = -1;
                kp[c] = &kids[c];
            }
            view.length = len;
            view.children = kp;
            view.release = borrowed_release;
            if (qv_writer_write(w, &view, &err)) fail_msg("write: %s", err.message);
            at += len;
        }
        assert_int_equal(qv_writer_finish(w, &err), 0);
        qv_writer_close(w);
        /* The whole batch, owned: encoded where it is. */
        write_file(e, a, s, &whole, 1, rgs[g], QV__FILL_AUTO, QV_ENC_AUTO, 1);
        check_file(e, a, s, &ref);
        size_t sa, sb;
        unsigned char *fa = tu_read_file(a, &sa), *fb = tu_read_file(b, &sb);
        assert_non_null(fa);
        assert_non_null(fb);
        assert_int_equal(sa, sb);
        assert_memory_equal(fa, fb, sa);
        free(fa);
        free(fb);
        ref.release(&ref);
    }
    unlink(a);
    unlink(b);
    qv_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fill_fixed_widths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_auto_choice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_auto_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_bool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_binary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_binary_already_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_allocation_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_types_every_fill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_under_nulls_costs_little, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constant_with_nulls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes_any_batching, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
