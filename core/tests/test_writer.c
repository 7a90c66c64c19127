/* The writer's failure paths: abort, a full memory budget, allocation
 * failures at every allocation of a write and of a read, a rejected batch,
 * and a writer process killed mid-write. Nothing is ever left under the
 * final name unless finish succeeded. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "format/format_testing.h"
#include "memory/memory_testing.h"
#include "random_batch.h"
#include "test_util.h"

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Number of leftover temporary files next to `path`. */
static int temp_files(const char *path) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    const char *base = slash + 1;
    size_t bl = strlen(base);
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, base, bl) == 0 && strstr(e->d_name + bl, ".tmp.")) n++;
    closedir(d);
    return n;
}

/* Whether temporaries in `path`'s directory are unnamed (O_TMPFILE) when
 * the sink chooses. */
static int unnamed_temporaries(const char *path) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* With the sink's temporary file made as `mode` says (0: its choice, 1:
 * named). */
static void abort_leaves_nothing(int mode) {
    qv_sink_force_temporary(mode);
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    assert_int_equal(rb_all_types_schema(r, &s), 0);
    char path[512];
    tu_path(path, sizeof path, "aborted.qvr");
    unlink(path);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = 1024};
    assert_int_equal(qv_writer_open(path, s, &o, r, &w, NULL), 0);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.1, .max_list = 2, .max_string = 10};
    assert_int_equal(rb_batch(s, 3000, 1, &ro, r, &b), 0);
    assert_int_equal(qv_writer_write(w, &b, NULL), 0);
    /* Named while written, unless unnamed. */
    assert_int_equal(temp_files(path), mode == 1 || !unnamed_temporaries(path));
    qv_writer_abort(w);
    struct qv_error err;
    assert_int_equal(qv_writer_write(w, &b, &err), ECANCELED);
    qv_writer_close(w);
    assert_false(exists(path));
    assert_int_equal(temp_files(path), 0);
    /* Free without finish aborts too. */
    assert_int_equal(qv_writer_open(path, s, &o, r, &w, NULL), 0);
    assert_int_equal(qv_writer_write(w, &b, NULL), 0);
    qv_writer_close(w);
    assert_false(exists(path));
    assert_int_equal(temp_files(path), 0);
    b.release(&b);
    qv_schema_destroy(s);
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    qv_sink_force_temporary(0);
}

