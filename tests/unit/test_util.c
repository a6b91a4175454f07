/* test_util.c - the small shared helpers of core/util.h: the TOKENTAP_*
 * switch reader (unset, empty and "0" are off; anything else is on), the
 * decimal parser's edges, array growth (sizes that overflow refused), and the
 * decimal writer against printf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define NAME "TOKENTAP_TEST_UTIL_SWITCH"

static void test_env_flag(void **state)
{
    (void)state;
    unsetenv(NAME);
    assert_false(tt_env_flag(NAME));
    static const struct { const char *value; bool on; } cases[] = {
        {"", false}, {"0", false}, {"1", true}, {"yes", true}, {"00", true}, {" 0", true}, {"true", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(NAME, cases[i].value, 1);
        assert_int_equal(tt_env_flag(NAME), cases[i].on);
    }
    unsetenv(NAME);
}

static void test_parse_u32(void **state)
{
    (void)state;
    uint32_t v = 7;
    assert_true(tt_parse_u32("0", 10, &v));
    assert_int_equal(v, 0);
    assert_true(tt_parse_u32("4294967295", UINT32_MAX, &v));
    assert_int_equal(v, UINT32_MAX);
    static const char *bad[] = {"", "-1", "+1", "11", "4294967296", "1x", " 1", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        assert_false(tt_parse_u32(bad[i], i == 4 || i == 7 ? UINT32_MAX : 10, &v));
    }
}

/* tt_u64_decimal against printf: around every power of ten (each digit
 * count, each step of its four-digit loop) and a spread of others. */
static void check_decimal(uint64_t v)
{
    char got[21], want[21];
    size_t n = tt_u64_decimal(v, got);
    got[n] = 0;
    snprintf(want, sizeof want, "%" PRIu64, v);
    assert_string_equal(got, want);
}

static void test_u64_decimal(void **state)
{
    (void)state;
    uint64_t p = 1;
    for (int digits = 1; digits <= 20; digits++) {
        check_decimal(p - 1);
        check_decimal(p);
        check_decimal(p + 1);
        check_decimal(p * 9 + (p - 1)); /* all nines of the next count */
        if (digits < 20) p *= 10;
    }
    check_decimal(UINT64_MAX);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        check_decimal(x >> (i % 64));
    }
}

static void test_grow(void **state)
{
    (void)state;
    size_t cap = 0;
    int *a = NULL;
    /* nothing asked of an empty array: success, nothing allocated */
    assert_int_equal(tt_grow(&a, &cap, 0, sizeof *a, 4), 0);
    assert_null(a);
    assert_int_equal(cap, 0);
    assert_int_equal(tt_grow(&a, &cap, 3, sizeof *a, 4), 0);
    assert_non_null(a);
    assert_int_equal(cap, 4);
    a[0] = 11;
    int *before = a;
    assert_int_equal(tt_grow(&a, &cap, 4, sizeof *a, 4), 0); /* room already */
    assert_ptr_equal(a, before);
    assert_int_equal(tt_grow(&a, &cap, 9, sizeof *a, 4), 0);
    assert_int_equal(cap, 16);
    assert_int_equal(a[0], 11);
    /* a size that overflows: -1, and nothing changed */
    before = a;
    assert_int_equal(tt_grow(&a, &cap, SIZE_MAX / 2, sizeof *a, 4), -1);
    assert_int_equal(tt_grow(&a, &cap, SIZE_MAX, 1, 4), -1);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 16);
    assert_int_equal(a[0], 11);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_flag),
        cmocka_unit_test(test_parse_u32),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_u64_decimal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
