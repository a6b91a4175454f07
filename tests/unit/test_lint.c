/* Lint findings, each from a stream that has it and the same stream without
 * it, built through the connection tracker from raw HTTP bytes (one chunk
 * per listed piece, so split and coalesced events are chosen by the test).
 * Also the producer facts lint relies on: the CR offset of an event (the same
 * however the body is split), the first comment's offset, the cut event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "golden.h"
#include "lint/lint.h"
#include "proto/sse.h"
#include "timeline/conn_tracker.h"

#define BIT(id) (1ull << (TT_LINT_##id))
#define MAX_PIECES 8

typedef struct feeder {
    tt_tracker *t;
    tt_conn_info conn;
    uint64_t off[2];
} feeder;

static void feed(feeder *f, tt_direction dir, tt_chunk_kind kind, const void *data, size_t len, uint64_t ns)
{
    uint8_t *copy = len ? tt_guard_copy(data, len) : NULL;
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_WIRE, .dir = dir, .kind = kind, .mono_ns = ns,
                  .offset = f->off[dir], .data = copy, .len = len};
    tt_tracker_chunk(f->t, &c);
    if (kind == TT_CHUNK_DATA) f->off[dir] += len;
    if (copy) tt_guard_free(copy, len);
}

typedef struct stream_case {
    const char *name;
    const char *req_body; /* NULL: a plain streaming chat request */
    const char *head;     /* NULL: 200, text/event-stream, close-delimited */
    const char *pieces[MAX_PIECES]; /* response body pieces, one chunk each */
    uint64_t expect;      /* the ids it must show, and no others */
} stream_case;

#define DEFAULT_BODY "{\"model\":\"m\",\"stream\":true,\"max_tokens\":3}"
#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
#define TOK_A "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
#define TOK_B "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}]}\n\n"
#define TOK_B_NOFIN "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n"
#define DONE "data: [DONE]\n\n"
/* vLLM's include_usage frame: usage with an empty choices array */
#define USAGE_EMPTY(n) "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":" #n "}}\n\n"
/* the same counts without a choices member */
#define USAGE_ONLY(n) "data: {\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":" #n "}}\n\n"

/* Feed one exchange through a tracker that keeps bodies; the caller frees. */
static tt_tracker *run_exchange(const char *name, const char *req_body, const char *head,
                                const char *const *pieces, size_t first_len)
{
    feeder f;
    memset(&f, 0, sizeof f);
    tt_tracker_options opt = {.keep_body = true};
    f.t = tt_tracker_new(&opt);
    assert_non_null(f.t);
    f.conn.conn_id = 7;
    f.conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f.conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    const char *body = req_body ? req_body : DEFAULT_BODY;
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     name, strlen(body), body);
    assert_true(n > 0 && (size_t)n < sizeof req);
    feed(&f, TT_DIR_C2S, TT_CHUNK_DATA, req, (size_t)n, 1000);
    const char *h = head ? head : SSE_HEAD;
    feed(&f, TT_DIR_S2C, TT_CHUNK_DATA, h, strlen(h), 2000);
    for (size_t i = 0; i < MAX_PIECES && pieces[i]; i++) {
        size_t len = i == 0 && first_len ? first_len : strlen(pieces[i]);
        feed(&f, TT_DIR_S2C, TT_CHUNK_DATA, pieces[i], len, 3000 + 1000 * i);
    }
    feed(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 20000);
    feed(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 20000);
    feed(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 20000);
    tt_tracker_sort(f.t);
    return f.t;
}

static uint64_t mask_of(const tt_lint_result *res)
{
    uint64_t m = 0;
    for (size_t i = 0; i < res->n; i++) m |= 1ull << res->findings[i].id;
    return m;
}

static void print_mask(const char *label, uint64_t m)
{
    fprintf(stderr, "  %s:", label);
    for (int id = 0; id < TT_LINT_COUNT; id++)
        if (m & (1ull << id)) fprintf(stderr, " %s", tt_lint_entry_of((tt_lint_id)id)->name);
    fputc('\n', stderr);
}

static const tt_lint_finding *find(const tt_lint_result *res, tt_lint_id id)
{
    for (size_t i = 0; i < res->n; i++)
        if (res->findings[i].id == id) return &res->findings[i];
    return NULL;
}

