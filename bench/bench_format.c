/*
 * bench/run format [--quick] [--json FILE] [--sf X] [--reps N] [--no-tpch] [--no-gen]
 *                  [--write-threads 0,1,2] [--write-only]
 *
 * The .qvr format on TPC-H lineitem:
 *  - data sets: real TPC-H SF1 (tpchgen-cli's CSV, data/tpch/lineitem.csv,
 *    generated when missing) and the built-in generator's SF1; --quick: the
 *    built-in generator at SF 0.1 only. Each is loaded into memory as Arrow
 *    batches of 131072 rows before anything is timed;
 *  - per writer mode (default, compact): file size; write MB/s of Arrow input
 *    timing only qv_writer_write + qv_writer_finish into an in-memory sink
 *    (wall and per CPU-second of the writing thread; one more write to the
 *    real file, fsync included, is reported as a single value); full decode
 *    MB/s of Arrow output (qv_reader_read_row_group over every row group,
 *    one thread, checksums verified, and once more without them);
 *  - per column: the encoding tree chosen (its shape, and in how many row
 *    groups), encoded size and ratio, next to zstd -1 and lz4 over the same
 *    column's raw Arrow buffers (each buffer of each 131072-row batch
 *    compressed on its own, the way a format would);
 *  - bit-unpacking kernels in cache (qv__unpack32/64, the kernels
 *    bench_encoding measures) and qv_decoder_decode_range on a bit-packed
 *    int32 / int64 column held in cache.
 * Targets printed at the end: total <= 120 MB (stretch <= 95 MB) at SF1,
 * write >= 500 MB/s and decode >= 2 GB/s per core, unpacking >= 10 G
 * values/s. min / median / max over repeats go to the JSON records.
 *
 * With --write-threads LIST: write time by number of encoding threads (0:
 * QV_WRITER_INLINE) per data set, min and median, files checked identical;
 * --write-only measures only that (default list 0,1,2).
 *
 * Side effect: the default-mode file of the real data is kept as
 * data/bench/lineitem-tpch-sf1.qvr, which bench_scan reuses.
 */
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "bench_common.h"
#include "bench_tpch.h"
#include "encoding/enc_internal.h"
#include "quiver/arrow.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"

static struct qv_pool *pool;
static struct qv_reservation *res; /* the tables' memory */
static int reps = 3;

#define MB 1e6

/* ================= kernels ================= */

static uint64_t rs = 42;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

struct kernel_result {
    double unpack32_mean, unpack32_min, unpack64_mean, api32, api64;
    double unpack32_best, unpack64_best, api32_best, api64_best; /* best repeat */
};

static double best_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

/* Decodes a bit-packed column of n values (width w, kind) held in cache
 * through the public decoder, many times; G values/s samples. */
static double bench_decode_api(struct qv_bench *b, enum qv_value_kind kind, unsigned w, int64_t n,
                               int iters, const char *case_name, double *best) {
    struct qv_error err;
    size_t width = kind == QV_KIND_INT32 ? 4 : 8;
    uint8_t *vals = qv_aligned_alloc((size_t)n * width);
    uint8_t *out = qv_aligned_alloc((size_t)n * width);
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = rnd() & qv__mask(w);
        if (width == 4) ((uint32_t *)vals)[i] = (uint32_t)v;
        else ((uint64_t *)vals)[i] = v;
    }
    struct qv_values in = {.kind = kind, .count = n, .values = vals};
    struct qv_encode_options eo = {.force = QV_ENC_BITPACK};
    struct qv_encoded enc;
    if (qv_encode(&in, &eo, res, &enc, &err)) bt_die("encode bitpack", &err);
    struct qv_decoder *d;
    if (qv_decoder_open(enc.data, enc.size, kind, 0, n, res, &d, &err)) bt_die("decoder open", &err);
    double s[16];
    for (int r = 0; r < reps; r++) {
        double t0 = bt_thread_cpu_s();
        for (int i = 0; i < iters; i++) {
            struct qv_decode_out o = {.values = out};
            if (qv_decoder_decode_range(d, 0, n, &o, &err)) bt_die("decode_range", &err);
            qv_bench_sink(out);
        }
        s[r] = (double)iters * (double)n / (bt_thread_cpu_s() - t0) / 1e9;
    }
    if (memcmp(vals, out, (size_t)n * width) != 0) bt_die("decode_range: values differ", NULL);
    qv_decoder_close(d);
    qv_encoded_release(res, &enc);
    qv_aligned_free(vals);
    qv_aligned_free(out);
    *best = best_of(s, reps);
    return qv_bench_record_samples(b, case_name, "decode_range", "gvalues_per_s", s, reps, "Gv/s");
}

