/* Run-time choice of SIMD kernel variants. Internal to the library.
 *
 * The library is compiled for the architecture's baseline (SSE2 on x86-64,
 * no -march), so a build runs on any x86-64 and compiles anywhere. The few
 * kernels that gain from newer instructions are compiled a second or third
 * time with a GCC/Clang target attribute (QV__TARGET_SSE42,
 * QV__TARGET_AVX2) and chosen per call by qv__cpu_level(), which the CPU's
 * features decide once per process. On other architectures (aarch64) only
 * the generic C variant exists and the level is always QV__CPU_BASELINE.
 *
 * The environment variable QUIVER_SIMD, read once at the first call, caps
 * the level: "baseline" forces the generic variants (that is how the tests
 * run the generic path on a machine that has AVX2), "sse4.2" and "avx2" cap
 * there, "auto" or unset take the best the CPU has. A cap above what the CPU
 * has is lowered to it: QUIVER_SIMD never selects an instruction the CPU
 * lacks. An unknown value selects the baseline, the choice that is safe
 * everywhere.
 *
 * A kernel with variants follows one pattern: its body is a static inline
 * always_inline function, instantiated once per level as NAME_generic,
 * NAME_sse42 (optional) and NAME_avx2 (the last two inside
 * `#if QV__X86_DISPATCH`), and the public entry calls
 * QV__DISPATCH(NAME, args...), QV__DISPATCH2(NAME, args...) (no sse4.2
 * variant) or QV__DISPATCH_SSE42(NAME, args...) (no avx2 variant). Every variant must compute the same result, bit for bit;
 * core/tests/test_cpu.c compares them. */
#ifndef QUIVER_BASE_CPU_INTERNAL_H
#define QUIVER_BASE_CPU_INTERNAL_H

#include <stdatomic.h>

enum qv__cpu_level {
    QV__CPU_BASELINE = 0, /* generic C: x86-64 SSE2, aarch64, anything else */
    QV__CPU_SSE42 = 1,    /* x86-64-v2: SSE4.2 and POPCNT */
    QV__CPU_AVX2 = 2,     /* AVX2, BMI2, POPCNT (the part of x86-64-v3 the kernels use) */
};

#if defined(__x86_64__) && defined(__GNUC__)
#define QV__X86_DISPATCH 1
#define QV__TARGET_SSE42 __attribute__((target("sse4.2,popcnt")))
#define QV__TARGET_AVX2 __attribute__((target("avx2,bmi,bmi2,popcnt")))
#else
#define QV__X86_DISPATCH 0
#endif

#define QV__ALWAYS_INLINE inline __attribute__((always_inline))

/* 0 until the first call of qv__cpu_level; then the level + 1. */
extern atomic_int qv__cpu_state;

/* Works the level out (CPU features, QUIVER_SIMD) and caches it. */
int qv__cpu_detect(void);

/* The level the kernels use. Cheap: one relaxed load after the first call. */
static inline int qv__cpu_level(void) {
    int s = atomic_load_explicit(&qv__cpu_state, memory_order_relaxed);
    return s ? s - 1 : qv__cpu_detect();
}

/* The name of a level: "baseline", "sse4.2" or "avx2". */
const char *qv__cpu_level_name(int level);

/* The best level this CPU supports, whatever QUIVER_SIMD says. */
int qv__cpu_supported(void);

/* For tests and benchmarks: makes the kernels use `level` (lowered to what
 * the CPU supports) from now on, in every thread; returns the level in use
 * before. Not for concurrent use with running kernels of another test. */
int qv__cpu_set_level(int level);

#if QV__X86_DISPATCH
#define QV__DISPATCH(fn, ...)                                                                      \
    (qv__cpu_level() >= QV__CPU_AVX2    ? fn##_avx2(__VA_ARGS__)                                \
     : qv__cpu_level() >= QV__CPU_SSE42 ? fn##_sse42(__VA_ARGS__)                                \
                                        : fn##_generic(__VA_ARGS__))
#define QV__DISPATCH2(fn, ...)                                                                     \
    (qv__cpu_level() >= QV__CPU_AVX2 ? fn##_avx2(__VA_ARGS__) : fn##_generic(__VA_ARGS__))
/* Kernels whose only gain is an SSE4.2/POPCNT instruction: AVX2 machines
 * take the sse42 variant. */
#define QV__DISPATCH_SSE42(fn, ...)                                                                \
    (qv__cpu_level() >= QV__CPU_SSE42 ? fn##_sse42(__VA_ARGS__) : fn##_generic(__VA_ARGS__))
#else
#define QV__DISPATCH(fn, ...) fn##_generic(__VA_ARGS__)
#define QV__DISPATCH2(fn, ...) fn##_generic(__VA_ARGS__)
#define QV__DISPATCH_SSE42(fn, ...) fn##_generic(__VA_ARGS__)
#endif

#endif
