/* The JSON writer's numbers and indentation: integers written by hand
 * (not printf) read as printf writes them, at both ends of their range,
 * and the pretty form's indent at every depth it allows; its own buffer:
 * strings and runs of values across its boundary at every offset near it,
 * flushes and the FILE written directly in between, the outermost close
 * handing everything over. */
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

/* s escaped as JSON, written the long way, at *n of out. */
static void escape_ref(char *out, size_t *n, const char *s, size_t len)
{
    out[(*n)++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') *n += (size_t)sprintf(out + *n, "\\\"");
        else if (c == '\\') *n += (size_t)sprintf(out + *n, "\\\\");
        else if (c == '\n') *n += (size_t)sprintf(out + *n, "\\n");
        else if (c == '\r') *n += (size_t)sprintf(out + *n, "\\r");
        else if (c == '\t') *n += (size_t)sprintf(out + *n, "\\t");
        else if (c < 0x20 || c == 0x7f) *n += (size_t)sprintf(out + *n, "\\u%04x", c);
        else out[(*n)++] = (char)c;
    }
    out[(*n)++] = '"';
}

static void test_buffer_boundaries(void **state)
{
    (void)state;
    /* a string of every length near one and two buffers, behind a prefix
     * that moves where in the buffer it starts */
    static const char pool[] = "abc\"def\\gh\n\x01ij\x7fkl\tmn\ropqrstuvwxyz0123456789";
    size_t big = 3 * TT_JW_BUF + 7;
    char *text = malloc(big);
    for (size_t i = 0; i < big; i++) text[i] = pool[(i * 7 + i / 5) % (sizeof pool - 1)];
    char *want = malloc(16 * big + 4096);
    for (size_t shift = 0; shift < 24; shift += 5) {
        for (size_t len = TT_JW_BUF - 12; len <= TT_JW_BUF + 12; len += 3) {
            for (int way = 0; way < 3; way++) { /* 0: plain; 1: flush after each value; 2: the FILE written between */
                char *buf = NULL;
                size_t got = 0, n = 0;
                FILE *f = open_memstream(&buf, &got);
                assert_non_null(f);
                tt_jw w;
                tt_jw_init(&w, f, false);
                tt_jw_array_begin(&w, NULL);
                want[n++] = '[';
                tt_jw_strn(&w, NULL, text, shift);
                escape_ref(want, &n, text, shift);
                for (size_t k = 0; k < 3; k++) {
                    size_t l = k == 2 ? big : len + k;
                    tt_jw_int(&w, NULL, -(int64_t)(l * 1000003));
                    n += (size_t)sprintf(want + n, ",%" PRId64, -(int64_t)(l * 1000003));
                    if (way == 1) tt_jw_flush(&w);
                    if (way == 2) {
                        tt_jw_flush(&w);
                        fputs(",7", f);
                        w.need_comma[w.depth] = true;
                        n += (size_t)sprintf(want + n, ",7");
                    }
                    tt_jw_strn(&w, NULL, text + k, l - k);
                    want[n++] = ',';
                    escape_ref(want, &n, text + k, l - k);
                }
                tt_jw_array_end(&w); /* the outermost close: everything reaches the FILE */
                want[n++] = ']';
                want[n] = 0;
                assert_int_equal(fflush(f), 0);
                assert_int_equal(got, n);
                assert_memory_equal(buf, want, n);
                fclose(f);
                free(buf);
            }
        }
    }
    free(want);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_indent_every_depth),
        cmocka_unit_test(test_buffer_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