static struct kernel_result bench_kernels(struct qv_bench *b) {
    struct kernel_result kr = {0};
    const int iters = qv_bench_quick(b) ? 20000 : 100000;
    uint64_t in[QV__VEC];
    uint8_t *packed = qv_aligned_alloc(128 * 64 + 64);
    uint32_t *o32 = qv_aligned_alloc(QV__VEC * 4);
    uint64_t *o64 = qv_aligned_alloc(QV__VEC * 8);
    uint32_t tmp[QV__VEC];
    printf("\n== Bit-unpacking kernels, one 1024-value vector in L1 (G values per CPU-second, median of %d) ==\n",
           reps);
    printf("%6s %10s %10s\n", "width", "->u32", "->u64");
    double sum32 = 0, sum64 = 0, min32 = 1e30, best32 = 0, best64 = 0;
    for (unsigned w = 1; w <= 32; w++) {
        for (int i = 0; i < QV__VEC; i++) in[i] = rnd() & qv__mask(w);
        qv__pack_vec(in, QV__VEC, w, packed, tmp);
        double s32[16], s64[16];
        for (int r = 0; r < reps; r++) {
            /* CPU time of this thread: on a shared machine, wall time would
             * count the slices other processes took. */
            double t0 = bt_thread_cpu_s();
            for (int i = 0; i < iters; i++) {
                qv__unpack32((const uint32_t *)(void *)packed, w, o32, (uint32_t)i);
                qv_bench_sink(o32);
            }
            double t1 = bt_thread_cpu_s();
            for (int i = 0; i < iters; i++) {
                qv__unpack64(packed, w, o64, (uint64_t)i);
                qv_bench_sink(o64);
            }
            double t2 = bt_thread_cpu_s();
            s32[r] = (double)iters * QV__VEC / (t1 - t0) / 1e9;
            s64[r] = (double)iters * QV__VEC / (t2 - t1) / 1e9;
        }
        for (int i = 0; i < QV__VEC; i++)
            if (o32[i] != (uint32_t)(in[i] + (uint32_t)(iters - 1))) bt_die("unpack32: wrong values", NULL);
        char cs[32];
        snprintf(cs, sizeof cs, "unpack/w%u", w);
        double a = qv_bench_record_samples(b, cs, "u32", "gvalues_per_s", s32, reps, "Gv/s");
        double c = qv_bench_record_samples(b, cs, "u64", "gvalues_per_s", s64, reps, "Gv/s");
        sum32 += a;
        sum64 += c;
        best32 += best_of(s32, reps);
        best64 += best_of(s64, reps);
        if (a < min32) min32 = a;
        if (w <= 3 || w % 4 == 0 || w == 17 || w == 31) printf("%6u %10.2f %10.2f\n", w, a, c);
    }
    kr.unpack32_mean = sum32 / 32;
    kr.unpack32_min = min32;
    kr.unpack64_mean = sum64 / 32;
    kr.unpack32_best = best32 / 32;
    kr.unpack64_best = best64 / 32;
    printf("%6s %10.2f %10.2f   (mean over widths 1..32 of the medians; of the best repeats: %.2f, %.2f;\n"
           "%6s %10s %10s    slowest ->u32 width %.2f)\n", "mean", kr.unpack32_mean, kr.unpack64_mean,
           kr.unpack32_best, kr.unpack64_best, "", "", "", min32);
    qv_bench_record(b, "unpack/w1-32", "u32", "gvalues_per_s", "value", kr.unpack32_mean, "Gv/s");
    qv_bench_record(b, "unpack/w1-32", "u32_slowest", "gvalues_per_s", "value", min32, "Gv/s");
    qv_bench_record(b, "unpack/w1-32", "u64", "gvalues_per_s", "value", kr.unpack64_mean, "Gv/s");
    qv_aligned_free(packed);
    qv_aligned_free(o32);
    qv_aligned_free(o64);

    int api_iters = qv_bench_quick(b) ? 2000 : 10000;
    kr.api32 = bench_decode_api(b, QV_KIND_INT32, 12, 16384, api_iters, "decode_range/int32_w12_16Ki",
                                &kr.api32_best);
    kr.api64 = bench_decode_api(b, QV_KIND_INT64, 20, 16384, api_iters, "decode_range/int64_w20_16Ki",
                                &kr.api64_best);
    printf("qv_decoder_decode_range, bit-packed column of 16384 values in cache: int32 w=12 %.2f G values/s "
           "(best %.2f), int64 w=20 %.2f G values/s (best %.2f)\n", kr.api32, kr.api32_best, kr.api64, kr.api64_best);
    return kr;
}

/* ================= reference codecs ================= */

struct ref_ctx {
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    uint8_t *comp, *back;
    size_t cap;
    uint64_t raw[64], zstd[64], lz4[64];
    double zc_s, zd_s, lc_s, ld_s;
};

static void ref_buf(void *ctx, int column, const void *p, size_t n) {
    struct ref_ctx *rc = ctx;
    if (n > rc->cap) bt_die("reference codec: buffer larger than scratch", NULL);
    rc->raw[column] += n;
    double t0 = qv_bench_now_s();
    size_t zl = ZSTD_compressCCtx(rc->zc, rc->comp, ZSTD_compressBound(rc->cap), p, n, 1);
    double t1 = qv_bench_now_s();
    if (ZSTD_isError(zl)) bt_die("zstd compress", NULL);
    size_t dl = ZSTD_decompressDCtx(rc->zd, rc->back, rc->cap, rc->comp, zl);
    double t2 = qv_bench_now_s();
    if (ZSTD_isError(dl) || dl != n) bt_die("zstd decompress", NULL);
    int ll = LZ4_compress_default(p, (char *)rc->comp, (int)n, LZ4_compressBound((int)rc->cap));
    double t3 = qv_bench_now_s();
    if (ll <= 0) bt_die("lz4 compress", NULL);
    int l2 = LZ4_decompress_safe((const char *)rc->comp, (char *)rc->back, ll, (int)rc->cap);
    double t4 = qv_bench_now_s();
    if (l2 != (int)n) bt_die("lz4 decompress", NULL);
    rc->zstd[column] += zl;
    rc->lz4[column] += (uint64_t)ll;
    rc->zc_s += t1 - t0;
    rc->zd_s += t2 - t1;
    rc->lc_s += t3 - t2;
    rc->ld_s += t4 - t3;
}

struct ref_result {
    uint64_t raw[64], zstd[64], lz4[64], raw_total, zstd_total, lz4_total;
};

