/* The encoder's zstd compression context comes from the encoder's arena
 * (general.c, zstd_mem.c), so it is charged to the caller's reservation:
 *  - allocation failure injected at every allocation of encodes that use
 *    zstd (the cascade's trial on strings, zstd frames, the entropy stage's
 *    trials and frames, compact mode's wrap): each step is ENOMEM and
 *    leaves nothing charged; some step fails in the context itself, which
 *    says so; the encode that succeeds gives the unlimited encode's bytes;
 *  - a writer (inline, then with encoding threads) under a memory_limit
 *    found by bisection: just below it the write fails with ENOMEM naming
 *    the pool and publishes nothing, at it the file is byte for byte the
 *    unlimited one; the pool's accounting is back to zero once the writer
 *    and its reservation are gone. The inline writer's limit is exact
 *    because its peak does not depend on timing: it encodes the columns in
 *    file order even when one of them was slow in the row group before
 *    (writer_parallel.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_testing.h"
#include "mem_sink.h"
#include "memory/memory_testing.h"
#include "quiver/arrow.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"

#define NSTR 3000
#define NINT 20000

/* Strings the cascade stores in zstd frames: distinct (a number first),
 * each a slice of one of a few random "paragraphs", so they repeat at
 * distances FSST's symbols do not reach. */
struct strings {
    int64_t off[NSTR + 1];
    uint8_t *data;
};

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return *s >> 33;
}

static void make_strings(struct strings *s) {
    static uint8_t para[8][512];
    uint64_t x = 12345;
    for (int p = 0; p < 8; p++)
        for (int k = 0; k < 512; k++) para[p][k] = (uint8_t)('a' + next(&x) % 26);
    size_t total = 0;
    for (int64_t i = 0; i < NSTR; i++) total += 100 + (size_t)(i % 53);
    s->data = malloc(total);
    s->off[0] = 0;
    for (int64_t i = 0; i < NSTR; i++) {
        size_t len = 100 + (size_t)(i % 53);
        const uint8_t *src = para[next(&x) % 8] + next(&x) % (512 - 160);
        uint8_t *dst = s->data + s->off[i];
        memcpy(dst, src, len);
        int n = snprintf((char *)dst, 12, "%lld:", (long long)i);
        dst[n] = ':';
        s->off[i + 1] = s->off[i] + (int64_t)len;
    }
}

/* An hour cycle: the cascade's entropy stage (trial compressions, then
 * zstd frames over the packed values). */
static int32_t hours[NINT];
static void make_hours(void) {
    for (int i = 0; i < NINT; i++) hours[i] = i % 24;
}

struct pool_res {
    struct qv_pool *pool;
    struct qv_reservation *r;
};

static void open_pool(struct pool_res *p, const char *name, uint64_t limit) {
    struct qv_pool_options po = {.name = name, .limit = limit};
    assert_int_equal(qv_pool_create(&po, &p->pool, NULL), 0);
    struct qv_reservation_options ro = {.name = "test"};
    assert_int_equal(qv_reservation_create(p->pool, &ro, &p->r, NULL), 0);
}

static void close_pool(struct pool_res *p) {
    assert_int_equal(qv_reservation_used(p->r), 0);
    qv_reservation_destroy(p->r);
    assert_int_equal(qv_pool_used(p->pool), 0);
    qv_pool_destroy(p->pool);
}

/* The encoding tree of an encoded chunk, as qv_enc_describe renders it. */
static void describe(const struct qv_encoded *e, char *buf, size_t cap) {
    struct qv_error err;
    int rc = qv_enc_describe(e->data, e->size, NULL, buf, cap, &err);
    assert_true(rc == 0 || rc == EOVERFLOW);
}

/* Encodes `v` with the Nth allocation failing, N = 1, 2, ... until it
 * succeeds; returns how many steps failed in zstd's context. `want` is the
 * unlimited encode's bytes. */
static int encode_faults(const struct qv_values *v, const struct qv_encode_options *o,
                         const struct qv_encoded *want) {
    struct pool_res p;
    open_pool(&p, "zstd faults", 0);
    int in_ctx = 0, failures = 0;
    for (uint64_t n = 1;; n++) {
        qv_pool_inject_alloc_failure(p.pool, n);
        struct qv_encoded got;
        struct qv_error err = {0};
        int rc = qv_encode(v, o, p.r, &got, &err);
        qv_pool_inject_alloc_failure(p.pool, 0);
        if (!rc) {
            assert_int_equal(got.size, want->size);
            assert_memory_equal(got.data, want->data, want->size);
            qv_encoded_release(p.r, &got);
            break;
        }
        if (rc != ENOMEM) fail_msg("step %llu: %d %s", (unsigned long long)n, rc, err.message);
        assert_null(got.data);
        assert_int_equal(qv_reservation_used(p.r), 0);
        if (strstr(err.message, "zstd: compression context")) {
            /* The pool's own message follows. */
            assert_non_null(strstr(err.message, "injected failure"));
            in_ctx++;
        }
        failures++;
        assert_true(n < 100000);
    }
    assert_true(failures > 3);
    close_pool(&p);
    return in_ctx;
}

