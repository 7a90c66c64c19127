/* The one place that decides which SIMD variant of a kernel runs: the CPU's
 * features, capped by QUIVER_SIMD (see cpu_internal.h for the contract). */
#include <stdlib.h>
#include <string.h>

#include "base/cpu_internal.h"

atomic_int qv__cpu_state;

int qv__cpu_supported(void) {
#if QV__X86_DISPATCH
    /* __builtin_cpu_supports("avx2") is false unless the OS saves the YMM
     * registers too (libgcc and compiler-rt check XCR0), so a kernel with
     * AVX2 never runs where it would fault. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt"))
        return QV__CPU_AVX2;
    if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt"))
        return QV__CPU_SSE42;
#endif
    return QV__CPU_BASELINE;
}

const char *qv__cpu_level_name(int level) {
    switch (level) {
    case QV__CPU_AVX2: return "avx2";
    case QV__CPU_SSE42: return "sse4.2";
    default: return "baseline";
    }
}

/* The cap QUIVER_SIMD asks for. Unknown words give the baseline: whoever
 * sets the variable wants something other than the default, and the
 * baseline is correct on every machine. */
static int requested_cap(void) {
    const char *s = getenv("QUIVER_SIMD");
    if (!s || !*s || strcmp(s, "auto") == 0) return QV__CPU_AVX2;
    if (strcmp(s, "avx2") == 0) return QV__CPU_AVX2;
    if (strcmp(s, "sse4.2") == 0 || strcmp(s, "sse42") == 0) return QV__CPU_SSE42;
    return QV__CPU_BASELINE;
}

int qv__cpu_detect(void) {
    int have = qv__cpu_supported(), cap = requested_cap();
    int level = cap < have ? cap : have;
    /* Threads that race here compute the same value; the first store wins
     * and a later qv__cpu_set_level is not overwritten. */
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&qv__cpu_state, &expected, level + 1,
                                                 memory_order_relaxed, memory_order_relaxed))
        return expected - 1;
    return level;
}

int qv__cpu_set_level(int level) {
    int before = qv__cpu_level(), have = qv__cpu_supported();
    if (level < QV__CPU_BASELINE) level = QV__CPU_BASELINE;
    if (level > have) level = have;
    atomic_store_explicit(&qv__cpu_state, level + 1, memory_order_relaxed);
    return before;
}