/* Lint c (pieces[0] of first_len bytes when non-zero); keep: the tracker
 * stays alive for the caller (who frees it). Returns the ids found. */
static uint64_t lint_case_n(const stream_case *c, size_t first_len, tt_lint_result *res, tt_tracker **keep)
{
    tt_tracker *t = run_exchange(c->name, c->req_body, c->head, c->pieces, first_len);
    size_t n;
    tt_request *reqs = tt_tracker_requests(t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(tt_lint_run(reqs, n, res), 0);
    uint64_t m = mask_of(res);
    if (m != c->expect) {
        fprintf(stderr, "case %s:\n", c->name);
        print_mask("expected", c->expect);
        print_mask("found", m);
    }
    if (keep) *keep = t;
    else tt_tracker_free(t);
    return m;
}

static uint64_t lint_case(const stream_case *c, tt_lint_result *res, tt_tracker **keep)
{
    return lint_case_n(c, 0, res, keep);
}

/* Each pair: a stream with the finding, then the same stream without it. */
static const stream_case cases[] = {
    {"clean", NULL, NULL, {TOK_A, TOK_B, DONE}, 0},
    {"crlf", NULL, NULL,
     {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\n", TOK_B, DONE},
     BIT(CRLF_SEPARATOR)},
    {"cr-only", NULL, NULL, {TOK_A, TOK_B, "data: [DONE]\r\r"}, BIT(CRLF_SEPARATOR)},
    {"split", NULL, NULL, {"data: {\"choices\":[{\"index\":0,", "\"delta\":{\"content\":\"a\"}}]}\n\n", TOK_B, DONE},
     BIT(SPLIT_EVENT)},
    {"split-at-blank-line", NULL, NULL,
     {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n", "\n", TOK_B, DONE},
     BIT(SPLIT_EVENT)},
    {"coalesced", NULL, NULL, {TOK_A TOK_B, DONE}, BIT(COALESCED_EVENTS)},
    {"keepalive-comment", NULL, NULL, {": ping - 2025-01-01 00:00:00\n\n", TOK_A, TOK_B, DONE},
     BIT(KEEPALIVE_COMMENT)},
    {"usage-with-choices", NULL, NULL,
     {TOK_A,
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}],"
       "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\n",
      DONE},
     BIT(USAGE_WITH_CHOICES)},
    {"usage-empty-choices", NULL, NULL, {TOK_A, TOK_B, USAGE_EMPTY(2), DONE}, BIT(USAGE_EMPTY_CHOICES)},
    {"usage-without-choices-member", NULL, NULL, {TOK_A, TOK_B, USAGE_ONLY(2), DONE}, 0},
    {"empty-choices-without-usage", NULL, NULL, {TOK_A, TOK_B, "data: {\"choices\":[],\"usage\":null}\n\n", DONE},
     0},
    {"missing-terminal", NULL, NULL, {TOK_A, TOK_B}, BIT(MISSING_TERMINAL)},
    {"data-no-space", NULL, NULL,
     {"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", TOK_B, DONE}, BIT(DATA_NO_SPACE)},
    {"event-field", NULL, NULL,
     {"event: message\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", TOK_B, DONE},
     BIT(EVENT_FIELD)},
    {"empty-data-line", NULL, NULL,
     {"data:\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", TOK_B, DONE},
     BIT(EMPTY_DATA_LINE)},
    {"non-json", NULL, NULL, {TOK_A, "data: hello\n\n", TOK_B, DONE}, BIT(NON_JSON_DATA)},
    {"raw-line-separator", NULL, NULL,
     {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\xe2\x80\xa8z\"}}]}\n\n", TOK_B, DONE},
     BIT(RAW_LINE_SEPARATOR)},
    {"escaped-line-separator", NULL, NULL,
     {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\\u2028z\"}}]}\n\n", TOK_B, DONE}, 0},
    {"missing-usage", "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}", NULL,
     {TOK_A, TOK_B, DONE}, BIT(MISSING_USAGE)},
    {"usage-as-asked", "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}", NULL,
     {TOK_A, TOK_B, USAGE_ONLY(2), DONE}, 0},
    {"data-after-terminal", NULL, NULL, {TOK_A, TOK_B, DONE, "data: {\"choices\":[]}\n\n"},
     BIT(DATA_AFTER_TERMINAL)},
    {"role-only-first", NULL, NULL,
     {"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n", TOK_A, TOK_B,
      DONE},
     BIT(ROLE_ONLY_FIRST_CHUNK)},
    {"finish-without-text", NULL, NULL,
     {TOK_A, TOK_B_NOFIN, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
      DONE},
     BIT(FINISH_WITHOUT_TEXT)},
    {"multi-token", NULL, NULL, {TOK_A, TOK_B, USAGE_ONLY(5), DONE}, BIT(MULTI_TOKEN_CHUNKS)},
    {"usage-undercount", NULL, NULL, {TOK_A, TOK_B, USAGE_ONLY(1), DONE}, BIT(USAGE_TOKEN_MISMATCH)},
    {"ignore-eos-dropped", "{\"model\":\"m\",\"stream\":true,\"max_tokens\":10,\"ignore_eos\":true}", NULL,
     {TOK_A, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\n",
      DONE},
     BIT(EOS_FLAG_DROPPED)},
    {"ignore-eos-honoured", "{\"model\":\"m\",\"stream\":true,\"max_tokens\":2,\"ignore_eos\":true}", NULL,
     {TOK_A, TOK_B, DONE}, 0},
    {"min-tokens-dropped", "{\"model\":\"m\",\"stream\":true,\"max_tokens\":10,\"min_tokens\":5}", NULL,
     {TOK_A, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\n",
      DONE},
     BIT(EOS_FLAG_DROPPED)},
    {"natural-stop-not-asked", "{\"model\":\"m\",\"stream\":true,\"max_tokens\":10}", NULL,
     {TOK_A, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\n",
      DONE},
     0},
    {"http-error", NULL,
     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n",
     {"{\"error\":{\"message\":\"busy\"}}"}, BIT(HTTP_ERROR_STATUS)},
    {"error-event", NULL, NULL,
     {TOK_A, "data: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n", DONE}, BIT(ERROR_EVENT)},
    {"closed-mid-event", NULL, NULL, {TOK_A, "data: {\"choices\":[{\"index\":0,"},
     BIT(CLOSED_MID_EVENT) | BIT(MISSING_TERMINAL)},
    {"closed-between-events", NULL, NULL, {TOK_A, TOK_B}, BIT(MISSING_TERMINAL)},
    {"bom", NULL, NULL, {"\xef\xbb\xbf" TOK_A, TOK_B, DONE}, BIT(BOM)},
    {"id-field", NULL, NULL,
     {"id: 1\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", TOK_B, DONE}, BIT(ID_FIELD)},
    {"retry-field", NULL, NULL,
     {"retry: 1000\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", TOK_B, DONE},
     BIT(RETRY_FIELD)},
    {"keepalive-event", NULL, NULL, {"event: ping\ndata: {\"type\":\"ping\"}\n\n", TOK_A, TOK_B, DONE},
     BIT(KEEPALIVE_EVENT) | BIT(EVENT_FIELD)},
};

static void test_each_case(void **state)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tt_lint_result res;
        if (lint_case(&cases[i], &res, NULL) != cases[i].expect) failures++;
        tt_lint_result_free(&res);
    }
    assert_int_equal(failures, 0);
}

