/* audit grading (userspace/audit/): hand-written serve logs, run reports
 * and vllm result files with known instants; the errors, counts and causes
 * the card must show are computed here from those instants, not by
 * tokentap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/audit_internal.h"

#define N_REQ 3
#define N_TOK 4
#define REQ_FIRST 900000LL      /* the tool's request at the client socket */
#define READ_NS 1000000LL       /* serve read it */
#define TOKEN0 21000000LL       /* serve's first token write */
#define GAP 5000000LL           /* serve's ITL */

/* the client socket saw the last request cut short (complete: false) */
static bool last_incomplete;

typedef struct fixture {
    char dir[64], log[128], report[128], result[128];
} fixture;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* serve's log: N_REQ requests, each on its own connection, N_TOK tokens
 * GAP apart after a role event, then [DONE] (events: role, tokens, done). */
static void write_serve_log(const fixture *fx, int only_ended)
{
    FILE *f = fopen(fx->log, "w");
    assert_non_null(f);
    fprintf(f, "{\"type\":\"clock\",\"mono_ns\":1,\"realtime_ns\":2}\n");
    for (int r = 0; r < N_REQ; r++) {
        fprintf(f, "{\"type\":\"request\",\"request_read_ns\":%lld,\"peer\":\"127.0.0.1:%d\",\"ordinal\":1,"
                   "\"request_id\":\"p-%d\",\"method\":\"POST\",\"path\":\"/v1/chat/completions\",\"status\":200,"
                   "\"stream\":true,\"tokens\":%d,\"prompt_tokens\":1,\"finish_reason\":\"length\",\"events\":%d}\n",
                READ_NS, 40000 + r, r, N_TOK, N_TOK + 2);
        fprintf(f, "{\"type\":\"write\",\"mono_ns\":%lld,\"peer\":\"127.0.0.1:%d\",\"ordinal\":1,\"events\":[[0,\"role\"]]}\n",
                TOKEN0 - 1000, 40000 + r);
        for (int k = 0; k < N_TOK; k++)
            fprintf(f, "{\"type\":\"write\",\"mono_ns\":%lld,\"peer\":\"127.0.0.1:%d\",\"ordinal\":1,"
                       "\"events\":[[%d,\"token\"]]}\n", TOKEN0 + k * GAP, 40000 + r, k + 1);
        if (!only_ended || r != N_REQ - 1)
            fprintf(f, "{\"type\":\"write\",\"mono_ns\":%lld,\"peer\":\"127.0.0.1:%d\",\"ordinal\":1,"
                       "\"events\":[[%d,\"done\"]]}\n", TOKEN0 + (N_TOK - 1) * GAP + 10, 40000 + r, N_TOK + 1);
    }
    fprintf(f, "{\"type\":\"write\",\"mono_ns\":1,\"peer\":\"nowhere:1\",\"ordinal\":9,\"events\":[]}\n");
    fprintf(f, "{\"type\":\"wri"); /* a log cut mid-line */
    fclose(f);
}

/* run's joined report: each request at the client socket with its record;
 * role_ttft marks the records whose TTFT came at the role chunk. */
static void write_run_report(const fixture *fx, const int64_t *send_lag, const int64_t *client_lag, bool role_ttft,
                             const char *finding)
{
    FILE *f = fopen(fx->report, "w");
    assert_non_null(f);
    fprintf(f, "{\"requests\": [");
    for (int r = 0; r < N_REQ; r++) {
        fprintf(f, "%s{\"request_id\":\"p-%d\",\"connection\":{\"client\":\"127.0.0.1:%d\",\"server\":\"127.0.0.1:80\","
                   "\"ordinal\":0},\"method\":\"POST\",\"path\":\"/v1/chat/completions\",\"complete\":%s,"
                   "\"vantages\":{\"client\":{\"token_events\":%d,\"req_first_mono_ns\":%lld,"
                   "\"resp_headers_mono_ns\":%lld,\"first_event_mono_ns\":%lld,\"first_token_mono_ns\":%lld}},"
                   "\"reported\":{\"index\":%d,\"start_mono_ns\":%lld},"
                   "\"decomposition\":{\"send_lag_ns\":%lld,\"client_lag_ns\":%lld,\"client_queue_ns\":%s,"
                   "\"itl\":{\"shared_read_events\":0}},"
                   "\"disagreements\":[%s]}",
                r ? "," : "", r, 40000 + r, last_incomplete && r == N_REQ - 1 ? "false" : "true", N_TOK, REQ_FIRST, READ_NS + 100, TOKEN0, TOKEN0 + 20, r,
                REQ_FIRST - send_lag[r], (long long)send_lag[r], (long long)client_lag[r],
                r == 0 ? "null" : r == 1 ? "7000" : "9000", /* the first one's ready instant unknown */
                role_ttft ? "{\"kind\":\"ttft-at-non-token-event\",\"vantage\":\"client\",\"event_kind\":\"ROLE\","
                            "\"early_ns\":1020}" : "");
    }
    fprintf(f, "], \"findings\": [");
    if (finding)
        for (int r = 0; r < N_REQ; r++)
            fprintf(f, "%s{\"id\":\"%s\",\"joined_request\":%d}", r ? "," : "", finding, r);
    fprintf(f, "]}\n");
    fclose(f);
}

