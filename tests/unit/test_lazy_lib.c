/* test_lazy_lib.c - libraries loaded on first use (core/lazy_lib.h): the
 * symbols resolve to the library's own functions; a library that is not
 * there, or lacks a symbol, gives a one-line reason naming what needs it,
 * and the outcome of the first call stays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/lazy_lib.h"

static void test_loads_and_resolves(void **state)
{
    double (*my_cos)(double) = NULL;
    static const char *const names[] = {"libtokentap-no-such-library.so.9", "libm.so.6", NULL};
    const tt_lazy_sym syms[] = {{"cos", (void **)&my_cos}};
    tt_lazy_lib lib = {names, "a test", syms, 1, 0, ""};
    char err[200] = "untouched";
    assert_int_equal(tt_lazy_load(&lib, err, sizeof err), 0);
    assert_string_equal(err, "untouched"); /* no reason on success */
    assert_non_null(my_cos);
    assert_true(my_cos(0.0) == 1.0);
    volatile double x = 0.5;
    assert_true(my_cos(x) == cos(x));
    my_cos = NULL;
    assert_int_equal(tt_lazy_load(&lib, NULL, 0), 0); /* loaded once: the slots are not filled again */
    assert_null(my_cos);
}

static void test_missing_library(void **state)
{
    void *slot = NULL;
    static const char *const names[] = {"libtokentap-no-such-library.so.9", "libtokentap-nor-this.so", NULL};
    const tt_lazy_sym syms[] = {{"anything", &slot}};
    tt_lazy_lib lib = {names, "watch --frobnicate", syms, 1, 0, ""};
    char err[200] = "";
    assert_int_equal(tt_lazy_load(&lib, err, sizeof err), -1);
    assert_non_null(strstr(err, "libtokentap-no-such-library.so.9")); /* the first name's failure */
    assert_non_null(strstr(err, "(needed for watch --frobnicate)"));
    assert_null(strchr(err, '\n'));
    err[0] = 0;
    assert_int_equal(tt_lazy_load(&lib, err, sizeof err), -1); /* stays failed, and says so again */
    assert_non_null(strstr(err, "needed for watch --frobnicate"));
    assert_null(slot);
}

static void test_missing_symbol(void **state)
{
    void *a = NULL, *b = NULL;
    static const char *const names[] = {"libm.so.6", NULL};
    const tt_lazy_sym syms[] = {{"cos", &a}, {"tokentap_no_such_function", &b}};
    tt_lazy_lib lib = {names, "a test", syms, 2, 0, ""};
    char err[200] = "";
    assert_int_equal(tt_lazy_load(&lib, err, sizeof err), -1);
    assert_non_null(strstr(err, "libm.so.6 has no tokentap_no_such_function"));
    assert_non_null(strstr(err, "needed for a test"));
    assert_null(a); /* nothing half filled */
    assert_null(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_and_resolves),
        cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_missing_symbol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