/* Every id in the catalogue is exercised by some case above (or below:
 * gzip; the HTTP/2 and gRPC ones in test_lint_h2.c). */
static void test_every_id_covered(void **state)
{
    uint64_t all = BIT(COMPRESSED_STREAM) | BIT(H2_SPLIT_EVENT) | BIT(H2_COALESCED_EVENTS) |
                   BIT(H2_FLOW_CONTROL_STALL) | BIT(H2_STREAM_RESET) | BIT(GRPC_STATUS_ERROR);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) all |= cases[i].expect;
    print_mask("covered", all);
    _Static_assert(TT_LINT_COUNT < 64, "masks are 64-bit");
    assert_int_equal(all, (1ull << TT_LINT_COUNT) - 1);
}

static void test_catalogue(void **state)
{
    for (int id = 0; id < TT_LINT_COUNT; id++) {
        const tt_lint_entry *e = tt_lint_entry_of((tt_lint_id)id);
        assert_non_null(e);
        assert_int_equal(e->id, id);
        assert_true(e->severity <= TT_LINT_ERROR);
        assert_true(strlen(e->summary) > 10 && strlen(e->clients) > 10);
        assert_ptr_equal(tt_lint_find(e->name), e);
        for (const char *p = e->name; *p; p++) assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-');
    }
    assert_null(tt_lint_entry_of(TT_LINT_COUNT));
    assert_null(tt_lint_find("no-such-finding"));
    tt_lint_severity s;
    assert_true(tt_lint_parse_severity("warn", &s) && s == TT_LINT_WARN);
    assert_true(tt_lint_parse_severity("none", &s) && s == TT_LINT_NONE);
    assert_false(tt_lint_parse_severity("fatal", &s));
}

