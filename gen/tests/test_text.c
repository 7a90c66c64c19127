/* The comment grammar (gen/src/text.c): exact lengths, no blank at either
 * end, only the grammar's characters, a pure function of the seed, and
 * never more than the buffer holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "text.h"

static void test_lengths_and_alphabet(void **state) {
    (void)state;
    for (uint64_t seed = 0; seed < 20000; seed++) {
        size_t len = (size_t)(seed % 120);
        char buf[128];
        memset(buf, 'X', sizeof buf);
        assert_int_equal(qvgen__text_generate(seed * 0x9E3779B97F4A7C15u, len, buf, sizeof buf), len);
        assert_int_equal(strlen(buf), len);
        if (len) {
            assert_true(buf[0] != ' ');
            assert_true(buf[len - 1] != ' ');
        }
        for (size_t k = 0; k < len; k++)
            assert_true((buf[k] >= 'a' && buf[k] <= 'z') || strchr(" ,.;:?!-", buf[k]));
    }
}

static void test_deterministic(void **state) {
    (void)state;
    char a[64], b[64];
    int differ = 0;
    for (uint64_t seed = 1; seed < 1000; seed++) {
        qvgen__text_generate(seed, 43, a, sizeof a);
        qvgen__text_generate(seed, 43, b, sizeof b);
        assert_string_equal(a, b);
        qvgen__text_generate(seed + 1, 43, b, sizeof b);
        differ += strcmp(a, b) != 0;
    }
    /* Neighbouring seeds give different text (a few may collide). */
    assert_true(differ > 990);
}

static void test_capped(void **state) {
    (void)state;
    char small[8];
    memset(small, 'X', sizeof small);
    /* A length beyond the buffer is cut to what fits, terminator included. */
    assert_int_equal(qvgen__text_generate(7, 100, small, sizeof small), sizeof small - 1);
    assert_int_equal(strlen(small), sizeof small - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths_and_alphabet),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