static void encode_plain(const struct qv_values *v, const struct qv_encode_options *o,
                         struct pool_res *p, struct qv_encoded *out, const char *must_hold) {
    struct qv_error err;
    assert_int_equal(qv_encode(v, o, p->r, out, &err), 0);
    char desc[4096];
    describe(out, desc, sizeof desc);
    if (!strstr(desc, must_hold)) fail_msg("expected %s in %s", must_hold, desc);
}

static void test_encode_faults_strings(void **state) {
    (void)state;
    struct strings *s = malloc(sizeof *s);
    make_strings(s);
    struct qv_values v = {.kind = QV_KIND_LARGE_BINARY, .count = NSTR, .values = s->off,
                          .data = s->data};
    struct pool_res p;
    open_pool(&p, "unlimited", 0);
    /* The cascade's choice, after its zstd trial on four samples. */
    struct qv_encoded want;
    encode_plain(&v, NULL, &p, &want, "zstd");
    assert_true(encode_faults(&v, NULL, &want) > 0);
    qv_encoded_release(p.r, &want);
    /* Compact mode (level 3): the whole tree wrapped, lz4 and zstd tried. */
    struct qv_encode_options compact = {.compact = 1};
    encode_plain(&v, &compact, &p, &want, "zstd");
    assert_true(encode_faults(&v, &compact, &want) > 0);
    qv_encoded_release(p.r, &want);
    close_pool(&p);
    free(s->data);
    free(s);
}

static void test_encode_faults_entropy(void **state) {
    (void)state;
    make_hours();
    struct qv_values v = {.kind = QV_KIND_INT32, .count = NINT, .values = hours};
    struct pool_res p;
    open_pool(&p, "unlimited", 0);
    struct qv_encoded want;
    encode_plain(&v, NULL, &p, &want, "zstd");
    assert_true(encode_faults(&v, NULL, &want) > 0);
    qv_encoded_release(p.r, &want);
    close_pool(&p);
}

/* Not zstd, the same rule for patched (small values with a few outliers:
 * patched wins): every failure is ENOMEM and the encode that succeeds has
 * the unlimited bytes. (Its estimate's scratch fails the encode too when
 * it cannot be had, but here the scratch stack already holds room for it,
 * so injection does not reach that branch.) */
static void test_encode_faults_patched(void **state) {
    (void)state;
    static int64_t v64[NINT];
    uint64_t x = 7;
    for (int i = 0; i < NINT; i++)
        v64[i] = (int64_t)(next(&x) % 1000) + (i % 97 == 5 ? INT64_C(1) << 40 : 0);
    struct qv_values v = {.kind = QV_KIND_INT64, .count = NINT, .values = v64};
    struct pool_res p;
    open_pool(&p, "unlimited", 0);
    struct qv_encoded want;
    encode_plain(&v, NULL, &p, &want, "patched");
    encode_faults(&v, NULL, &want);
    qv_encoded_release(p.r, &want);
    close_pool(&p);
}

/* qv_encode in a pool of its own with `limit`: the result, and on
 * success the bytes equal `want`. */
static int encode_limited(const struct qv_values *v, const struct qv_encode_options *o,
                          uint64_t limit, const struct qv_encoded *want, struct qv_error *err) {
    struct pool_res p;
    open_pool(&p, "limited encode", limit);
    struct qv_encoded got;
    int rc = qv_encode(v, o, p.r, &got, err);
    if (!rc) {
        assert_int_equal(got.size, want->size);
        assert_memory_equal(got.data, want->data, want->size);
        qv_encoded_release(p.r, &got);
    } else {
        assert_null(got.data);
    }
    close_pool(&p);
    return rc;
}

/* The smallest limit qv_encode succeeds under, by bisection; just below
 * it the encode is ENOMEM naming the pool, at it the bytes are the
 * unlimited encode's. */