/* Offsets, instants, counts and excerpts of first occurrences. */
static void test_first_occurrence_details(void **state)
{
    tt_lint_result res;
    tt_tracker *t;
    stream_case c = {"detail", NULL, NULL,
                     {": ping\n\n", TOK_A, ": ping\n\n",
                      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\r\n\r\n", TOK_B, DONE},
                     BIT(KEEPALIVE_COMMENT) | BIT(CRLF_SEPARATOR)};
    assert_int_equal(lint_case(&c, &res, &t), c.expect);
    size_t a_len = strlen(TOK_A), ping_len = strlen(": ping\n\n");
    const tt_lint_finding *k = find(&res, TT_LINT_KEEPALIVE_COMMENT);
    assert_int_equal(k->count, 2);
    assert_int_equal(k->offset, 0);
    assert_int_equal(k->mono_ns, 3000);
    assert_int_equal(k->event, -1);
    assert_int_equal(k->excerpt_len, strlen(": ping"));
    const tt_lint_finding *cr = find(&res, TT_LINT_CRLF_SEPARATOR);
    size_t crlf_event_at = ping_len + a_len + ping_len;
    size_t crlf_line = strlen("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}");
    assert_int_equal(cr->event, 1);
    assert_int_equal(cr->count, 1);
    assert_int_equal(cr->offset, crlf_event_at + crlf_line);
    assert_int_equal(cr->excerpt_off, crlf_event_at);
    assert_int_equal(cr->excerpt_len, crlf_line + 4); /* the CRLF CRLF included */
    assert_int_equal(res.by_severity[TT_LINT_INFO], 1);
    assert_int_equal(res.by_severity[TT_LINT_WARN], 1);
    assert_true(tt_lint_fails(&res, TT_LINT_INFO));
    assert_true(tt_lint_fails(&res, TT_LINT_WARN));
    assert_false(tt_lint_fails(&res, TT_LINT_ERROR));
    assert_false(tt_lint_fails(&res, TT_LINT_NONE));

    /* the writers: excerpt as hash without --text, escaped with it */
    size_t n;
    tt_request *reqs = tt_tracker_requests(t, &n);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    tt_lint_write_text(out, &res, &(tt_lint_view){.reqs = reqs, .detailed = true});
    fclose(out);
    assert_non_null(strstr(buf, "[warn] crlf-separator  request 0 detail"));
    assert_non_null(strstr(buf, "fnv1a64"));
    assert_null(strstr(buf, "\\r\\n"));
    free(buf);
    out = open_memstream(&buf, &len);
    tt_jw w;
    tt_jw_init(&w, out, false);
    tt_jw_object_begin(&w, NULL);
    tt_lint_write_json(&w, "findings", &res, &(tt_lint_view){.reqs = reqs, .with_text = true, .vantage = "wire"});
    tt_jw_object_end(&w);
    tt_jw_end(&w);
    fclose(out);
    assert_non_null(strstr(buf, "\"id\":\"crlf-separator\""));
    assert_non_null(strstr(buf, "\"vantage\":\"wire\""));
    assert_non_null(strstr(buf, "}]}\\\\r\\\\n\\\\r\\\\n\"")); /* C escapes inside a JSON string */
    free(buf);
    tt_lint_result_free(&res);
    tt_tracker_free(t);
}

static void test_missing_terminal_is_error(void **state)
{
    tt_lint_result res;
    stream_case c = {"cut", NULL, NULL, {TOK_A, "data: {\"choi"}, BIT(MISSING_TERMINAL) | BIT(CLOSED_MID_EVENT)};
    assert_int_equal(lint_case(&c, &res, NULL), c.expect);
    const tt_lint_finding *m = find(&res, TT_LINT_CLOSED_MID_EVENT);
    assert_int_equal(m->offset, strlen(TOK_A));
    assert_int_equal(m->mono_ns, 4000);
    assert_int_equal(m->excerpt_len, strlen("data: {\"choi"));
    assert_true(tt_lint_fails(&res, TT_LINT_ERROR));
    tt_lint_result_free(&res);
}

/* usage-empty-choices is filed at the frame: its event, first byte, instant
 * and bytes; once per request however many such frames came. */
static void test_usage_empty_choices_at_frame(void **state)
{
    tt_lint_result res;
    tt_tracker *t;
    stream_case c = {"vllm-usage", "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                     NULL, {TOK_A, TOK_B, USAGE_EMPTY(2), USAGE_EMPTY(2), DONE},
                     BIT(USAGE_EMPTY_CHOICES)};
    assert_int_equal(lint_case(&c, &res, &t), c.expect);
    assert_int_equal(res.n, 1);
    const tt_lint_finding *f = find(&res, TT_LINT_USAGE_EMPTY_CHOICES);
    assert_non_null(f);
    assert_int_equal(f->event, 2);
    assert_int_equal(f->count, 2);
    assert_int_equal(f->offset, strlen(TOK_A) + strlen(TOK_B));
    assert_int_equal(f->mono_ns, 5000);
    assert_int_equal(f->excerpt_off, f->offset);
    assert_int_equal(f->excerpt_len, strlen(USAGE_EMPTY(2)));
    assert_int_equal(tt_lint_entry_of(TT_LINT_USAGE_EMPTY_CHOICES)->severity, TT_LINT_WARN);
    assert_int_equal(res.by_severity[TT_LINT_WARN], 1);
    assert_int_equal(res.by_id[TT_LINT_USAGE_EMPTY_CHOICES], 1);
    assert_true(tt_lint_fails(&res, TT_LINT_WARN));
    assert_false(tt_lint_fails(&res, TT_LINT_ERROR));
    tt_lint_result_free(&res);
    tt_tracker_free(t);
}

static void test_gzip_stream(void **state)
{
    const char *plain = TOK_A TOK_B DONE;
    uint8_t gz[512];
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)plain;
    z.avail_in = (uInt)strlen(plain);
    z.next_out = gz;
    z.avail_out = sizeof gz;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t gz_len = sizeof gz - z.avail_out;
    deflateEnd(&z);
    tt_lint_result res;
    stream_case c = {"gzip", NULL,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
                     "Connection: close\r\n\r\n",
                     {(const char *)gz},
                     BIT(COMPRESSED_STREAM) | BIT(COALESCED_EVENTS)};
    assert_int_equal(lint_case_n(&c, gz_len, &res, NULL), c.expect);
    assert_string_equal(find(&res, TT_LINT_COMPRESSED_STREAM)->detail, "gzip");
    tt_lint_result_free(&res);
}

