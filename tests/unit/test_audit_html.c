/* The audit's HTML page (audit_html.c) on hand-built cards: one HTML5
 * document, self-contained (no URL, no src/href, no script), every user
 * string escaped, no nan/inf anywhere, an SVG per plot, downsampled when
 * the samples are many, -1 on a write error. TT_AUDIT_HTML_DUMP=PATH
 * writes the page of the first test there (for tests/e2e/chromium_check.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"

#define INJECT "<script>alert(\"x\")</script>"

/* The page of card as a NUL-terminated string (free it); asserts a 0 return. */
static char *render(const tt_audit_card *card, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    assert_int_equal(tt_audit_write_html(f, card), 0);
    assert_int_equal(fclose(f), 0);
    if (len) *len = n;
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* The page references nothing outside itself. */
static void assert_self_contained(const char *page)
{
    char *copy = strdup(page);
    assert_non_null(copy);
    /* the SVG namespace is the one URL allowed (an identifier, never fetched) */
    static const char ns[] = "http://www.w3.org/2000/svg";
    for (char *p = strstr(copy, ns); p; p = strstr(p, ns)) memset(p, '_', sizeof ns - 1);
    for (char *p = copy; *p; p++) *p = (char)tolower((unsigned char)*p);
    static const char *const banned[] = {"http:", "https:", "src=", "href=", "url(", "@import", "<link",
                                         "<iframe", "<object", "<embed", "<img", "<script", "ftp:", "data:"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++) {
        if (strstr(copy, banned[i])) fail_msg("page contains %s", banned[i]);
    }
    free(copy);
}

/* No "nan" or "inf" (nor "infinity") as a word, in any case. */
static void assert_no_nonfinite(const char *page)
{
    static const char *const words[] = {"nan", "inf", "infinity"};
    for (size_t w = 0; w < 3; w++) {
        size_t len = strlen(words[w]);
        for (const char *p = page; *p; p++) {
            if (strncasecmp(p, words[w], len)) continue;
            int before = p > page && isalpha((unsigned char)p[-1]);
            int after = isalpha((unsigned char)p[len]);
            if (!before && !after) fail_msg("page prints %s at offset %zu: %.40s", words[w], (size_t)(p - page), p);
        }
    }
}

static void assert_html5(const char *page)
{
    assert_true(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    assert_non_null(strstr(page, "</html>"));
    assert_int_equal(count(page, "<svg"), count(page, "</svg>"));
    assert_true(count(page, "<svg") >= 3);
}

static int64_t *samples(size_t n, int64_t base, int64_t step)
{
    int64_t *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) v[i] = base + (int64_t)i * step;
    return v;
}

static void set_cell(tt_audit_cell *c, const char *profile, unsigned conc)
{
    memset(c, 0, sizeof *c);
    snprintf(c->profile, sizeof c->profile, "%s", profile);
    c->concurrency = conc;
    c->requests_asked = c->requests_sent = c->server_completed = c->records = c->records_matched = 16;
    c->reported_ok = 16;
    c->graded = true;
    snprintf(c->result_format, sizeof c->result_format, "vllm");
    c->tokens_reported = c->tokens_true = 256;
    c->itl_samples_reported = c->itl_samples_true = 240;
    c->err_ttft = (tt_audit_stat){16, 120000, 110000, 400000};
    c->err_itl = (tt_audit_stat){240, 1000, 900, 30000};
    c->err_tpot = (tt_audit_stat){16, 2000, 1500, 9000};
    c->err_e2el = (tt_audit_stat){16, 150000, 140000, 600000};
    c->send_lag = (tt_audit_overhead){16, 50000, 90000};
    c->client_lag = (tt_audit_overhead){16, 80000 * conc, 200000 * conc};
    c->within_tolerance = true;
}

static void free_cells(tt_audit_card *card)
{
    for (size_t k = 0; k < card->n_cells; k++) {
        tt_audit_cell *c = &card->cells[k];
        free(c->causes);
        free(c->ttft_err_ns);
        free(c->itl_reported_ns);
        free(c->itl_true_ns);
    }
    free(card->cells);
}

/* Four cells: ordinary, negative errors, no samples at all (and a failed
 * command), a single ITL sample with all-equal values. */
static void make_card(tt_audit_card *card)
{
    memset(card, 0, sizeof *card);
    snprintf(card->command, sizeof card->command,
             "vllm bench serve --base-url {url} --x '" INJECT "' --y \"a&b\" --z <in >out");
    card->ttft_ms = 20, card->itl_ms = 5, card->tokens = 16;
    card->tolerance_ms = 1, card->tolerance_pct = 5;
    snprintf(card->note, sizeof card->note, "profiles chosen by the paths <& \"requested\">");
    card->mis_measured = true;
    card->n_cells = 4;
    card->cells = calloc(4, sizeof *card->cells);
    assert_non_null(card->cells);

    tt_audit_cell *c = &card->cells[0];
    set_cell(c, "vllm", 1);
    c->n_ttft_err = 16, c->ttft_err_ns = samples(16, 100000, 7000);
    c->n_itl_reported = 240, c->itl_reported_ns = samples(240, 4900000, 1000);
    c->n_itl_true = 240, c->itl_true_ns = samples(240, 4950000, 900);

    c = &card->cells[1];
    set_cell(c, "tabby", 8);
    c->err_ttft = (tt_audit_stat){16, -3000000, -2500000, -9000000};
    c->err_e2el = (tt_audit_stat){16, -1000000, -900000, -2000000};
    c->within_tolerance = false;
    c->n_ttft_err = 16, c->ttft_err_ns = samples(16, -4000000, 250000);
    c->n_itl_reported = 200, c->itl_reported_ns = samples(200, -1000000, 60000);
    c->n_itl_true = 240, c->itl_true_ns = samples(240, 5000000, 0);
    c->n_causes = 2;
    c->causes = calloc(2, sizeof *c->causes);
    assert_non_null(c->causes);
    snprintf(c->causes[0].finding, sizeof c->causes[0].finding, "role-only-first-chunk");
    snprintf(c->causes[0].symptom, sizeof c->causes[0].symptom,
             "TTFT taken at the role chunk " INJECT ": 2.5 ms < true & \"early\"");
    c->causes[0].requests = 16;
    snprintf(c->causes[1].symptom, sizeof c->causes[1].symptom, "1 token too many > 'counted'");
    c->causes[1].requests = 1;

    c = &card->cells[2];
    set_cell(c, "responses", 1);
    c->graded = false, c->within_tolerance = false, c->cmd_status = 1;
    c->result_format[0] = 0;
    c->tokens_reported = c->itl_samples_reported = -1;
    c->err_ttft = c->err_itl = c->err_tpot = c->err_e2el = (tt_audit_stat){0};
    c->send_lag = c->client_lag = (tt_audit_overhead){0};
    snprintf(c->cmd_problem, sizeof c->cmd_problem, "exit 1: " INJECT " & no result file");

    c = &card->cells[3];
    set_cell(c, "anthropic", 64);
    c->n_ttft_err = 3, c->ttft_err_ns = samples(3, 700000, 0);
    c->n_itl_reported = 1, c->itl_reported_ns = samples(1, 5000000, 0);
    c->n_itl_true = 1, c->itl_true_ns = samples(1, 5000000, 0);
}

static void test_page(void **state)
{
    tt_audit_card card;
    make_card(&card);
    char *page = render(&card, NULL);
    const char *dump = getenv("TT_AUDIT_HTML_DUMP");
    if (dump) {
        FILE *f = fopen(dump, "w");
        assert_non_null(f);
        fputs(page, f);
        assert_int_equal(fclose(f), 0);
    }
    assert_html5(page);
    assert_int_equal(count(page, "<svg"), 2 + card.n_cells); /* scatter, overhead, a CDF per cell */
    assert_self_contained(page);
    assert_no_nonfinite(page);
    assert_null(strstr(page, "<script>alert"));
    assert_non_null(strstr(page, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
    assert_non_null(strstr(page, "&quot;a&amp;b&quot; --z &lt;in &gt;out"));
    assert_non_null(strstr(page, "2.5 ms &lt; true &amp; &quot;early&quot;"));
    assert_non_null(strstr(page, "&gt; &#39;counted&#39;"));
    assert_non_null(strstr(page, "paths &lt;&amp; &quot;requested&quot;&gt;"));
    assert_non_null(strstr(page, "<code>role-only-first-chunk</code>"));
    assert_non_null(strstr(page, "exit 1: &lt;script&gt;"));
    assert_non_null(strstr(page, "mis-measured"));
    assert_non_null(strstr(page, "no samples"));     /* the cell without samples */
    assert_non_null(strstr(page, "-2.500"));         /* negative errors keep their sign */
    assert_non_null(strstr(page, "+0.110"));
    for (size_t k = 0; k < card.n_cells; k++) assert_non_null(strstr(page, card.cells[k].profile));
    free(page);
    free_cells(&card);
}

/* Many samples, extreme values: the page stays small and finite. */
static void test_downsampled_extremes(void **state)
{
    tt_audit_card card;
    memset(&card, 0, sizeof card);
    snprintf(card.command, sizeof card.command, "bench");
    card.n_cells = 2;
    card.cells = calloc(2, sizeof *card.cells);
    assert_non_null(card.cells);
    set_cell(&card.cells[0], "vllm", 256);
    set_cell(&card.cells[1], "ollama", 512);
    for (int k = 0; k < 2; k++) {
        tt_audit_cell *c = &card.cells[k];
        size_t n = 100000;
        c->n_ttft_err = n, c->ttft_err_ns = samples(n, -50000000, 997);
        c->n_itl_reported = n, c->itl_reported_ns = samples(n, 1000, 13);
        c->n_itl_true = n, c->itl_true_ns = samples(n, 0, 0);
        c->ttft_err_ns[n / 2] = INT64_MAX, c->ttft_err_ns[n / 3] = INT64_MIN;
        c->itl_reported_ns[7] = INT64_MAX, c->itl_true_ns[9] = INT64_MIN;
    }
    card.cells[1].err_itl = (tt_audit_stat){5, 0.0 / 0.0, 1.0 / 0.0, -1.0 / 0.0};
    card.cells[1].client_lag = (tt_audit_overhead){5, 0.0 / 0.0, 1e300};
    card.ttft_ms = 1.0 / 0.0;
    size_t len;
    char *page = render(&card, &len);
    assert_html5(page);
    assert_self_contained(page);
    assert_no_nonfinite(page);
    assert_true(len < 300000);
    assert_true(count(page, "<circle") <= 2100);
    free(page);
    free_cells(&card);
}

static void test_empty_card(void **state)
{
    tt_audit_card card;
    memset(&card, 0, sizeof card);
    char *page = render(&card, NULL);
    assert_html5(page);
    assert_self_contained(page);
    assert_no_nonfinite(page);
    assert_non_null(strstr(page, "no samples"));
    assert_non_null(strstr(page, ">ok<"));
    free(page);
}

static void test_write_error(void **state)
{
    tt_audit_card card;
    memset(&card, 0, sizeof card);
    FILE *f = fopen("/dev/null", "r"); /* writes fail and set the error flag */
    assert_non_null(f);
    assert_int_equal(tt_audit_write_html(f, &card), -1);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_downsampled_extremes),
        cmocka_unit_test(test_empty_card),
        cmocka_unit_test(test_write_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
