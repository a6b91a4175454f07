/* The JSON writer's numbers and indentation: integers written by hand
 * (not printf) read as printf writes them, at both ends of their range
 * and of every digit count; strings escaped by core/json_escape.h's rule
 * (the writer's and tt_sbuf_json_str's against a byte-at-a-time reference,
 * every byte value at every place around the 8-byte steps);
 * the pretty form's indent at every depth it allows; its own buffer:
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

#include "core/sbuf.h"
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

/* The values just below, at and above every power of ten, and a spread
 * of others, as printf writes them. */
static void test_every_digit_count(void **state)
{
    (void)state;
    char *got = NULL, *want = NULL;
    size_t got_len = 0, want_len = 0;
    FILE *g = open_memstream(&got, &got_len), *f = open_memstream(&want, &want_len);
    assert_non_null(g);
    assert_non_null(f);
    tt_jw w;
    tt_jw_init(&w, g, false);
    tt_jw_array_begin(&w, NULL);
    fputc('[', f);
    bool first = true;
    uint64_t p = 1;
    for (int digits = 1; digits <= 20; digits++) {
        uint64_t around[] = {p - 1, p, p + 1, p * 2 - 1, p + p / 2};
        for (size_t i = 0; i < sizeof around / sizeof *around; i++) {
            tt_jw_uint(&w, NULL, around[i]);
            fprintf(f, "%s%" PRIu64, first ? "" : ",", around[i]);
            first = false;
        }
        if (digits < 20) p *= 10;
    }
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = x >> (i % 64);
        tt_jw_uint(&w, NULL, v);
        tt_jw_int(&w, NULL, -(int64_t)(v >> 1));
        fprintf(f, ",%" PRIu64 ",%" PRId64, v, -(int64_t)(v >> 1));
    }
    tt_jw_array_end(&w);
    fputc(']', f);
    fclose(g);
    fclose(f);
    assert_string_equal(got, want);
    free(got);
    free(want);
}

/* The rule, a byte at a time: what core/json_escape.h's word steps must
 * agree with. */
static void reference_escape(FILE *f, const unsigned char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"') fputs("\\\"", f);
        else if (c == '\\') fputs("\\\\", f);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* One string through the writer, through tt_sbuf_json_str and through the
 * reference; all three the same. */
static void check_escaped(const unsigned char *s, size_t n)
{
    char *got = NULL, *want = NULL;
    size_t got_len = 0, want_len = 0;
    FILE *g = open_memstream(&got, &got_len), *f = open_memstream(&want, &want_len);
    assert_non_null(g);
    assert_non_null(f);
    tt_jw w;
    tt_jw_init(&w, g, false);
    tt_jw_strn(&w, NULL, (const char *)s, n);
    tt_jw_flush(&w);
    fclose(g);
    reference_escape(f, s, n);
    fclose(f);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    tt_sbuf b = {0};
    tt_sbuf_json_str(&b, (const char *)s, n);
    assert_false(b.oom);
    assert_int_equal(b.len, want_len);
    assert_memory_equal(b.p, want, want_len);
    tt_sbuf_free(&b);
    free(got);
    free(want);
}

static void test_escaping(void **state)
{
    (void)state;
    unsigned char s[40];
    /* every byte value alone at every place of strings up to 33 bytes,
     * in plain text and in text of bytes >= 0x80 (UTF-8 passes as it is) */
    for (size_t n = 0; n <= 33; n++) {
        for (int fill = 0; fill < 2; fill++) {
            for (size_t i = 0; i < n; i++) s[i] = fill ? (unsigned char)(0x80 + i) : (unsigned char)('a' + i % 26);
            check_escaped(s, n);
            for (size_t at = 0; at < n; at++) {
                unsigned char keep = s[at];
                for (int c = 0; c < 256; c++) {
                    s[at] = (unsigned char)c;
                    check_escaped(s, n);
                }
                s[at] = keep;
            }
        }
    }
    /* two at once, in every pair of places of a 17-byte string: a byte
     * that needs no escape beside one that does, in one 8-byte step */
    static const unsigned char specials[] = {0, 0x1f, '"', '\\', 0x7f, 0x20, '!', '[', ']', 0x80, 0xff, 0x21, 0x5b};
    for (size_t a = 0; a < 17; a++)
        for (size_t b = a + 1; b < 17; b++)
            for (size_t i = 0; i < sizeof specials; i++)
                for (size_t j = 0; j < sizeof specials; j++) {
                    memset(s, 'x', 17);
                    s[a] = specials[i];
                    s[b] = specials[j];
                    check_escaped(s, 17);
                }
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
        cmocka_unit_test(test_every_digit_count),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_indent_every_depth),
        cmocka_unit_test(test_buffer_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