/* ---- the producer's cr_off: the same wherever the body is split ---- */

typedef struct cr_trace {
    uint64_t cr[8];
    uint32_t term[8];
    size_t n;
} cr_trace;

static void on_cr_event(void *ud, const tt_event_frame *ev)
{
    cr_trace *t = ud;
    if (t->n < 8) {
        t->term[t->n] = ev->terminators;
        t->cr[t->n++] = (ev->terminators & (TT_TERM_CR | TT_TERM_CRLF)) ? ev->cr_off : UINT64_MAX;
    }
}

static void sse_cr_offsets(const char *body, size_t len, size_t k, cr_trace *out)
{
    memset(out, 0, sizeof *out);
    tt_frame_callbacks cb = {.on_event = on_cr_event};
    tt_sse_parser *p = tt_sse_new(&cb, out);
    uint8_t *a = tt_guard_copy(body, k), *b = tt_guard_copy(body + k, len - k);
    if (k) tt_sse_feed(p, a, k, 0, 1);
    if (len - k) tt_sse_feed(p, b, len - k, k, 2);
    tt_sse_finish(p, 3);
    tt_guard_free(a, k);
    tt_guard_free(b, len - k);
    tt_sse_free(p);
}

static void test_sse_cr_offset_every_split(void **state)
{
    /* LF event, CRLF event, CR-dispatched event, a CR in its first line only */
    static const char body[] = "data: a\n\ndata: b\r\n\r\ndata: c\n\rdata: d\rdata: e\n\n";
    size_t len = sizeof body - 1;
    cr_trace whole;
    sse_cr_offsets(body, len, len, &whole);
    assert_int_equal(whole.n, 4);
    assert_int_equal(whole.cr[0], UINT64_MAX);
    assert_int_equal(whole.cr[1], 16);                 /* "data: a\n\n" is 9, "data: b" 7 */
    assert_int_equal(whole.cr[2], 28);                 /* the CR dispatching "data: c" */
    assert_int_equal(whole.cr[3], 36);                 /* the CR ending "data: d" */
    for (size_t k = 0; k <= len; k++) {
        cr_trace split;
        sse_cr_offsets(body, len, k, &split);
        assert_int_equal(split.n, whole.n);
        for (size_t i = 0; i < whole.n; i++) {
            assert_int_equal(split.cr[i], whole.cr[i]);
            assert_int_equal(split.term[i], whole.term[i]);
        }
    }
}

