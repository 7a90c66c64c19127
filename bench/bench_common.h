/*
 * Shared benchmark plumbing: timing, min/median over repeats, a table for
 * people and flat JSON records (DESIGN.md section 2) for machines.
 */
#ifndef QV_BENCH_COMMON_H
#define QV_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

struct qv_bench;

/* Parses `--quick` and `--json FILE` from argv; other arguments are left for
 * the caller (see qv_bench_args). `name` is the bench name in the records. */
struct qv_bench *qv_bench_open(const char *name, int argc, char **argv);
int qv_bench_quick(const struct qv_bench *b);
/* Arguments other than --quick/--json, in order. */
int qv_bench_argc(const struct qv_bench *b);
char **qv_bench_argv(const struct qv_bench *b);

/* Adds one record: {"bench", "case", "variant", "metric", "stat", "value", "unit"}. */
void qv_bench_record(struct qv_bench *b, const char *case_name, const char *variant,
                     const char *metric, const char *stat, double value, const char *unit);
/* Records min, median and max of `n` samples and returns the median. */
double qv_bench_record_samples(struct qv_bench *b, const char *case_name, const char *variant,
                               const char *metric, const double *samples, int n,
                               const char *unit);
/* Writes the JSON file if asked for and frees `b`. Returns 0 or errno. */
int qv_bench_close(struct qv_bench *b);

double qv_bench_min(const double *v, int n);
double qv_bench_median(const double *v, int n);
double qv_bench_now_s(void);
/* xorshift64 (13, 7, 17) on *s (not 0): the next word, and a double in
 * [0, 1) from its top 53 bits. The benchmarks' data generators. */
uint64_t qv_bench_xorshift(uint64_t *s);
double qv_bench_unit(uint64_t *s);
/* Peak resident set size of this process (VmHWM) in bytes, 0 if unknown. */
uint64_t qv_bench_peak_rss(void);
/* Runs this benchmark binary again (args[0] is its name; /proc/self/exe is
 * executed) in a fresh process, so a figure does not depend on the heap this
 * process built up, and collects its standard output into out (NUL-
 * terminated, truncated to cap - 1). With keep_malloc_memory, glibc in the
 * child is told to keep freed memory (MALLOC_MMAP_THRESHOLD_ and
 * MALLOC_TRIM_THRESHOLD_), which shows what page faults cost. Returns 0
 * when the child exited with status 0, else its wait status (or -1). */
int qv_bench_run_self(char *const args[], int keep_malloc_memory, char *out, size_t cap);
/* Keeps the compiler from optimizing a value away. */
void qv_bench_sink(const void *p);

#endif