static void encode_boundary(const struct qv_values *v, const struct qv_encode_options *o,
                           const char *what) {
    struct pool_res p;
    open_pool(&p, "unlimited", 0);
    struct qv_encoded want;
    encode_plain(v, o, &p, &want, "zstd");
    struct qv_error err;
    uint64_t lo = 1024, hi = 256u << 20;
    assert_int_not_equal(encode_limited(v, o, lo, &want, &err), 0);
    assert_int_equal(encode_limited(v, o, hi, &want, &err), 0);
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (encode_limited(v, o, mid, &want, &err)) lo = mid;
        else hi = mid;
    }
    int rc = encode_limited(v, o, hi - 1, &want, &err);
    if (rc != ENOMEM) fail_msg("limit %llu: %d %s", (unsigned long long)(hi - 1), rc, err.message);
    assert_non_null(strstr(err.message, "pool 'limited encode'"));
    print_message("%s: encode fails at %llu bytes: %s\n", what, (unsigned long long)(hi - 1),
                  err.message);
    assert_int_equal(encode_limited(v, o, hi, &want, &err), 0);
    qv_encoded_release(p.r, &want);
    close_pool(&p);
}

static void test_encode_limit(void **state) {
    (void)state;
    struct strings *s = malloc(sizeof *s);
    make_strings(s);
    struct qv_values v = {.kind = QV_KIND_LARGE_BINARY, .count = NSTR, .values = s->off,
                          .data = s->data};
    encode_boundary(&v, NULL, "strings");
    struct qv_encode_options zo = {.allowed = QV_ENC_BIT(QV_ENC_ZSTD)};
    encode_boundary(&v, &zo, "strings, zstd only");
    struct qv_encode_options co = {.allowed = QV_ENC_BIT(QV_ENC_ZSTD), .compact = 1};
    encode_boundary(&v, &co, "strings, zstd only, compact");
    make_hours();
    struct qv_values h = {.kind = QV_KIND_INT32, .count = NINT, .values = hours};
    encode_boundary(&h, NULL, "hours");
    free(s->data);
    free(s);
}

/* ---- A writer under a memory limit ---- */

static const struct qv_field cols[] = {
    {.name = "text", .type = QV_TYPE_LARGE_UTF8},
    {.name = "hour", .type = QV_TYPE_INT32},
};
static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                     .children = cols};

struct table {
    struct pool_res p;
    struct qv_schema *schema;
    struct ArrowArray batch;
    struct strings *s;
};

static void make_table(struct table *t) {
    open_pool(&t->p, "table", 0);
    assert_int_equal(qv_schema_create(&root, t->p.r, &t->schema, NULL), 0);
    t->s = malloc(sizeof *t->s);
    make_strings(t->s);
    make_hours();
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(t->schema, t->p.r, NULL, &b, NULL), 0);
    for (int64_t i = 0; i < NSTR; i++)
        assert_int_equal(qv_append_binary(qv_builder_column(b, 0), t->s->data + t->s->off[i],
                                          (size_t)(t->s->off[i + 1] - t->s->off[i])),
                         0);
    for (int64_t i = 0; i < NSTR; i++)
        assert_int_equal(qv_append_int32(qv_builder_column(b, 1), hours[i]), 0);
    struct qv_error err;
    assert_int_equal(qv_builder_finish(b, &t->batch, &err), 0);
    qv_builder_destroy(b);
}

static void free_table(struct table *t) {
    t->batch.release(&t->batch);
    qv_schema_destroy(t->schema);
    close_pool(&t->p);
    free(t->s->data);
    free(t->s);
}

/* The encode hook of write_limited: with slow_hour set, the 'hour' column
 * of row group 0 takes 50 ms more (a preemption, as on a loaded machine),
 * so it looks like the slow column to anything that times columns. */
static int slow_hour;
static int hook(void *ctx, int64_t row_group, int32_t column) {
    (void)ctx;
    if (slow_hour && row_group == 0 && column == 1) usleep(50000);
    return 0;
}

/* Writes the table in a pool of its own with `limit` (0: none) into m;
 * returns the writer's result. Checks what must hold either way: nothing
 * published on failure, the pool's accounting back to zero. */