static struct ref_result bench_reference(struct qv_bench *b, const struct bt_table *t) {
    struct ref_ctx *rc = calloc(1, sizeof *rc);
    rc->zc = ZSTD_createCCtx();
    rc->zd = ZSTD_createDCtx();
    rc->cap = 64u << 20;
    rc->comp = malloc(ZSTD_compressBound(rc->cap) + LZ4_compressBound((int)rc->cap));
    rc->back = malloc(rc->cap);
    const struct qv_field *root = &t->schema->root;
    const struct qv_field *fields[64];
    for (int64_t c = 0; c < root->n_children; c++) fields[c] = &root->children[c];
    double zc[16], zd[16], lc[16], ld[16];
    struct ref_result out;
    for (int r = 0; r < reps; r++) {
        memset(rc->raw, 0, sizeof rc->raw);
        memset(rc->zstd, 0, sizeof rc->zstd);
        memset(rc->lz4, 0, sizeof rc->lz4);
        rc->zc_s = rc->zd_s = rc->lc_s = rc->ld_s = 0;
        for (int64_t i = 0; i < t->n; i++) bt_batch_bytes(fields, &t->batches[i], ref_buf, rc);
        uint64_t raw = 0;
        for (int64_t c = 0; c < root->n_children; c++) raw += rc->raw[c];
        zc[r] = raw / rc->zc_s / MB;
        zd[r] = raw / rc->zd_s / MB;
        lc[r] = raw / rc->lc_s / MB;
        ld[r] = raw / rc->ld_s / MB;
    }
    memset(&out, 0, sizeof out);
    for (int64_t c = 0; c < root->n_children; c++) {
        out.raw[c] = rc->raw[c];
        out.zstd[c] = rc->zstd[c];
        out.lz4[c] = rc->lz4[c];
        out.raw_total += rc->raw[c];
        out.zstd_total += rc->zstd[c];
        out.lz4_total += rc->lz4[c];
    }
    char cs[96];
    snprintf(cs, sizeof cs, "%s", t->name);
    double mzc = qv_bench_record_samples(b, cs, "zstd-1", "compress_mb_per_s", zc, reps, "MB/s");
    double mzd = qv_bench_record_samples(b, cs, "zstd-1", "decompress_mb_per_s", zd, reps, "MB/s");
    double mlc = qv_bench_record_samples(b, cs, "lz4", "compress_mb_per_s", lc, reps, "MB/s");
    double mld = qv_bench_record_samples(b, cs, "lz4", "decompress_mb_per_s", ld, reps, "MB/s");
    printf("reference codecs over the raw Arrow buffers (per buffer per batch, one core): "
           "zstd -1 %.0f MB/s compress, %.0f MB/s decompress; lz4 %.0f / %.0f MB/s\n", mzc, mzd, mlc, mld);
    ZSTD_freeCCtx(rc->zc);
    ZSTD_freeDCtx(rc->zd);
    free(rc->comp);
    free(rc->back);
    free(rc);
    return out;
}

/* ================= encodings chosen ================= */

#define MAX_SIGS 8
struct col_enc {
    uint64_t encoded, raw;
    char first_desc[512];
    int n_sigs;
    char sig[MAX_SIGS][160];
    int sig_rgs[MAX_SIGS];
    int other_rgs;
};

struct sig_build {
    char buf[160];
    size_t len;
    int prev_depth, nodes;
};

static void sig_put(struct sig_build *s, const char *t) {
    size_t n = strlen(t);
    if (s->len + n + 1 >= sizeof s->buf) n = sizeof s->buf - 1 - s->len;
    memcpy(s->buf + s->len, t, n);
    s->len += n;
    s->buf[s->len] = 0;
}

/* The shape of an encoding tree without parameters: "for(bitpack)". */
static int sig_visit(void *ctx, const struct qv_enc_node_info *info) {
    struct sig_build *s = ctx;
    if (s->nodes++) {
        if (info->depth > s->prev_depth) sig_put(s, "(");
        else {
            for (int d = info->depth; d < s->prev_depth; d++) sig_put(s, ")");
            sig_put(s, ",");
        }
    }
    sig_put(s, info->name);
    s->prev_depth = info->depth;
    return 0;
}

static void collect_encodings(const struct qv_reader *rd, struct col_enc *ce, int32_t ncols) {
    struct qv_error err;
    int64_t nrg = qv_reader_num_row_groups(rd);
    for (int32_t c = 0; c < ncols; c++) {
        memset(&ce[c], 0, sizeof ce[c]);
        int32_t node = qv_reader_column_node(rd, c);
        for (int64_t rg = 0; rg < nrg; rg++) {
            struct qv_chunk_info ci;
            if (qv_reader_chunk_info(rd, rg, node, &ci, &err)) bt_die("chunk info", &err);
            ce[c].encoded += ci.encoded_bytes;
            ce[c].raw += ci.raw_bytes;
            for (int i = 0; i < ci.n_segments; i++) {
                struct qv_segment_info si;
                if (qv_reader_segment_info(rd, rg, node, i, &si, &err)) bt_die("segment info", &err);
                if (si.role != QV_SEGMENT_VALUES) continue;
                struct sig_build sb = {.len = 0};
                sb.buf[0] = 0;
                char desc[512];
                if (qv_reader_segment_describe(rd, rg, node, i, res, desc, sizeof desc, sig_visit, &sb, &err))
                    bt_die("segment describe", &err);
                for (int d = 0; d < sb.prev_depth; d++) sig_put(&sb, ")");
                if (rg == 0) snprintf(ce[c].first_desc, sizeof ce[c].first_desc, "%s", desc);
                int k;
                for (k = 0; k < ce[c].n_sigs; k++)
                    if (!strcmp(ce[c].sig[k], sb.buf)) break;
                if (k == ce[c].n_sigs) {
                    if (k == MAX_SIGS) {
                        ce[c].other_rgs++;
                        continue;
                    }
                    snprintf(ce[c].sig[k], sizeof ce[c].sig[k], "%s", sb.buf);
                    ce[c].n_sigs++;
                }
                ce[c].sig_rgs[k]++;
            }
        }
    }
}

