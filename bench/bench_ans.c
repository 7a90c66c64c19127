/*
 * bench/run ans [--quick]
 *
 * The ans codec's two coded block kinds side by side (docs/format.md
 * 5.5.17): kind 1 (8 states, what 5.x files hold) and kind 2 (32 states,
 * format 6.0), each decoded with the generic kernels and with the CPU's
 * best (AVX2 where it has it), on 2,000 frames of 16,384 bytes (200 with
 * --quick) of five shapes of bytes; and the encoder's own choice. Prints
 * ns per decoded byte (min and median of 7 passes over all frames) and
 * the coded bytes of each kind, one line per shape and kind.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu_internal.h"
#include "bench_common.h"
#include "encoding/enc_internal.h"

#define FRAME 16384
#define PASSES 7

static uint64_t rs = 11;
static double unit(void) { return qv_bench_unit(&rs); }

/* Shapes: dictionary codes of 256 words drawn by Zipf(1.5) (as nested's
 * tags), of 230 values by 1/rank, geometric codes, 7 uniform values, and
 * one value 95% of the time. */
static uint8_t draw(int shape, const double *cdf) {
    const double u = unit();
    switch (shape) {
    case 0:
    case 1: {
        int lo = 0, hi = 255;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        return (uint8_t)lo;
    }
    case 2: return (uint8_t)(u < 0.5 ? 0 : u < 0.75 ? 1 : u < 0.875 ? 2 : 3 + (int)(unit() * 12));
    case 3: return (uint8_t)(unit() * 7);
    default: return u < 0.95 ? 0 : (uint8_t)(1 + (int)(unit() * 30));
    }
}

static const char *const shape_names[] = {"zipf(1.5) over 256", "1/rank over 230",
                                          "geometric", "7 uniform values", "95% one value"};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const int frames = argc > 1 && !strcmp(argv[1], "--quick") ? 200 : 2000;
    uint8_t *src = malloc((size_t)frames * FRAME), *out = malloc(FRAME);
    const size_t cap = qv__ans_bound(FRAME);
    uint8_t *comp = malloc(cap * (size_t)frames);
    size_t *clen = malloc(sizeof *clen * (size_t)frames);
    if (!src || !out || !comp || !clen) return 1;
    const int best = qv__cpu_supported();
    printf("ans blocks of %d bytes, %d frames; decode ns/byte min / median of %d passes; "
           "best kernels here: %s\n", FRAME, frames, PASSES, qv__cpu_level_name(best));
    printf("%-28s %-12s %10s %12s %12s %12s\n", "shape", "kind", "coded MB", "generic", "best",
           "best/kind 1");
    for (int shape = 0; shape < 5; shape++) {
        double cdf[256] = {0}, tot = 0;
        const int nsym = shape == 0 ? 256 : 230;
        for (int k = 0; k < nsym; k++) tot += shape == 0 ? pow(k + 1, -1.5) : 1.0 / (k + 1);
        for (int k = 0; k < 256; k++) {
            double w = k < nsym ? (shape == 0 ? pow(k + 1, -1.5) : 1.0 / (k + 1)) : 0;
            cdf[k] = (k ? cdf[k - 1] : 0) + w / tot;
        }
        cdf[255] = 1.0;
        for (size_t i = 0; i < (size_t)frames * FRAME; i++) src[i] = draw(shape, cdf);
        double kind1_best = 0;
        for (int lanes = 8; lanes >= 0; lanes = lanes == 8 ? 32 : lanes == 32 ? 0 : -1) {
            size_t total = 0;
            int kinds[3] = {0};
            for (int f = 0; f < frames; f++) {
                clen[f] = qv__ans_compress_lanes(src + (size_t)f * FRAME, FRAME,
                                                 comp + (size_t)f * cap, cap, lanes);
                total += clen[f];
                kinds[comp[(size_t)f * cap] < 3 ? comp[(size_t)f * cap] : 0]++;
            }
            double med[2], mn[2];
            for (int lv = 0; lv < 2; lv++) {
                const int old = qv__cpu_set_level(lv ? best : QV__CPU_BASELINE);
                double t[PASSES];
                for (int r = 0; r < PASSES; r++) {
                    const double t0 = qv_bench_now_s();
                    for (int f = 0; f < frames; f++) {
                        const char *why;
                        if (qv__ans_decompress(comp + (size_t)f * cap, clen[f], out, FRAME, &why)) {
                            fprintf(stderr, "frame %d: %s\n", f, why);
                            return 1;
                        }
                        if (r == 0 && memcmp(out, src + (size_t)f * FRAME, FRAME)) {
                            fprintf(stderr, "frame %d decodes to other bytes\n", f);
                            return 1;
                        }
                    }
                    t[r] = (qv_bench_now_s() - t0) * 1e9 / ((double)frames * FRAME);
                }
                qv__cpu_set_level(old);
                qsort(t, PASSES, sizeof t[0], cmp_double);
                mn[lv] = t[0];
                med[lv] = t[PASSES / 2];
            }
            if (lanes == 8) kind1_best = med[1];
            char kind[32];
            if (lanes) snprintf(kind, sizeof kind, "%d (%d st.)", lanes == 8 ? 1 : 2, lanes);
            else snprintf(kind, sizeof kind, "chosen %d/%d", kinds[1], kinds[2]);
            printf("%-28s %-12s %10.3f %5.2f/%5.2f %5.2f/%5.2f %11.2fx\n", shape_names[shape], kind,
                   (double)total / 1e6, mn[0], med[0], mn[1], med[1], kind1_best / med[1]);
        }
    }
    free(src);
    free(out);
    free(comp);
    free(clen);
    return 0;
}