/* the tool's vllm result: ttft[r], e2el[r], n_tok[r] tokens, n_itl[r] ITLs of itl_ns each */
static void write_result(const fixture *fx, const int64_t *ttft, const int64_t *e2el, const int *n_tok,
                         const int *n_itl, int64_t itl_ns, const bool *ok)
{
    FILE *f = fopen(fx->result, "w");
    assert_non_null(f);
    fprintf(f, "{\"date\":\"20250101-000000\",\"backend\":\"openai-chat\",\"num_prompts\":%d,\"completed\":%d,"
               "\"failed\":0,\"input_lens\":[", N_REQ, N_REQ);
    for (int r = 0; r < N_REQ; r++) fprintf(f, "%s10", r ? "," : "");
    fprintf(f, "],\"output_lens\":[");
    for (int r = 0; r < N_REQ; r++) fprintf(f, "%s%d", r ? "," : "", ok[r] ? n_tok[r] : 0);
    fprintf(f, "],\"ttfts\":[");
    for (int r = 0; r < N_REQ; r++) fprintf(f, "%s%.9f", r ? "," : "", ok[r] ? ttft[r] / 1e9 : 0.0);
    fprintf(f, "],\"latencies\":[");
    for (int r = 0; r < N_REQ; r++) fprintf(f, "%s%.9f", r ? "," : "", ok[r] ? e2el[r] / 1e9 : 0.0);
    fprintf(f, "],\"start_times\":[");
    for (int r = 0; r < N_REQ; r++) fprintf(f, "%s%.9f", r ? "," : "", (REQ_FIRST - 1000) / 1e9);
    fprintf(f, "],\"itls\":[");
    for (int r = 0; r < N_REQ; r++) {
        fprintf(f, "%s[", r ? "," : "");
        for (int k = 0; ok[r] && k < n_itl[r]; k++) fprintf(f, "%s%.9f", k ? "," : "", itl_ns / 1e9);
        fprintf(f, "]");
    }
    fprintf(f, "],\"errors\":[");
    for (int r = 0; r < N_REQ; r++) fprintf(f, "%s\"%s\"", r ? "," : "", ok[r] ? "" : "no token seen");
    fprintf(f, "]}\n");
    fclose(f);
}

/* A tool whose every request succeeded, with TTFT = ttft_ns and the true
 * E2EL, counting extra tokens and extra ITL samples (each itl_ns) beyond
 * the truth. */