/* ================= write and decode ================= */

/* Minor page faults of the calling thread so far (fresh pages touched). */
static double thread_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_minflt;
}

struct mode_result {
    const char *mode;
    uint64_t file_bytes;
    double write_wall, write_cpu, write_file, decode_wall, decode_cpu, decode_nock, decode_keep;
    double write_faults, decode_faults;
    struct col_enc ce[64];
};

static double timed_write(const struct bt_table *t, const struct qv_writer_options *wo,
                          struct qv_sink *sink, const char *path, double *cpu, double *faults) {
    struct qv_error err;
    struct qv_reservation *wr;
    struct qv_reservation_options ro = {.name = "bench writer"};
    if (qv_reservation_create(pool, &ro, &wr, &err)) bt_die("reservation", &err);
    struct qv_writer *w;
    if (sink) {
        if (qv_writer_open_sink(sink, t->schema, wo, wr, &w, &err)) bt_die("writer open", &err);
    } else if (qv_writer_open(path, t->schema, wo, wr, &w, &err)) {
        bt_die("writer open", &err);
    }
    double f0 = thread_faults(), c0 = bt_thread_cpu_s(), t0 = qv_bench_now_s();
    for (int64_t i = 0; i < t->n; i++)
        if (qv_writer_write(w, &t->batches[i], &err)) bt_die("writer write", &err);
    if (qv_writer_finish(w, &err)) bt_die("writer finish", &err);
    double t1 = qv_bench_now_s(), c1 = bt_thread_cpu_s();
    if (faults) *faults = thread_faults() - f0;
    qv_writer_close(w);
    qv_reservation_destroy(wr);
    if (cpu) *cpu = c1 - c0;
    return t1 - t0;
}

/* Decodes every row group of the file; returns wall seconds, sets CPU
 * seconds and the Arrow bytes produced. */
static double timed_decode(const char *path, int skip_checksums, double *cpu, uint64_t *bytes,
                           int64_t *rows, double *faults) {
    struct qv_error err;
    struct qv_reservation *rr;
    struct qv_reservation_options ro = {.name = "bench reader"};
    if (qv_reservation_create(pool, &ro, &rr, &err)) bt_die("reservation", &err);
    struct qv_reader_options opts = {.skip_checksums = skip_checksums};
    struct qv_reader *rd;
    if (qv_reader_open(path, &opts, rr, &rd, &err)) bt_die("reader open", &err);
    const struct qv_field *root = &qv_reader_schema(rd)->root;
    const struct qv_field *fields[64];
    for (int64_t c = 0; c < root->n_children; c++) fields[c] = &root->children[c];
    int64_t nrg = qv_reader_num_row_groups(rd);
    uint64_t total = 0;
    int64_t nrows = 0;
    double f0 = thread_faults(), c0 = bt_thread_cpu_s(), t0 = qv_bench_now_s();
    for (int64_t rg = 0; rg < nrg; rg++) {
        struct ArrowArray a;
        if (qv_reader_read_row_group(rd, rg, NULL, 0, rr, &a, &err)) bt_die("read row group", &err);
        if (bytes) total += bt_batch_bytes(fields, &a, NULL, NULL);
        nrows += a.length;
        a.release(&a);
    }
    double t1 = qv_bench_now_s(), c1 = bt_thread_cpu_s();
    if (faults) *faults = thread_faults() - f0;
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
    if (cpu) *cpu = c1 - c0;
    if (bytes) *bytes = total;
    if (rows) *rows = nrows;
    return t1 - t0;
}

/* Decodes in a fresh process (this binary with --child-decode), so the
 * figure does not depend on the heap this process built up, and so that
 * the allocator can be configured per run: with `keep_memory`, glibc is
 * told (MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_) to keep freed
 * memory instead of returning it to the kernel, which shows what page
 * faults on fresh buffers cost. Fills n samples of wall and CPU seconds. */
static void decode_child(const char *path, int skip_checksums, int keep_memory, int n, double *wall,
                         double *cpu, uint64_t *bytes, int64_t *rows, double *faults) {
    char a_sk[8], a_n[8];
    snprintf(a_sk, sizeof a_sk, "%d", skip_checksums);
    snprintf(a_n, sizeof a_n, "%d", n);
    char *args[] = {"bench_format", "--child-decode", (char *)path, a_sk, a_n, NULL};
    char buf[8192];
    int status = qv_bench_run_self(args, keep_memory, buf, sizeof buf);
    const char *p = buf;
    for (int i = 0; i < n; i++) {
        const char *line = strstr(p, "RESULT ");
        unsigned long long by;
        long long rw;
        if (status != 0 || !line ||
            sscanf(line, "RESULT wall=%lf cpu=%lf bytes=%llu rows=%lld faults=%lf", &wall[i], &cpu[i], &by, &rw,
                   &faults[i]) != 5) {
            fprintf(stderr, "bench format: decode child failed (status %d): %s\n", status, buf);
            exit(1);
        }
        if (bytes) *bytes = by;
        if (rows) *rows = rw;
        p = line + 7;
    }
}