static void test_rejected_batch_keeps_writer_usable(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    assert_int_equal(rb_all_types_schema(r, &s), 0);
    char path[512];
    tu_path(path, sizeof path, "rejected.qvr");
    struct qv_writer *w;
    assert_int_equal(qv_writer_open(path, s, NULL, r, &w, NULL), 0);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.1, .max_list = 2, .max_string = 10};
    assert_int_equal(rb_batch(s, 10, 1, &ro, r, &b), 0);
    int64_t saved = b.n_children;
    b.n_children = 3; /* wrong shape */
    struct qv_error err;
    assert_int_equal(qv_writer_write(w, &b, &err), EINVAL);
    b.n_children = saved;
    assert_int_equal(qv_writer_write(w, &b, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    assert_true(exists(path));
    unlink(path);
    b.release(&b);
    qv_schema_destroy(s);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

static void test_full_budget_is_enomem_and_abortable(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r, *wr;
    struct qv_schema *s;
    struct qv_pool_options po = {.name = "tiny", .limit = 3u << 20, .block_size = 64 * 1024};
    assert_int_equal(qv_pool_create(&po, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    struct qv_reservation_options wo = {.name = "writer"};
    assert_int_equal(qv_reservation_create(p, &wo, &wr, NULL), 0);
    assert_int_equal(rb_all_types_schema(r, &s), 0);
    char path[512];
    tu_path(path, sizeof path, "budget.qvr");
    struct qv_writer *w;
    struct qv_error err;
    struct qv_writer_options o = {.row_group_rows = 1u << 20};
    assert_int_equal(qv_writer_open(path, s, &o, wr, &w, &err), 0);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.1, .max_list = 4, .max_string = 40};
    assert_int_equal(rb_batch(s, 2000, 3, &ro, r, &b), 0);
    int rc = 0;
    for (int i = 0; i < 200 && !rc; i++) rc = qv_writer_write(w, &b, &err);
    assert_int_equal(rc, ENOMEM);
    assert_non_null(strstr(err.message, "pool 'tiny'"));
    assert_int_equal(qv_writer_finish(w, &err), ENOMEM); /* failed writers stay failed */
    qv_writer_close(w);
    assert_false(exists(path));
    assert_int_equal(temp_files(path), 0);
    assert_int_equal(qv_reservation_used(wr), 0);
    b.release(&b);
    qv_schema_destroy(s);
    qv_reservation_destroy(wr);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

/* Allocation failure at every allocation of a whole write, then of a whole
 * read: each step fails cleanly, leaks nothing and leaves no file. */
static void test_injection_write_and_read(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    assert_int_equal(rb_all_types_schema(r, &s), 0);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.2, .max_list = 2, .max_string = 10};
    /* Two row groups (one full, one partial) of a small batch: every
     * allocation of the path is reached, and the builder's doubling from
     * its 64-row start stays short (each step of the loop replays the whole
     * write, so the loop is quadratic in the allocations). */
    assert_int_equal(rb_batch(s, 300, 5, &ro, r, &b), 0);
    uint64_t base = qv_reservation_used(r);
    char path[512];
    tu_path(path, sizeof path, "inject.qvr");
    unlink(path);
    int failures = 0;
    for (uint64_t n = 1;; n++) {
        qv_pool_inject_alloc_failure(p, n);
        struct qv_writer *w = NULL;
        struct qv_error err;
        struct qv_writer_options o = {.row_group_rows = 200};
        int rc = qv_writer_open(path, s, &o, r, &w, &err);
        if (!rc) rc = qv_writer_write(w, &b, &err);
        if (!rc) rc = qv_writer_finish(w, &err);
        qv_writer_close(w);
        if (!rc) break;
        assert_int_equal(rc, ENOMEM);
        assert_false(exists(path));
        assert_int_equal(temp_files(path), 0);
        assert_int_equal(qv_reservation_used(r), base);
        failures++;
    }
    assert_true(failures > 10);
    qv_pool_inject_alloc_failure(p, 0);
    failures = 0;
    for (uint64_t n = 1;; n++) {
        qv_pool_inject_alloc_failure(p, n);
        struct qv_reader *rd = NULL;
        struct qv_error err;
        int rc = qv_reader_open(path, NULL, r, &rd, &err);
        for (int64_t g = 0; !rc && g < qv_reader_num_row_groups(rd); g++) {
            struct ArrowArray got;
            rc = qv_reader_read_row_group(rd, g, NULL, 0, r, &got, &err);
            if (!rc) got.release(&got);
        }
        qv_reader_close(rd);
        if (!rc) break;
        if (rc != ENOMEM) fail_msg("read step %llu: %d %s", (unsigned long long)n, rc, err.message);
        assert_int_equal(qv_reservation_used(r), base);
        failures++;
    }
    assert_true(failures > 10);
    qv_pool_inject_alloc_failure(p, 0);
    unlink(path);
    b.release(&b);
    qv_schema_destroy(s);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

/* A writer process killed with SIGKILL mid-write leaves no file under the
 * final name; with unnamed temporaries it leaves nothing at all (else its
 * named temporary, which we then clean up). */
static void test_killed_writer_leaves_no_file(void **state) {
    (void)state;
    char path[512];
    tu_path(path, sizeof path, "killed.qvr");
    unlink(path);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        alarm(60); /* never outlives the test for long */
        struct qv_pool *p;
        struct qv_reservation *r;
        struct qv_schema *s;
        qv_pool_create(NULL, &p, NULL);
        qv_reservation_create(p, NULL, &r, NULL);
        rb_all_types_schema(r, &s);
        struct ArrowArray b;
        struct rb_options ro = {.null_prob = 0.1, .max_list = 2, .max_string = 10};
        rb_batch(s, 2048, 1, &ro, r, &b);
        struct qv_writer *w;
        struct qv_writer_options o = {.row_group_rows = 1024};
        if (qv_writer_open(path, s, &o, r, &w, NULL)) _exit(3);
        for (int i = 0;; i++) {
            if (qv_writer_write(w, &b, NULL)) _exit(4); /* never finishes */
            if (i == 20 && write(ready[1], "x", 1) != 1) _exit(5);
        }
    }
    close(ready[1]);
    /* Wait (at most 30 s) until the child has written real data, then kill it. */
    struct pollfd pfd = {.fd = ready[0], .events = POLLIN};
    int waited = poll(&pfd, 1, 30000);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    close(ready[0]);
    assert_int_equal(waited, 1);
    assert_true(WIFSIGNALED(status));
    assert_false(exists(path));
    if (unnamed_temporaries(path)) {
        assert_int_equal(temp_files(path), 0);
        return;
    }
    /* Clean the temporary the dead process left behind. */
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "killed.qvr.tmp.", 15) == 0) {
            char full[1024];
            snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
            unlink(full);
        }
    closedir(d);
}

static void test_abort_leaves_nothing(void **state) {
    (void)state;
    abort_leaves_nothing(0);
}

static void test_abort_leaves_nothing_named(void **state) {
    (void)state;
    abort_leaves_nothing(1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abort_leaves_nothing),
        cmocka_unit_test(test_abort_leaves_nothing_named),
        cmocka_unit_test(test_rejected_batch_keeps_writer_usable),
        cmocka_unit_test(test_full_budget_is_enomem_and_abortable),
        cmocka_unit_test(test_injection_write_and_read),
        cmocka_unit_test(test_killed_writer_leaves_no_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