static void write_uniform_result(const fixture *fx, int64_t ttft_ns, int extra, int64_t itl_ns)
{
    int64_t ttft[N_REQ], e2el[N_REQ];
    int n_tok[N_REQ], n_itl[N_REQ];
    bool ok[N_REQ];
    for (int r = 0; r < N_REQ; r++) {
        ttft[r] = ttft_ns;
        e2el[r] = TOKEN0 + (N_TOK - 1) * GAP - REQ_FIRST;
        n_tok[r] = N_TOK + extra;
        n_itl[r] = N_TOK - 1 + extra;
        ok[r] = true;
    }
    write_result(fx, ttft, e2el, n_tok, n_itl, itl_ns, ok);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/tt-test-audit.XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    snprintf(fx->log, sizeof fx->log, "%s/serve.jsonl", fx->dir);
    snprintf(fx->report, sizeof fx->report, "%s/run.json", fx->dir);
    snprintf(fx->result, sizeof fx->result, "%s/result.json", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    unlink(fx->log);
    unlink(fx->report);
    unlink(fx->result);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static tt_cell_inputs inputs(const fixture *fx)
{
    return (tt_cell_inputs){.run_report = fx->report, .result_path = fx->result, .serve_log = fx->log,
                            .tolerance_ms = 1, .tolerance_pct = 5};
}

static const tt_audit_cause *cause(const tt_audit_cell *c, const char *finding)
{
    for (size_t i = 0; i < c->n_causes; i++)
        if (!strcmp(c->causes[i].finding, finding)) return &c->causes[i];
    return NULL;
}

/* A tool off by known amounts: the errors are exactly those amounts. */
static void test_errors_exact(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    const int64_t send_lag[N_REQ] = {100000, 300000, 200000}, client_lag[N_REQ] = {50000, 50000, 80000};
    write_run_report(fx, send_lag, client_lag, false, NULL);
    int64_t true_ttft = TOKEN0 - REQ_FIRST, true_e2el = TOKEN0 + (N_TOK - 1) * GAP - REQ_FIRST;
    const int64_t off[N_REQ] = {250000, 400000, -100000};
    int64_t ttft[N_REQ], e2el[N_REQ];
    for (int r = 0; r < N_REQ; r++) ttft[r] = true_ttft + off[r], e2el[r] = true_e2el + off[r];
    const int n_tok[N_REQ] = {N_TOK, N_TOK, N_TOK}, n_itl[N_REQ] = {N_TOK - 1, N_TOK - 1, N_TOK - 1};
    const bool ok[N_REQ] = {true, true, true};
    write_result(fx, ttft, e2el, n_tok, n_itl, GAP + 2000, ok);

    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_string_equal(c.cmd_problem, "");
    assert_true(c.graded);
    assert_int_equal(c.requests_sent, N_REQ);
    assert_int_equal(c.server_completed, N_REQ);
    assert_int_equal(c.records_matched, N_REQ);
    assert_int_equal(c.reported_ok, N_REQ);
    assert_int_equal(c.tokens_reported, N_REQ * N_TOK);
    assert_int_equal(c.tokens_true, N_REQ * N_TOK);
    assert_int_equal(c.itl_samples_reported, N_REQ * (N_TOK - 1));
    assert_int_equal(c.itl_samples_true, N_REQ * (N_TOK - 1));
    /* reported minus true: the offsets (to the ns the result file's 9 decimals keep) */
    assert_int_equal(c.err_ttft.n, N_REQ);
    assert_true(fabs(c.err_ttft.mean - (250000 + 400000 - 100000) / 3.0) < 2);
    assert_true(fabs(c.err_ttft.median - 250000) < 2);
    assert_true(fabs(c.err_e2el.median - 250000) < 2);
    assert_true(fabs(c.err_itl.median - 2000) < 2);
    assert_true(fabs(c.err_tpot.median - 0) < 2);
    assert_true(fabs(c.send_lag.median - 200000) < 1);
    assert_true(fabs(c.client_lag.median - 50000) < 1);
    assert_int_equal(c.client_queue.n, 2); /* where the breakdown had it; never guessed for the first */
    assert_true(fabs(c.client_queue.median - 8000) < 1);
    assert_true(fabs(c.downlink.median - 20) < 1); /* the client read the first token 20 ns after serve wrote it */
    assert_int_equal(c.n_ttft_err, N_REQ);
    assert_int_equal(c.n_itl_true, N_REQ * (N_TOK - 1));
    assert_true(c.within_tolerance);
    assert_int_equal(c.n_causes, 0);
    tt_audit_cell_free(&c);
}

/* Off by 1.2 ms, made of two parts of 0.6 ms, neither over the 1 ms
 * tolerance: no part is named alone, the means that add up are. */
static void test_overhead_in_parts(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    const int64_t send_lag[N_REQ] = {600000, 600000, 600000}, client_lag[N_REQ] = {600000, 600000, 600000};
    write_run_report(fx, send_lag, client_lag, false, NULL);
    int64_t true_ttft = TOKEN0 - REQ_FIRST, true_e2el = TOKEN0 + (N_TOK - 1) * GAP - REQ_FIRST;
    int64_t ttft[N_REQ], e2el[N_REQ];
    for (int r = 0; r < N_REQ; r++) ttft[r] = true_ttft + 1200000, e2el[r] = true_e2el + 1200000;
    const int n_tok[N_REQ] = {N_TOK, N_TOK, N_TOK}, n_itl[N_REQ] = {N_TOK - 1, N_TOK - 1, N_TOK - 1};
    const bool ok[N_REQ] = {true, true, true};
    write_result(fx, ttft, e2el, n_tok, n_itl, GAP, ok);
    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_false(c.within_tolerance);
    assert_int_equal(c.n_causes, 1);
    assert_non_null(strstr(c.causes[0].symptom, "TTFT off by +1.200 ms at the median"));
    assert_non_null(strstr(c.causes[0].symptom, "send lag 0.600 ms, downlink (network + queue) 0.000 ms, client lag 0.600 ms"));
    tt_audit_cell_free(&c);
}

/* TTFT at the role chunk, counted as a token: the cause, with both counts. */
static void test_role_chunk(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    const int64_t lag[N_REQ] = {0, 0, 0};
    write_run_report(fx, lag, lag, true, "role-only-first-chunk");
    write_uniform_result(fx, TOKEN0 - 1000 - REQ_FIRST, 1, GAP);
    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_int_equal(c.tokens_reported, N_REQ * (N_TOK + 1));
    assert_int_equal(c.itl_samples_reported, N_REQ * N_TOK);
    assert_false(c.within_tolerance);
    const tt_audit_cause *k = cause(&c, "role-only-first-chunk");
    assert_non_null(k);
    assert_int_equal(k->requests, N_REQ);
    assert_non_null(strstr(k->symptom, "one output token too many (3 requests)"));
    assert_non_null(strstr(k->symptom, "one ITL sample too many (3 requests)"));
    tt_audit_cell_free(&c);
}

/* The role chunk shared its read with the first token (no TTFT evidence):
 * one token and one ITL too many, and the tool's first ITL a sliver, name
 * it; the same counts with an ordinary first ITL name nothing. */
static void test_role_chunk_coalesced(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    const int64_t lag[N_REQ] = {0, 0, 0};
    write_run_report(fx, lag, lag, false, "role-only-first-chunk");
    int64_t ttft[N_REQ], e2el[N_REQ];
    int n_tok[N_REQ], n_itl[N_REQ];
    bool ok[N_REQ];
    for (int r = 0; r < N_REQ; r++) {
        ttft[r] = TOKEN0 - REQ_FIRST, e2el[r] = TOKEN0 + (N_TOK - 1) * GAP - REQ_FIRST;
        n_tok[r] = N_TOK + 1, n_itl[r] = N_TOK, ok[r] = true;
    }
    /* write_result gives every gap the same value: a sliver everywhere */
    write_result(fx, ttft, e2el, n_tok, n_itl, 3000, ok);
    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    const tt_audit_cause *k = cause(&c, "role-only-first-chunk");
    assert_non_null(k);
    assert_non_null(strstr(k->symptom, "timed as a token: one output token too many (3 requests) and one ITL sample"));
    assert_null(strstr(k->symptom, "TTFT taken"));
    tt_audit_cell_free(&c);

    write_uniform_result(fx, TOKEN0 - REQ_FIRST, 1, GAP);
    memset(&c, 0, sizeof c);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_null(cause(&c, "role-only-first-chunk"));
    assert_false(c.within_tolerance);
    assert_true(c.n_causes >= 1); /* the wrong counts, said without a finding */
    tt_audit_cell_free(&c);
}

/* TTFT stamped at the response headers (curl's time_starttransfer). */
static void test_headers_ttft(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    const int64_t lag[N_REQ] = {0, 0, 0};
    write_run_report(fx, lag, lag, false, NULL);
    write_uniform_result(fx, READ_NS + 100 + 50000 - REQ_FIRST, 0, GAP);
    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_false(c.within_tolerance);
    /* the error is the whole server TTFT, less the 50 us after the headers */
    assert_true(fabs(c.err_ttft.median - (double)(READ_NS + 100 + 50000 - TOKEN0)) < 2);
    assert_int_equal(c.n_causes, 1);
    assert_string_equal(c.causes[0].finding, "");
    assert_non_null(strstr(c.causes[0].symptom, "TTFT taken before any event arrived"));
    assert_non_null(strstr(c.causes[0].symptom, "within 1 ms of the response headers in 3 of them"));
    assert_int_equal(c.causes[0].requests, N_REQ);
    tt_audit_cell_free(&c);
}

/* Failed although delivered: pinned on the finding only failed streams carry. */
static void test_failed_but_delivered(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    const int64_t lag[N_REQ] = {0, 0, 0};
    write_run_report(fx, lag, lag, false, "crlf-separator");
    int64_t zero[N_REQ] = {0, 0, 0};
    const int n[N_REQ] = {0, 0, 0};
    const bool ok[N_REQ] = {false, false, false};
    write_result(fx, zero, zero, n, n, 0, ok);
    tt_audit_card card = {0};
    card.cells = calloc(2, sizeof *card.cells);
    card.n_cells = 2;
    tt_cell_evidence ev[2];
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&card.cells[0], &in, &ev[0]), 0);
    assert_int_equal(card.cells[0].failed_but_delivered, N_REQ);
    assert_int_equal(card.cells[0].reported_ok, 0);
    assert_string_equal(ev[0].failed_error, "no token seen");

    /* a second run where the tool succeeded on streams with another finding */
    write_run_report(fx, lag, lag, false, "role-only-first-chunk");
    write_uniform_result(fx, TOKEN0 - REQ_FIRST, 0, GAP);
    assert_int_equal(tt_audit_grade_cell(&card.cells[1], &in, &ev[1]), 0);
    assert_true(card.cells[1].within_tolerance);

    assert_int_equal(tt_audit_cross_causes(&card, ev), 0);
    assert_true(card.mis_measured);
    const tt_audit_cause *k = cause(&card.cells[0], "crlf-separator");
    assert_non_null(k);
    assert_int_equal(k->requests, N_REQ);
    assert_non_null(strstr(k->symptom, "the tool said: \"no token seen\""));
    assert_null(cause(&card.cells[0], "role-only-first-chunk"));
    tt_audit_card_free(&card);
}

