/* Base: error records, bit utilities, checksums, aligned allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/corrupt.h"
#include "base/dcheck.h"
#include "quiver/base.h"

static void test_error_set_and_wrap(void **state) {
    (void)state;
    struct qv_error e;
    qv_error_clear(&e);
    assert_int_equal(e.code, 0);
    assert_int_equal(qv_error_set(&e, EINVAL, "bad value %d", 42), EINVAL);
    assert_string_equal(e.message, "bad value 42");
    assert_int_equal(qv_error_wrap(&e, EIO, "column '%s': ", "x"), EINVAL);
    assert_string_equal(e.message, "column 'x': bad value 42");
    assert_int_equal(qv_error_set(NULL, EIO, "ignored"), EIO);
    assert_string_equal(qv_errno_name(ENOMEM), "ENOMEM");
    /* Errors of file operations have names too (EFBIG under ulimit -f was "E?"). */
    assert_string_equal(qv_errno_name(EFBIG), "EFBIG");
    assert_string_equal(qv_errno_name(EISDIR), "EISDIR");
    assert_string_equal(qv_errno_name(ENAMETOOLONG), "ENAMETOOLONG");
    assert_string_equal(qv_errno_name(EPERM), "EPERM");
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    qv_error_set(&e, EIO, "%s", big);
    qv_error_wrap(&e, EIO, "%s", big);
    assert_int_equal(strlen(e.message), QV_ERROR_MESSAGE_MAX - 1);
}

static void test_bits(void **state) {
    (void)state;
    uint8_t a[32] = {0}, b[32] = {0};
    qv_bits_fill(a, 3, 150, 1);
    assert_int_equal(qv_bits_count(a, 0, 256), 150);
    assert_int_equal(qv_bits_count(a, 3, 150), 150);
    assert_int_equal(qv_bit_get(a, 2), 0);
    assert_int_equal(qv_bit_get(a, 3), 1);
    assert_int_equal(qv_bit_get(a, 153), 0);
    qv_bits_copy(b, 5, a, 0, 200);
    for (int i = 0; i < 200; i++) assert_int_equal(qv_bit_get(b, i + 5), qv_bit_get(a, i));
    qv_bits_copy(b, 8, a, 16, 100);
    for (int i = 0; i < 100; i++) assert_int_equal(qv_bit_get(b, i + 8), qv_bit_get(a, i + 16));
    assert_int_equal(qv_bit_width64(0), 0);
    assert_int_equal(qv_bit_width64(1), 1);
    assert_int_equal(qv_bit_width64(UINT64_MAX), 64);
    assert_int_equal(qv_next_pow2_64(65), 128);
    assert_int_equal(qv_zigzag_decode64(qv_zigzag_encode64(INT64_MIN)), INT64_MIN);
    assert_int_equal(qv_zigzag_encode64(-1), 1);
    uint64_t out;
    assert_true(qv_add_overflow_u64(UINT64_MAX, 1, &out));
    assert_false(qv_mul_overflow_u64(1u << 20, 1u << 20, &out));
}

static void test_hash_and_aligned(void **state) {
    (void)state;
    const char *s = "quiver";
    assert_int_equal(qv_hash64(s, 6, 0), qv_hash64("quiver", 6, 0));
    assert_true(qv_hash64(s, 6, 0) != qv_hash64(s, 6, 1));
    assert_true(qv_hash64(s, 6, 0) != qv_hash64(s, 5, 0));
    void *p = qv_aligned_alloc(100);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % QV_ALIGNMENT, 0);
    qv_aligned_free(p);
    assert_null(qv_aligned_alloc(0));
    assert_int_equal(qv_align_up(65), 128);
    assert_int_equal(qv_align_up(SIZE_MAX), 0);
    assert_true(qv_cpu_count() >= 1);
}

/* Corruption is EIO of kind CORRUPT; marking keeps the message. */
static void test_corrupt_kind(void **state) {
    (void)state;
    struct qv_error err;
    assert_int_equal(qv__corrupt_set(&err, "bad %s at %d", "magic", 3), EIO);
    assert_int_equal(err.code, EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_string_equal(err.message, "bad magic at 3");
    assert_int_equal(qv__corrupt_set(NULL, "x"), EIO);
    /* A plain EIO is an I/O failure... */
    qv_error_set(&err, EIO, "read failed");
    assert_int_equal(err.kind, QV_ERROR_IO);
    /* ...and a lower layer's EINVAL about file bytes becomes corruption. */
    qv_error_set(&err, EINVAL, "bad format string");
    assert_int_equal(qv__corrupt_mark(&err), EIO);
    assert_int_equal(err.code, EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_string_equal(err.message, "bad format string");
    /* Wrapping keeps the kind. */
    qv_error_wrap(&err, EIO, "file 'x': ");
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
}

/* QV_DCHECK: in debug builds a false invariant prints where and aborts; in
 * release builds the expression is not even evaluated. */
static void test_dcheck(void **state) {
    (void)state;
    int evaluated = 0;
    QV_DCHECK((evaluated = 1) != 0);
#ifdef QV_DEBUG
    assert_int_equal(evaluated, 1);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10); /* the child carries its own deadline */
        dup2(fds[1], 2);
        close(fds[0]);
        int two = 2;
        QV_DCHECK(two + two == 5);
        _exit(0); /* not reached in a debug build */
    }
    close(fds[1]);
    char buf[512] = {0};
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_non_null(strstr(buf, "test_base.c:"));
    assert_non_null(strstr(buf, "QV_DCHECK(two + two == 5) failed"));
#else
    assert_int_equal(evaluated, 0);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_set_and_wrap),
        cmocka_unit_test(test_bits),
        cmocka_unit_test(test_hash_and_aligned),
        cmocka_unit_test(test_corrupt_kind),
        cmocka_unit_test(test_dcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