/* Write time by number of encoding threads (qv_writer_options.threads; 0 in
 * the list: QV_WRITER_INLINE, everything on the calling thread), into the
 * memory sink, the same Arrow batches each time: min and median of the
 * repeats, and the speedup of each count over the first in the list. The
 * files must be the same bytes whatever the count (checked here too). */
static void bench_write_threads(struct qv_bench *b, const struct bt_table *t, const char *list) {
    int counts[8], nc = 0;
    for (const char *p = list; *p && nc < 8;) {
        counts[nc++] = atoi(p);
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
    }
    printf("\n== Write time by encoding threads: %s (%lld rows, %.1f MB of Arrow) ==\n", t->name,
           (long long)t->rows, t->bytes / MB);
    printf("%-10s %10s %10s %10s %10s %12s\n", "threads", "min s", "median s", "MB/s (med)",
           "speedup", "file bytes");
    static struct bt_memsink ms;
    double first_min = 0, first_med = 0;
    uint64_t first_size = 0, first_sum = 0;
    for (int i = 0; i < nc; i++) {
        struct qv_writer_options wo = {0};
        if (counts[i] <= 0) wo.max_in_flight = QV_WRITER_INLINE;
        else wo.threads = counts[i];
        double s[16];
        uint64_t sum = 0;
        for (int r = 0; r < reps; r++) {
            struct qv_sink sink = bt_memsink_open(&ms);
            s[r] = timed_write(t, &wo, &sink, NULL, NULL, NULL);
            sum = qv_hash64(ms.p, ms.len, 0);
        }
        char variant[32];
        if (counts[i] <= 0) snprintf(variant, sizeof variant, "inline");
        else snprintf(variant, sizeof variant, "threads_%d", counts[i]);
        qv_bench_record_samples(b, t->name, variant, "write_s", s, reps, "s");
        double sorted[16];
        memcpy(sorted, s, sizeof(double) * (size_t)reps);
        for (int x = 1; x < reps; x++)
            for (int y = x; y > 0 && sorted[y - 1] > sorted[y]; y--) {
                double tmp = sorted[y];
                sorted[y] = sorted[y - 1];
                sorted[y - 1] = tmp;
            }
        double med = sorted[reps / 2];
        double mn = sorted[0];
        if (i == 0) {
            first_min = mn;
            first_med = med;
            first_size = ms.len;
            first_sum = sum;
        } else if (ms.len != first_size || sum != first_sum) {
            fprintf(stderr, "bench format: the file differs with %d threads (%llu bytes vs %llu)\n",
                    counts[i], (unsigned long long)ms.len, (unsigned long long)first_size);
            exit(1);
        }
        printf("%-10s %10.3f %10.3f %10.0f %5.2fx/%.2fx %12llu\n", variant, mn, med, t->bytes / med / MB,
               first_min / mn, first_med / med, (unsigned long long)ms.len);
        qv_bench_record(b, t->name, variant, "write_speedup_min", "value", first_min / mn, "x");
        qv_bench_record(b, t->name, variant, "write_speedup_median", "value", first_med / med, "x");
    }
    printf("(speedup: over the first count in the list, min/min and median/median; wall clock, so\n"
           " figures taken while other processes run are noisy)\n");
}

static int child_decode_main(int argc, char **argv) {
    if (argc < 3) return 2;
    struct qv_error err;
    struct qv_pool_options po = {.name = "bench-format-decode"};
    if (qv_pool_create(&po, &pool, &err)) bt_die("pool", &err);
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++) {
        double cpu;
        uint64_t bytes;
        int64_t rows;
        double faults;
        double wall = timed_decode(argv[0], atoi(argv[1]), &cpu, &bytes, &rows, &faults);
        printf("RESULT wall=%.6f cpu=%.6f bytes=%llu rows=%lld faults=%.0f\n", wall, cpu, (unsigned long long)bytes,
               (long long)rows, faults);
    }
    qv_pool_destroy(pool);
    return 0;
}