/* A stream serve did not finish is not "delivered"; a success on it is. */
static void test_ok_but_undelivered(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 1);
    const int64_t lag[N_REQ] = {0, 0, 0};
    last_incomplete = true;
    write_run_report(fx, lag, lag, false, NULL);
    last_incomplete = false;
    write_uniform_result(fx, TOKEN0 - REQ_FIRST, 0, GAP);
    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_int_equal(c.server_completed, N_REQ - 1);
    assert_int_equal(c.ok_but_undelivered, 1);
    assert_int_equal(c.failed_but_delivered, 0);
    assert_false(c.within_tolerance);
    tt_audit_cell_free(&c);
}

/* Inputs missing or unreadable: a problem line, not a crash or a number. */
static void test_bad_inputs(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    tt_audit_cell c = {.concurrency = 1};
    tt_cell_evidence ev;
    tt_cell_inputs in = inputs(fx);
    unlink(fx->result);
    unlink(fx->report);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_string_equal(c.cmd_problem, "wrote no result file at {result}");
    assert_false(c.graded);
    assert_false(c.within_tolerance);
    tt_audit_cell_free(&c);

    write_file(fx->result, "{\"nothing\": true}\n");
    memset(&c, 0, sizeof c);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_non_null(strstr(c.cmd_problem, "its result file is not one tokentap reads: "));
    assert_null(strstr(c.cmd_problem, fx->result));
    tt_audit_cell_free(&c);

    /* the probe saw nothing (a tool that bypasses libc): said, not graded as clean */
    write_file(fx->report, "{\"requests\": [], \"findings\": []}\n");
    write_uniform_result(fx, TOKEN0 - REQ_FIRST, 0, GAP);
    memset(&c, 0, sizeof c);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_non_null(strstr(c.cmd_problem, "the probe saw none of the 3 requests serve answered"));
    assert_int_equal(c.records_matched, 0);
    assert_false(c.within_tolerance);
    tt_audit_cell_free(&c);

    in.serve_log = "/nonexistent/serve.jsonl";
    memset(&c, 0, sizeof c);
    assert_int_equal(tt_audit_grade_cell(&c, &in, &ev), 0);
    assert_non_null(strstr(c.cmd_problem, "cannot read serve's log"));
    tt_audit_cell_free(&c);
}

