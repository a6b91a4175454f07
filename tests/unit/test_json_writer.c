/* The JSON writer's numbers and indentation: integers written by hand
 * (not printf) read as printf writes them, at both ends of their range,
 * and the pretty form's indent at every depth it allows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/json_writer.h"

static void test_integers(void **state)
{
    (void)state;
    static const int64_t ints[] = {0, 1, -1, 9, 10, -10, 1234567890123, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    static const uint64_t uints[] = {0, 7, 10, 99, 100, 18446744073709551615u, 10000000000000000000u};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    tt_jw w;
    tt_jw_init(&w, f, false);
    tt_jw_array_begin(&w, NULL);
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) tt_jw_int(&w, NULL, ints[i]);
    for (size_t i = 0; i < sizeof uints / sizeof *uints; i++) tt_jw_uint(&w, NULL, uints[i]);
    tt_jw_array_end(&w);
    fclose(f);
    char want[1024];
    size_t n = (size_t)snprintf(want, sizeof want, "[");
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        n += (size_t)snprintf(want + n, sizeof want - n, "%s%" PRId64, i ? "," : "", ints[i]);
    for (size_t i = 0; i < sizeof uints / sizeof *uints; i++)
        n += (size_t)snprintf(want + n, sizeof want - n, ",%" PRIu64, uints[i]);
    snprintf(want + n, sizeof want - n, "]");
    assert_string_equal(buf, want);
    free(buf);
}

static void test_indent_every_depth(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    tt_jw w;
    tt_jw_init(&w, f, true);
    int levels = TT_JW_MAX_DEPTH - 1;
    for (int d = 0; d < levels; d++) tt_jw_array_begin(&w, NULL);
    tt_jw_int(&w, NULL, 5);
    for (int d = 0; d < levels; d++) tt_jw_array_end(&w);
    fclose(f);
    /* the same document, indented the long way */
    char *want = malloc(65536);
    size_t n = 0;
    for (int d = 0; d < levels; d++) {
        if (d) {
            want[n++] = '\n';
            for (int i = 0; i < d; i++) n += (size_t)sprintf(want + n, "  ");
        }
        want[n++] = '[';
    }
    want[n++] = '\n';
    for (int i = 0; i < levels; i++) n += (size_t)sprintf(want + n, "  ");
    want[n++] = '5';
    for (int d = levels - 1; d >= 0; d--) {
        want[n++] = '\n';
        for (int i = 0; i < d; i++) n += (size_t)sprintf(want + n, "  ");
        want[n++] = ']';
    }
    want[n] = 0;
    assert_string_equal(buf, want);
    free(want);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_indent_every_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
