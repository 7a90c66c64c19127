#include "bench_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct record {
    char case_name[96], variant[64], metric[64], stat[16], unit[16];
    double value;
};

struct qv_bench {
    char name[32];
    int quick;
    const char *json_path;
    int argc;
    char **argv;
    struct record *recs;
    size_t n, cap;
};

struct qv_bench *qv_bench_open(const char *name, int argc, char **argv) {
    struct qv_bench *b = calloc(1, sizeof *b);
    if (!b) exit(2);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->argv = calloc((size_t)argc + 1, sizeof(char *));
    if (!b->argv) exit(2);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) b->quick = 1;
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) b->json_path = argv[++i];
        else b->argv[b->argc++] = argv[i];
    }
    return b;
}

int qv_bench_quick(const struct qv_bench *b) { return b->quick; }
int qv_bench_argc(const struct qv_bench *b) { return b->argc; }
char **qv_bench_argv(const struct qv_bench *b) { return b->argv; }

void qv_bench_record(struct qv_bench *b, const char *case_name, const char *variant,
                     const char *metric, const char *stat, double value, const char *unit) {
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->recs = realloc(b->recs, b->cap * sizeof *b->recs);
        if (!b->recs) exit(2);
    }
    struct record *r = &b->recs[b->n++];
    snprintf(r->case_name, sizeof r->case_name, "%s", case_name);
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    snprintf(r->metric, sizeof r->metric, "%s", metric);
    snprintf(r->stat, sizeof r->stat, "%s", stat);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->value = value;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double qv_bench_min(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

double qv_bench_median(const double *v, int n) {
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) exit(2);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

double qv_bench_record_samples(struct qv_bench *b, const char *case_name, const char *variant,
                               const char *metric, const double *samples, int n,
                               const char *unit) {
    double mx = samples[0];
    for (int i = 1; i < n; i++)
        if (samples[i] > mx) mx = samples[i];
    double med = qv_bench_median(samples, n);
    qv_bench_record(b, case_name, variant, metric, "min", qv_bench_min(samples, n), unit);
    qv_bench_record(b, case_name, variant, metric, "median", med, unit);
    qv_bench_record(b, case_name, variant, metric, "max", mx, unit);
    return med;
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int qv_bench_close(struct qv_bench *b) {
    int rc = 0;
    if (b->json_path) {
        FILE *f = fopen(b->json_path, "w");
        if (!f) {
            fprintf(stderr, "bench: cannot write %s: %s\n", b->json_path, strerror(errno));
            rc = errno;
        } else {
            fputs("[\n", f);
            for (size_t i = 0; i < b->n; i++) {
                const struct record *r = &b->recs[i];
                fputs("  {\"bench\": ", f);
                json_string(f, b->name);
                fputs(", \"case\": ", f);
                json_string(f, r->case_name);
                fputs(", \"variant\": ", f);
                json_string(f, r->variant);
                fputs(", \"metric\": ", f);
                json_string(f, r->metric);
                fputs(", \"stat\": ", f);
                json_string(f, r->stat);
                fprintf(f, ", \"value\": %.6g, \"unit\": ", r->value);
                json_string(f, r->unit);
                fputs(i + 1 < b->n ? "},\n" : "}\n", f);
            }
            fputs("]\n", f);
            if (fclose(f) != 0) rc = errno;
            else fprintf(stderr, "bench: wrote %zu records to %s\n", b->n, b->json_path);
        }
    }
    free(b->recs);
    free(b->argv);
    free(b);
    return rc;
}

uint64_t qv_bench_xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

double qv_bench_unit(uint64_t *s) {
    return (double)(qv_bench_xorshift(s) >> 11) * (1.0 / 9007199254740992.0);
}

double qv_bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t qv_bench_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

void qv_bench_sink(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

int qv_bench_run_self(char *const args[], int keep_malloc_memory, char *out, size_t cap) {
    int fd[2];
    if (cap == 0 || pipe(fd)) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (keep_malloc_memory) {
            setenv("MALLOC_MMAP_THRESHOLD_", "1073741824", 1);
            setenv("MALLOC_TRIM_THRESHOLD_", "4294967296", 1);
        }
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t k;
    char sink[4096];
    /* Past cap, keep draining so a chatty child never blocks on the pipe. */
    while ((k = len < cap - 1 ? read(fd[0], out + len, cap - 1 - len) : read(fd[0], sink, sizeof sink)) > 0)
        if (len < cap - 1) len += (size_t)k;
    out[len] = 0;
    close(fd[0]);
    int status;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : (status ? status : -1);
}