/* The truth loader: token instants per request, cut lines counted. */
static void test_truth_log(void **state)
{
    fixture *fx = *state;
    write_serve_log(fx, 0);
    tt_truth t;
    char err[256];
    assert_int_equal(tt_truth_load(fx->log, &t, err, sizeof err), 0);
    assert_int_equal(t.n, N_REQ);
    assert_int_equal(t.bad_lines, 2); /* the write to no request, the cut line */
    const tt_truth_req *r = tt_truth_find(&t, "127.0.0.1:40001", 1);
    assert_non_null(r);
    assert_int_equal(r->n_token, N_TOK);
    assert_int_equal(r->token_ns[0], TOKEN0);
    assert_int_equal(r->token_ns[N_TOK - 1], TOKEN0 + (N_TOK - 1) * GAP);
    assert_true(tt_truth_ended(r));
    assert_null(tt_truth_find(&t, "127.0.0.1:40001", 2));
    tt_truth_free(&t);
    const char buf[] = "{\"events\":[[5,\"done\"]]}\n{\"events\":[[1,\"token\"]]}\n{\"events\":[[7,\"done\"]]}";
    assert_int_equal(tt_truth_count_done(buf, sizeof buf - 1), 2);
    assert_int_equal(tt_truth_count_done(buf, 10), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_errors_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overhead_in_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_role_chunk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_role_chunk_coalesced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_headers_ttft, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_but_delivered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ok_but_undelivered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truth_log, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
