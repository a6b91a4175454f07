/* test_util.c - the small shared helpers of core/util.h: the TOKENTAP_*
 * switch reader (unset, empty and "0" are off; anything else is on) and
 * the decimal parsers' edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_flag),
        cmocka_unit_test(test_parse_u32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
