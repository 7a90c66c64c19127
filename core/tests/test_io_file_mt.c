/* File sinks (io_file.c) raced by threads: six threads open, write and
 * finish the same new path at once, in each way a sink makes its temporary
 * file (unnamed where the file system has them, named, unnamed whose
 * naming fails so that it is copied). Every finish succeeds, the file is
 * one writer's whole bytes and nothing else is left in the directory. Run
 * under ThreadSanitizer (label concurrency). */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "format/format_testing.h"
#include "test_util.h"

#define THREADS 6
#define ROUNDS 12
static char dir[512];
static pthread_barrier_t barrier;
static char base_path[700];
static _Atomic int failures;

static void *writer(void *arg) {
    int id = (int)(intptr_t)arg;
    size_t len = 70000 + (size_t)id * 1000;
    unsigned char *buf = malloc(len);
    if (!buf) {
        failures++;
        return NULL;
    }
    memset(buf, 'A' + id, len);
    for (int round = 0; round < ROUNDS; round++) {
        char path[720];
        snprintf(path, sizeof path, "%s-%d", base_path, round);
        struct qv_sink s;
        pthread_barrier_wait(&barrier);
        int ok = qv_sink_open_file(path, &s, NULL) == 0;
        if (ok) ok = qv_sink_write(&s, buf, len, NULL) == 0;
        pthread_barrier_wait(&barrier);
        if (ok) ok = qv_sink_finish(&s, NULL) == 0;
        if (!ok) failures++;
        qv_sink_close(&s);
    }
    free(buf);
    return NULL;
}

/* Entries of `dir`, and how many of them look like temporaries. */
static int entries(int *temporaries) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    *temporaries = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (strstr(e->d_name, ".tmp.")) ++*temporaries;
    }
    closedir(d);
    return n;
}

static void race(int mode) {
    qv_sink_force_temporary(mode);
    char name[32];
    snprintf(name, sizeof name, "/race%d", mode);
    snprintf(base_path, sizeof base_path, "%s%s", dir, name);
    failures = 0;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, THREADS), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    qv_sink_force_temporary(0);
    assert_int_equal(failures, 0);
    for (int round = 0; round < ROUNDS; round++) {
        char path[720];
        snprintf(path, sizeof path, "%s-%d", base_path, round);
        size_t n;
        unsigned char *back = tu_read_file(path, &n);
        assert_non_null(back);
        int id = back[0] - 'A';
        assert_true(id >= 0 && id < THREADS);
        assert_int_equal(n, 70000 + (size_t)id * 1000);
        for (size_t i = 0; i < n; i++) assert_int_equal(back[i], 'A' + id);
        free(back);
        assert_int_equal(unlink(path), 0);
    }
    int temporaries;
    assert_int_equal(entries(&temporaries), 0);
    assert_int_equal(temporaries, 0);
}

static void test_race_unnamed(void **state) {
    (void)state;
    race(0);
}

static void test_race_named(void **state) {
    (void)state;
    race(1);
}

static void test_race_copied(void **state) {
    (void)state;
    race(2);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

int main(void) {
    tu_path(dir, sizeof dir, "io-file-mt-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    alarm(300); /* a deadlock fails the test rather than hanging it */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race_unnamed),
        cmocka_unit_test(test_race_named),
        cmocka_unit_test(test_race_copied),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