static void bench_mode(struct qv_bench *b, const struct bt_table *t, const char *mode, int compact,
                       const char *keep_path, struct mode_result *mr) {
    struct qv_writer_options wo = {.compact = compact};
    double ws[16], wc[16], ds[16], dc[16], dn[16], dk[16], wfl[16];
    char cs[96];
    snprintf(cs, sizeof cs, "%s", t->name);
    memset(mr, 0, sizeof *mr);
    mr->mode = mode;
    static struct bt_memsink ms;
    for (int r = 0; r < reps; r++) {
        struct qv_sink sink = bt_memsink_open(&ms);
        double cpu;
        double s = timed_write(t, &wo, &sink, NULL, &cpu, &wfl[r]);
        wfl[r] /= t->bytes / MB;
        ws[r] = t->bytes / s / MB;
        wc[r] = t->bytes / cpu / MB;
    }
    uint64_t mem_size = ms.len;
    char path[4096], name[256];
    if (keep_path) snprintf(path, sizeof path, "%s", keep_path);
    else {
        snprintf(name, sizeof name, "format-%s-%s.qvr", t->name, mode);
        bt_path(path, sizeof path, "bench", name);
    }
    double fs = timed_write(t, &wo, NULL, path, NULL, NULL);
    mr->file_bytes = bt_file_size(path);
    if (mr->file_bytes != mem_size) {
        fprintf(stderr, "bench format: file is %llu bytes but the memory sink got %llu\n",
                (unsigned long long)mr->file_bytes, (unsigned long long)mem_size);
        exit(1);
    }
    mr->write_file = t->bytes / fs / MB;
    uint64_t out_bytes = 0;
    int64_t rows = 0;
    double w[16], cs_[16], df[16], wf[16];
    decode_child(path, 0, 0, reps, w, cs_, &out_bytes, &rows, df);
    if (out_bytes != t->bytes || rows != t->rows) {
        fprintf(stderr, "bench format: decoded %lld rows / %llu Arrow bytes, wrote %lld / %llu\n", (long long)rows,
                (unsigned long long)out_bytes, (long long)t->rows, (unsigned long long)t->bytes);
        exit(1);
    }
    for (int r = 0; r < reps; r++) {
        ds[r] = t->bytes / w[r] / MB;
        dc[r] = t->bytes / cs_[r] / MB;
    }
    decode_child(path, 1, 0, reps, w, cs_, NULL, NULL, wf);
    for (int r = 0; r < reps; r++) dn[r] = t->bytes / cs_[r] / MB;
    decode_child(path, 0, 1, reps, w, cs_, NULL, NULL, wf);
    for (int r = 0; r < reps; r++) dk[r] = t->bytes / cs_[r] / MB;
    mr->write_wall = qv_bench_record_samples(b, cs, mode, "write_mb_per_s", ws, reps, "MB/s");
    mr->write_cpu = qv_bench_record_samples(b, cs, mode, "write_mb_per_cpu_s", wc, reps, "MB/s");
    qv_bench_record(b, cs, mode, "write_file_fsync_mb_per_s", "value", mr->write_file, "MB/s");
    mr->decode_wall = qv_bench_record_samples(b, cs, mode, "decode_mb_per_s", ds, reps, "MB/s");
    mr->decode_cpu = qv_bench_record_samples(b, cs, mode, "decode_mb_per_cpu_s", dc, reps, "MB/s");
    mr->decode_nock = qv_bench_record_samples(b, cs, mode, "decode_no_checksums_mb_per_cpu_s", dn, reps, "MB/s");
    for (int r = 0; r < reps; r++) df[r] /= t->bytes / MB;
    mr->write_faults = qv_bench_record_samples(b, cs, mode, "write_page_faults_per_mb", wfl, reps, "faults/MB");
    mr->decode_faults = qv_bench_record_samples(b, cs, mode, "decode_page_faults_per_mb", df, reps, "faults/MB");
    mr->decode_keep = qv_bench_record_samples(b, cs, mode, "decode_malloc_keeps_memory_mb_per_cpu_s", dk, reps, "MB/s");
    qv_bench_record(b, cs, mode, "file_bytes", "value", (double)mr->file_bytes, "B");
    qv_bench_record(b, cs, mode, "ratio", "value", (double)t->bytes / mr->file_bytes, "x");

    /* encodings per column */
    struct qv_error err;
    struct qv_reservation *rr;
    struct qv_reservation_options ro = {.name = "bench inspect"};
    if (qv_reservation_create(pool, &ro, &rr, &err)) bt_die("reservation", &err);
    struct qv_reader *rd;
    if (qv_reader_open(path, NULL, rr, &rd, &err)) bt_die("reader open", &err);
    int32_t ncols = (int32_t)qv_reader_schema(rd)->root.n_children;
    collect_encodings(rd, mr->ce, ncols);
    for (int32_t c = 0; c < ncols; c++) {
        char cc[160];
        snprintf(cc, sizeof cc, "%s/%s", t->name, qv_reader_schema(rd)->root.children[c].name);
        qv_bench_record(b, cc, mode, "encoded_bytes", "value", (double)mr->ce[c].encoded, "B");
        qv_bench_record(b, cc, mode, "ratio", "value", (double)mr->ce[c].raw / mr->ce[c].encoded, "x");
    }
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
    if (!keep_path) unlink(path);
}

/* ================= one data set ================= */

struct dataset_result {
    char name[64];
    double sf;
    uint64_t arrow_bytes;
    struct mode_result modes[2];
    struct ref_result ref;
};