/* Lint stays a single pass: 200,000 events lint in well under a second. */
static void test_many_events_cheap(void **state)
{
    tt_request r;
    memset(&r, 0, sizeof r);
    r.status = 200;
    r.framing = TT_FRAMING_SSE;
    r.terminal_seen = true;
    r.usage_completion_tokens = -1;
    r.n_events = 200000;
    r.events = calloc(r.n_events, sizeof *r.events);
    assert_non_null(r.events);
    for (uint32_t i = 0; i < r.n_events; i++) {
        r.events[i].kind = TT_EV_TOKEN;
        r.events[i].has = TT_HAS_TEXT | TT_HAS_CHOICES;
        r.events[i].json_ok = 1;
        r.events[i].terminators = TT_TERM_CRLF;
        r.events[i].first_chunk = r.events[i].last_chunk = i;
        r.events[i].first_off = (uint64_t)i * 100;
        r.events[i].dispatch_off = (uint64_t)i * 100 + 99;
    }
    tt_lint_result res;
    assert_int_equal(tt_lint_run(&r, 1, &res), 0);
    assert_int_equal(res.n, 1);
    assert_int_equal(res.findings[0].count, r.n_events);
    tt_lint_result_free(&res);
    free(r.events);
}

/* Triton's generate stream has no end marker: a whole one is not
 * missing-terminal; the same stream read as TGI is. */
static void test_triton_has_no_end_marker(void **state)
{
    tt_request r;
    memset(&r, 0, sizeof r);
    r.status = 200;
    r.framing = TT_FRAMING_SSE;
    r.usage_completion_tokens = r.usage_prompt_tokens = -1;
    r.fields.max_tokens = r.fields.min_tokens = -1;
    r.grpc_status = -1;
    for (int tgi = 0; tgi < 2; tgi++) {
        r.dialect = tgi ? TT_DIALECT_TGI : TT_DIALECT_TRITON;
        tt_lint_result res;
        assert_int_equal(tt_lint_run(&r, 1, &res), 0);
        assert_int_equal(res.by_id[TT_LINT_MISSING_TERMINAL], tgi);
        tt_lint_result_free(&res);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_case),
        cmocka_unit_test(test_every_id_covered),
        cmocka_unit_test(test_catalogue),
        cmocka_unit_test(test_triton_has_no_end_marker),
        cmocka_unit_test(test_first_occurrence_details),
        cmocka_unit_test(test_missing_terminal_is_error),
        cmocka_unit_test(test_usage_empty_choices_at_frame),
        cmocka_unit_test(test_gzip_stream),
        cmocka_unit_test(test_sse_cr_offset_every_split),
        cmocka_unit_test(test_many_events_cheap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