static int write_limited(const struct table *t, uint64_t limit, int threads, struct memsink *m,
                         struct qv_error *err) {
    struct qv_pool *pool;
    struct qv_pool_options po = {.name = "limited writer", .limit = limit};
    assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
    struct qv_reservation *r;
    struct qv_reservation_options ro = {.name = "writer"};
    int rc = qv_reservation_create(pool, &ro, &r, err);
    if (!rc) {
        struct qv_sink sink = memsink_open(m, 0);
        struct qv_writer *w = NULL;
        /* Two row groups: the second encodes after the first's context is
         * gone. */
        struct qv_writer_options o = {.row_group_rows = NSTR / 2};
        if (threads) o.threads = threads;
        else o.max_in_flight = QV_WRITER_INLINE;
        rc = qv_writer_open_sink(&sink, t->schema, &o, r, &w, err);
        if (!rc) qv_writer_set_encode_hook(w, hook, NULL);
        if (!rc) rc = qv_writer_write(w, &t->batch, err);
        if (!rc) rc = qv_writer_finish(w, err);
        qv_writer_close(w);
        if (rc) {
            assert_false(m->finished);
        } else {
            assert_true(m->finished);
        }
        assert_int_equal(qv_reservation_used(r), 0);
        qv_reservation_destroy(r);
    }
    assert_int_equal(qv_pool_used(pool), 0);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    return rc;
}

/* The smallest limit the write succeeds under (the write at limit - 1
 * fails), found by bisection between a limit that fails and one that
 * succeeds. */
static void limit_boundary(int threads) {
    struct table t;
    make_table(&t);
    struct memsink want = {0}, got = {0};
    struct qv_error err;
    assert_int_equal(write_limited(&t, 0, threads, &want, &err), 0);
    uint64_t lo = 4096, hi = 64u << 20; /* fails at lo, succeeds at hi */
    assert_int_not_equal(write_limited(&t, lo, threads, &got, &err), 0);
    assert_int_equal(write_limited(&t, hi, threads, &got, &err), 0);
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (write_limited(&t, mid, threads, &got, &err)) lo = mid;
        else hi = mid;
    }
    /* Just below: ENOMEM naming the pool, nothing published. */
    int rc = write_limited(&t, hi - 1, threads, &got, &err);
    if (rc != ENOMEM) fail_msg("limit %llu: %d %s", (unsigned long long)(hi - 1), rc, err.message);
    assert_non_null(strstr(err.message, "pool 'limited writer'"));
    print_message("threads %d: fails at %llu bytes: %s\n", threads, (unsigned long long)(hi - 1),
                  err.message);
    /* At the boundary: the unlimited write's bytes. */
    assert_int_equal(write_limited(&t, hi, threads, &got, &err), 0);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.p, want.p, want.len);
    if (!threads) {
        /* The same boundary when 'hour' was slow in row group 0. The inline
         * writer used to order row group 1's columns by the time each took
         * in row group 0, so 'hour' was encoded first and its output (2112
         * bytes) still held when 'text' made its largest grow: the write
         * failed at this limit whenever the machine preempted the writer
         * in 'hour' (2 to 15 runs in 60 with two copies of this test at
         * once). */
        slow_hour = 1;
        rc = write_limited(&t, hi, threads, &got, &err);
        if (rc) fail_msg("limit %llu, slow 'hour': %d %s", (unsigned long long)hi, rc, err.message);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.p, want.p, want.len);
        assert_int_equal(write_limited(&t, hi - 1, threads, &got, &err), ENOMEM);
        slow_hour = 0;
    }
    free(want.p);
    free(got.p);
    free_table(&t);
}

static void test_writer_limit_inline(void **state) {
    (void)state;
    limit_boundary(0);
}

/* With encoding threads the pool's peak depends on timing; what holds is
 * the rule: either ENOMEM with nothing published, or the same bytes. */
static void test_writer_limit_threads(void **state) {
    (void)state;
    struct table t;
    make_table(&t);
    struct memsink want = {0}, got = {0};
    struct qv_error err;
    assert_int_equal(write_limited(&t, 0, 2, &want, &err), 0);
    int ok = 0, failed = 0;
    for (uint64_t limit = 2u << 20; limit <= (40u << 20); limit += 1u << 20) {
        int rc = write_limited(&t, limit, 2, &got, &err);
        if (rc) {
            if (rc != ENOMEM)
                fail_msg("limit %llu: %d %s", (unsigned long long)limit, rc, err.message);
            failed++;
        } else {
            assert_int_equal(got.len, want.len);
            assert_memory_equal(got.p, want.p, want.len);
            ok++;
        }
    }
    assert_true(ok > 0);
    assert_true(failed > 0);
    free(want.p);
    free(got.p);
    free_table(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_faults_strings),
        cmocka_unit_test(test_encode_faults_entropy),
        cmocka_unit_test(test_encode_faults_patched),
        cmocka_unit_test(test_encode_limit),
        cmocka_unit_test(test_writer_limit_inline),
        cmocka_unit_test(test_writer_limit_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