static void bench_dataset(struct qv_bench *b, struct bt_table *t, double sf, const char *keep_path,
                          struct dataset_result *dr) {
    const struct qv_field *root = &t->schema->root;
    printf("\n== %s: %lld rows, %lld batches, %.1f MB of Arrow (loaded in %.1f s) ==\n", t->name,
           (long long)t->rows, (long long)t->n, t->bytes / MB, t->load_s);
    memset(dr, 0, sizeof *dr);
    snprintf(dr->name, sizeof dr->name, "%s", t->name);
    dr->sf = sf;
    dr->arrow_bytes = t->bytes;
    qv_bench_record(b, t->name, "arrow", "bytes", "value", (double)t->bytes, "B");
    qv_bench_record(b, t->name, "arrow", "rows", "value", (double)t->rows, "rows");
    dr->ref = bench_reference(b, t);
    for (int64_t c = 0; c < root->n_children; c++) {
        char cc[160];
        snprintf(cc, sizeof cc, "%s/%s", t->name, root->children[c].name);
        qv_bench_record(b, cc, "zstd-1", "ratio", "value", (double)dr->ref.raw[c] / dr->ref.zstd[c], "x");
        qv_bench_record(b, cc, "lz4", "ratio", "value", (double)dr->ref.raw[c] / dr->ref.lz4[c], "x");
        qv_bench_record(b, cc, "zstd-1", "encoded_bytes", "value", (double)dr->ref.zstd[c], "B");
        qv_bench_record(b, cc, "lz4", "encoded_bytes", "value", (double)dr->ref.lz4[c], "B");
    }
    qv_bench_record(b, t->name, "zstd-1", "encoded_bytes", "value", (double)dr->ref.zstd_total, "B");
    qv_bench_record(b, t->name, "lz4", "encoded_bytes", "value", (double)dr->ref.lz4_total, "B");
    bench_mode(b, t, "default", 0, keep_path, &dr->modes[0]);
    bench_mode(b, t, "compact", 1, NULL, &dr->modes[1]);

    struct mode_result *d = &dr->modes[0], *k = &dr->modes[1];
    printf("%-16s %-18s %8s | %8s %7s | %8s %7s | %7s %7s | %s\n", "column", "type", "Arrow MB",
           "default", "ratio", "compact", "ratio", "zstd-1", "lz4", "encoding (default: shape, row groups; first row group)");
    for (int64_t c = 0; c < root->n_children; c++) {
        char type[64];
        qv_type_to_string(&root->children[c], type, sizeof type);
        const struct col_enc *e = &d->ce[c];
        int nrg = 0;
        for (int s = 0; s < e->n_sigs; s++) nrg += e->sig_rgs[s];
        nrg += e->other_rgs;
        int best = 0;
        for (int s = 1; s < e->n_sigs; s++)
            if (e->sig_rgs[s] > e->sig_rgs[best]) best = s;
        char shape[400];
        int len = snprintf(shape, sizeof shape, "%s %d/%d", e->sig[best], e->sig_rgs[best], nrg);
        if (e->n_sigs > 1 || e->other_rgs)
            snprintf(shape + len, sizeof shape - (size_t)len, " (+%d other shapes)", e->n_sigs - 1 + (e->other_rgs > 0));
        printf("%-16s %-18s %8.1f | %8.2f %6.1fx | %8.2f %6.1fx | %6.1fx %6.1fx | %s\n", root->children[c].name,
               type, t->col_bytes[c] / MB, e->encoded / MB, (double)e->raw / e->encoded, k->ce[c].encoded / MB,
               (double)k->ce[c].raw / k->ce[c].encoded, (double)dr->ref.raw[c] / dr->ref.zstd[c],
               (double)dr->ref.raw[c] / dr->ref.lz4[c], shape);
        printf("%-16s %-18s %8s   %s\n", "", "", "", e->first_desc);
        if (k->ce[c].n_sigs && strcmp(k->ce[c].sig[0], e->sig[0]) != 0)
            printf("%-16s %-18s %8s   compact: %s\n", "", "", "", k->ce[c].first_desc);
    }
    printf("%-16s %-18s %8.1f | %8.2f %6.2fx | %8.2f %6.2fx | %6.2fx %6.2fx | (file sizes: footer included)\n",
           "file total", "", t->bytes / MB, d->file_bytes / MB, (double)t->bytes / d->file_bytes,
           k->file_bytes / MB, (double)t->bytes / k->file_bytes, (double)dr->ref.raw_total / dr->ref.zstd_total,
           (double)dr->ref.raw_total / dr->ref.lz4_total);
    printf("zstd -1 total %.2f MB, lz4 total %.2f MB\n", dr->ref.zstd_total / MB, dr->ref.lz4_total / MB);
    printf("\n%-8s %8s | %8s %8s %8s %8s | %8s %8s %8s %8s %8s\n", "", "", "write", "write", "write",
           "write", "decode", "decode", "decode", "decode", "decode");
    printf("%-8s %8s | %8s %8s %8s %8s | %8s %8s %8s %8s %8s\n", "mode", "file MB", "MB/s", "MB/cpu-s",
           "+fsync", "faults", "MB/s", "MB/cpu-s", "faults", "no cksum", "malloc");
    printf("%-8s %8s | %8s %8s %8s %8s | %8s %8s %8s %8s %8s\n", "", "", "", "", "MB/s", "per MB", "",
           "", "per MB", "MB/cpu-s", "kept");
    for (int m = 0; m < 2; m++) {
        struct mode_result *x = &dr->modes[m];
        printf("%-8s %8.2f | %8.0f %8.0f %8.0f %8.0f | %8.0f %8.0f %8.0f %8.0f %8.0f\n", x->mode,
               x->file_bytes / MB, x->write_wall, x->write_cpu, x->write_file, x->write_faults, x->decode_wall,
               x->decode_cpu, x->decode_faults, x->decode_nock, x->decode_keep);
    }
    printf("(MB/s of Arrow data, median of %d. write = qv_writer_write + finish into memory, one thread;\n"
           " +fsync = one write to the file, fsync and rename included; faults = minor page faults of the\n"
           " working thread per MB of Arrow (244 = every byte lands on a fresh 4 KiB page).\n"
           " decode = qv_reader_read_row_group over all row groups, one thread, in a fresh process;\n"
           " 'no cksum' = skip_checksums; 'malloc kept' = glibc told to keep freed memory\n"
           " (MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_), i.e. without the page faults of fresh\n"
           " buffers; those two per CPU-second.)\n", reps);
}

/* ================= main ================= */

static const char *verdict(int ok) { return ok ? "PASS" : "MISS"; }

int main(int argc, char **argv) {
    bt_prog = "bench format";
    if (argc > 1 && !strcmp(argv[1], "--child-decode")) return child_decode_main(argc - 2, argv + 2);
    struct qv_bench *b = qv_bench_open("format", argc, argv);
    int quick = qv_bench_quick(b);
    double sf = quick ? 0.1 : 1.0;
    int use_tpch = !quick, use_gen = 1, write_only = 0;
    const char *write_threads = NULL;
    reps = 3;
    for (int i = 0; i < qv_bench_argc(b); i++) {
        const char *a = qv_bench_argv(b)[i];
        if (!strcmp(a, "--sf") && i + 1 < qv_bench_argc(b)) sf = atof(qv_bench_argv(b)[++i]);
        else if (!strcmp(a, "--reps") && i + 1 < qv_bench_argc(b)) reps = atoi(qv_bench_argv(b)[++i]);
        else if (!strcmp(a, "--no-tpch")) use_tpch = 0;
        else if (!strcmp(a, "--tpch")) use_tpch = 1;
        else if (!strcmp(a, "--no-gen")) use_gen = 0;
        else if (!strcmp(a, "--write-threads") && i + 1 < qv_bench_argc(b)) write_threads = qv_bench_argv(b)[++i];
        else if (!strcmp(a, "--write-only")) write_only = 1;
        else {
            fprintf(stderr, "usage: bench/run format [--quick] [--json FILE] [--sf X] [--reps N] "
                            "[--tpch|--no-tpch] [--no-gen] [--write-threads 0,1,2] [--write-only]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 16) reps = 16;
    struct qv_error err;
    struct qv_pool_options po = {.name = "bench-format"};
    struct qv_reservation_options ro = {.name = "bench tables"};
    if (qv_pool_create(&po, &pool, &err) || qv_reservation_create(pool, &ro, &res, &err)) bt_die("pool", &err);
    printf("bench format: %s, %d repeats, %d CPUs online\n", quick ? "quick" : "full", reps, qv_cpu_count());

    if (write_only) {
        /* Only the write-time-by-threads table (default list 0,1,2). */
        const char *list = write_threads ? write_threads : "0,1,2";
        struct bt_table t;
        const char *csv = use_tpch ? bt_tpch_csv() : NULL;
        if (csv && bt_table_load_csv(&t, csv, res) == 0) {
            bench_write_threads(b, &t, list);
            bt_table_free(&t);
        }
        if (use_gen) {
            bt_table_generate(&t, sf, res);
            bench_write_threads(b, &t, list);
            bt_table_free(&t);
        }
        qv_reservation_destroy(res);
        qv_pool_destroy(pool);
        fflush(stdout);
        return qv_bench_close(b);
    }

    struct kernel_result kr = bench_kernels(b);

    struct dataset_result dr[2];
    int nds = 0;
    if (use_tpch) {
        const char *csv = bt_tpch_csv();
        struct bt_table t;
        if (csv && bt_table_load_csv(&t, csv, res) == 0) {
            char keep[4096], name[128];
            snprintf(name, sizeof name, "lineitem-%s.qvr", t.name);
            bt_path(keep, sizeof keep, "bench", name);
            bench_dataset(b, &t, (double)t.rows / 6001215.0, keep, &dr[nds++]);
            if (write_threads) bench_write_threads(b, &t, write_threads);
            bt_table_free(&t);
        }
    }
    if (use_gen) {
        struct bt_table t;
        bt_table_generate(&t, sf, res);
        bench_dataset(b, &t, sf, NULL, &dr[nds++]);
        if (write_threads) bench_write_threads(b, &t, write_threads);
        bt_table_free(&t);
    }

    printf("\n== Targets ==\n");
    printf("%-44s %14s %14s %8s\n", "target", "measured", "goal", "");
    for (int i = 0; i < nds; i++) {
        for (int m = 0; m < 2; m++) {
            struct mode_result *x = &dr[i].modes[m];
            double at1 = x->file_bytes / MB / dr[i].sf;
            char what[96];
            snprintf(what, sizeof what, "%.40s %s: total size%s", dr[i].name, x->mode,
                     dr[i].sf < 0.99 || dr[i].sf > 1.01 ? " (scaled to SF1)" : "");
            printf("%-44s %11.1f MB %11s MB %8s%s\n", what, at1, "<= 120", verdict(at1 <= 120),
                   at1 <= 95 ? " (stretch <= 95 met)" : " (stretch <= 95 missed)");
            qv_bench_record(b, dr[i].name, x->mode, "total_mb_at_sf1", "value", at1, "MB");
            snprintf(what, sizeof what, "%.40s %s: write per core", dr[i].name, x->mode);
            printf("%-44s %9.0f MB/s %9s MB/s %8s\n", what, x->write_cpu, ">= 500", verdict(x->write_cpu >= 500));
            snprintf(what, sizeof what, "%.40s %s: full decode per core", dr[i].name, x->mode);
            printf("%-44s %9.0f MB/s %9s MB/s %8s\n", what, x->decode_cpu, ">= 2000", verdict(x->decode_cpu >= 2000));
        }
    }
    printf("%-44s %9.2f Gv/s %9s Gv/s %8s (best repeats %.2f)\n", "bit-unpacking ->u32 (mean of widths 1..32)",
           kr.unpack32_mean, ">= 10", verdict(kr.unpack32_mean >= 10), kr.unpack32_best);
    printf("%-44s %9.2f Gv/s %9s Gv/s %8s (best repeats %.2f)\n", "bit-unpacking ->u64 (mean of widths 1..32)",
           kr.unpack64_mean, ">= 10", verdict(kr.unpack64_mean >= 10), kr.unpack64_best);
    printf("%-44s %9.2f Gv/s %9s Gv/s %8s (best repeat %.2f)\n", "decode_range bitpacked int32 (in cache)", kr.api32,
           ">= 10", verdict(kr.api32 >= 10), kr.api32_best);
    printf("%-44s %9.2f Gv/s %9s Gv/s %8s (best repeat %.2f)\n", "decode_range bitpacked int64 (in cache)", kr.api64,
           ">= 10", verdict(kr.api64 >= 10), kr.api64_best);
    printf("(per core = bytes / CPU seconds of the working thread; the machine is shared, so wall-clock\n"
           " rates above can be lower than per-core rates)\n");

    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    fflush(stdout);
    return qv_bench_close(b);
}
