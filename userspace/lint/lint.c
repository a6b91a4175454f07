/* lint.c - findings over finished requests; see lint.h and docs/framing.md. */
#include "lint/lint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define EXCERPT_MAX 4096u
#define LINE_EXCERPT_MAX 256u

/* The first occurrence of one id in the request being linted. */
typedef struct occurrence {
    uint32_t count;
    int32_t event;
    uint64_t off, ns, ex_off;
    uint32_t ex_len;
    char detail[160];
} occurrence;

uint64_t tt_lint_fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint32_t clamp32(uint64_t v, uint32_t cap)
{
    return v > cap ? cap : (uint32_t)v;
}

static void note(occurrence *o, int32_t event, uint64_t off, uint64_t ns, uint64_t ex_off, uint64_t ex_len)
{
    if (o->count++ > 0) return;
    o->event = event;
    o->off = off;
    o->ns = ns;
    o->ex_off = ex_off;
    o->ex_len = clamp32(ex_len, EXCERPT_MAX);
}

/* Bytes of r's kept body from off to the end of that line (bounded). */
static uint64_t line_length(const tt_request *r, uint64_t off)
{
    if (!r->body || off >= r->body_len) return 0;
    size_t room = r->body_len - off;
    if (room > LINE_EXCERPT_MAX) room = LINE_EXCERPT_MAX;
    const uint8_t *start = r->body + off;
    for (size_t i = 0; i < room; i++)
        if (start[i] == '\n' || start[i] == '\r') return i;
    return room;
}

/* The raw extent of event e: its first byte to its dispatching byte, plus the
 * LF of a CRLF dispatch when the body shows one. */
static uint64_t event_extent(const tt_request *r, const tt_event_rec *e)
{
    uint64_t len = e->dispatch_off > e->first_off ? e->dispatch_off - e->first_off : 0;
    if ((e->terminators & TT_TERM_CRLF) && r->body && e->dispatch_off < r->body_len &&
        r->body[e->dispatch_off] == '\n' && e->dispatch_off > 0 && r->body[e->dispatch_off - 1] == '\r')
        len++;
    return len;
}

static bool is_natural_stop(const char *reason)
{
    static const char *const natural[] = {"stop", "eos", "eos_token", "end_turn", "stop_sequence", "word",
                                          "completed"};
    for (size_t i = 0; i < sizeof natural / sizeof *natural; i++)
        if (!strcmp(reason, natural[i])) return true;
    return false;
}

static bool is_openai_text_dialect(tt_dialect d)
{
    return d == TT_DIALECT_OPENAI_CHAT || d == TT_DIALECT_OPENAI_COMPLETIONS;
}

static void lint_events(const tt_request *r, occurrence *occ)
{
    bool terminal_seen = false, choices_seen = false;
    bool h2 = r->stream_id != 0;
    for (uint32_t k = 0; k < r->n_events; k++) {
        const tt_event_rec *e = &r->events[k];
        int32_t ev = k > INT32_MAX ? INT32_MAX : (int32_t)k;
        uint64_t at = e->first_off, ns = e->first_ns;
        uint64_t ext = event_extent(r, e);
        if (e->terminators & (TT_TERM_CR | TT_TERM_CRLF))
            note(&occ[TT_LINT_CRLF_SEPARATOR], ev, e->first_off + e->cr_rel, e->dispatch_ns, at, ext);
        /* an HTTP/2 stream's framer is fed DATA frame by frame: its chunks are frames */
        if (e->last_chunk != e->first_chunk)
            note(&occ[h2 ? TT_LINT_H2_SPLIT_EVENT : TT_LINT_SPLIT_EVENT], ev, at, ns, at, ext);
        if (e->shared_chunk)
            note(&occ[h2 ? TT_LINT_H2_COALESCED_EVENTS : TT_LINT_COALESCED_EVENTS], ev, at, e->dispatch_ns, at, ext);
        if ((e->has & TT_HAS_USAGE) && (e->has & TT_HAS_CHOICES))
            note(&occ[TT_LINT_USAGE_WITH_CHOICES], ev, at, e->dispatch_ns, at, ext);
        if ((e->has & TT_HAS_USAGE) && (e->has & TT_HAS_EMPTY_CHOICES))
            note(&occ[TT_LINT_USAGE_EMPTY_CHOICES], ev, at, e->dispatch_ns, at, ext);
        if (e->frame_flags) {
            if (e->frame_flags & TT_FRAME_DATA_NO_SPACE) note(&occ[TT_LINT_DATA_NO_SPACE], ev, at, ns, at, ext);
            if (e->frame_flags & TT_FRAME_EMPTY_DATA_LINE)
                note(&occ[TT_LINT_EMPTY_DATA_LINE], ev, at, ns, at, ext);
            if (e->frame_flags & TT_FRAME_RAW_LINE_SEP)
                note(&occ[TT_LINT_RAW_LINE_SEPARATOR], ev, at, ns, at, ext);
            if (e->frame_flags & TT_FRAME_BOM) note(&occ[TT_LINT_BOM], ev, 0, ns, 0, e->first_off + ext);
        }
        if (e->fields & (TT_FIELD_EVENT | TT_FIELD_ID | TT_FIELD_RETRY)) {
            if (e->fields & TT_FIELD_EVENT) note(&occ[TT_LINT_EVENT_FIELD], ev, at, ns, at, ext);
            if (e->fields & TT_FIELD_ID) note(&occ[TT_LINT_ID_FIELD], ev, at, ns, at, ext);
            if (e->fields & TT_FIELD_RETRY) note(&occ[TT_LINT_RETRY_FIELD], ev, at, ns, at, ext);
        }
        if (!e->json_ok) note(&occ[TT_LINT_NON_JSON_DATA], ev, at, e->dispatch_ns, at, ext);
        if (e->kind == TT_EV_FINISH) note(&occ[TT_LINT_FINISH_WITHOUT_TEXT], ev, at, e->dispatch_ns, at, ext);
        if (e->kind == TT_EV_ERROR || (e->has & TT_HAS_ERROR))
            note(&occ[TT_LINT_ERROR_EVENT], ev, at, e->dispatch_ns, at, ext);
        if (e->kind == TT_EV_KEEPALIVE) note(&occ[TT_LINT_KEEPALIVE_EVENT], ev, at, e->dispatch_ns, at, ext);
        if (terminal_seen) note(&occ[TT_LINT_DATA_AFTER_TERMINAL], ev, at, e->dispatch_ns, at, ext);
        if (e->has & TT_HAS_TERMINAL) terminal_seen = true;
        if (!choices_seen && (e->has & TT_HAS_CHOICES)) {
            choices_seen = true;
            if (e->kind == TT_EV_ROLE) note(&occ[TT_LINT_ROLE_ONLY_FIRST_CHUNK], ev, at, e->dispatch_ns, at, ext);
        }
    }
}

/* What only HTTP/2 and gRPC show: flow control, resets, gRPC status. */
static void lint_http2(const tt_request *r, occurrence *occ)
{
    if (r->h2_window_stalls) {
        occurrence *o = &occ[TT_LINT_H2_FLOW_CONTROL_STALL];
        note(o, -1, TT_LINT_NO_OFFSET, r->h2_first_stall_ns, 0, 0);
        o->count = r->h2_window_stalls;
        snprintf(o->detail, sizeof o->detail, "the window stayed closed %.3f ms in all",
                 (double)r->h2_window_closed_ns / 1e6);
    }
    if (r->h2_reset_by && (r->incomplete & (TT_INC_RESPONSE_CUT | TT_INC_NO_RESPONSE))) {
        occurrence *o = &occ[TT_LINT_H2_STREAM_RESET];
        note(o, -1, TT_LINT_NO_OFFSET, r->resp_last_ns, 0, 0);
        snprintf(o->detail, sizeof o->detail, "RST_STREAM error code %u from the %s", (unsigned)r->h2_reset_code,
                 r->h2_reset_by == 1 ? "client" : "server");
    }
    if (r->grpc_status > 0) {
        occurrence *o = &occ[TT_LINT_GRPC_STATUS_ERROR];
        note(o, -1, TT_LINT_NO_OFFSET, r->resp_last_ns, 0, 0);
        snprintf(o->detail, sizeof o->detail, "grpc-status %d%s%.100s", r->grpc_status, r->grpc_message[0] ? ": " : "",
                 r->grpc_message);
    }
}

static void lint_request(const tt_request *r, occurrence *occ)
{
    bool ok_status = r->status >= 200 && r->status < 300;
    bool streamed = r->framing != TT_FRAMING_NONE;
    lint_events(r, occ);

    if (r->comments) {
        occurrence *o = &occ[TT_LINT_KEEPALIVE_COMMENT];
        note(o, -1, r->first_comment_off, r->first_comment_ns, r->first_comment_off,
             line_length(r, r->first_comment_off));
        o->count = r->comments;
    }
    /* Triton's generate stream has no end marker: its end is the body's */
    if (streamed && ok_status && !r->terminal_seen && r->dialect != TT_DIALECT_TRITON) {
        occurrence *o = &occ[TT_LINT_MISSING_TERMINAL];
        uint64_t end = r->n_events ? r->events[r->n_events - 1].dispatch_off : 0;
        note(o, -1, end, r->resp_last_ns, 0, 0);
        snprintf(o->detail, sizeof o->detail, "%u events, the last ending at body offset %llu; the response %s",
                 r->n_events, (unsigned long long)end,
                 (r->incomplete & TT_INC_RESPONSE_CUT) ? "was cut (see incomplete_reasons)" : "ended cleanly");
    }
    if (streamed && ok_status && r->fields.include_usage == TT_TRUE && is_openai_text_dialect(r->dialect) &&
        r->usage_completion_tokens < 0 && r->terminal_seen)
        note(&occ[TT_LINT_MISSING_USAGE], -1, TT_LINT_NO_OFFSET, r->terminal_ns, 0, 0);
    if (streamed && r->usage_completion_tokens >= 0 && (uint64_t)r->usage_completion_tokens != r->token_events) {
        tt_lint_id id = (uint64_t)r->usage_completion_tokens > r->token_events ? TT_LINT_MULTI_TOKEN_CHUNKS
                                                                              : TT_LINT_USAGE_TOKEN_MISMATCH;
        occurrence *o = &occ[id];
        note(o, -1, TT_LINT_NO_OFFSET, r->last_token_ns, 0, 0);
        snprintf(o->detail, sizeof o->detail, "usage %lld completion tokens, %u token events",
                 (long long)r->usage_completion_tokens, r->token_events);
    }
    int64_t output = r->usage_completion_tokens >= 0 ? r->usage_completion_tokens : (int64_t)r->token_events;
    bool eos_ignored = r->fields.ignore_eos == TT_TRUE && r->fields.max_tokens > 0 && output < r->fields.max_tokens;
    bool min_ignored = r->fields.min_tokens > 0 && output < r->fields.min_tokens;
    if (ok_status && r->finish_reason[0] && is_natural_stop(r->finish_reason) && (eos_ignored || min_ignored)) {
        occurrence *o = &occ[TT_LINT_EOS_FLAG_DROPPED];
        note(o, -1, TT_LINT_NO_OFFSET, r->last_token_ns != TT_NS_NONE ? r->last_token_ns : r->resp_last_ns, 0, 0);
        snprintf(o->detail, sizeof o->detail, "%s asked, %lld tokens of %lld, finish_reason %s",
                 eos_ignored ? "ignore_eos" : "min_tokens", (long long)output,
                 (long long)(eos_ignored ? r->fields.max_tokens : r->fields.min_tokens), r->finish_reason);
    }
    bool stream_type = streamed || strstr(r->content_type, "event-stream") || strstr(r->content_type, "ndjson");
    if (r->coding != TT_CODING_IDENTITY && stream_type) {
        occurrence *o = &occ[TT_LINT_COMPRESSED_STREAM];
        note(o, -1, TT_LINT_NO_OFFSET, r->resp_headers_ns, 0, 0);
        snprintf(o->detail, sizeof o->detail, "%s",
                 r->coding == TT_CODING_GZIP ? "gzip" : r->coding == TT_CODING_DEFLATE ? "deflate" : "other coding");
    }
    if (r->status >= 400) {
        occurrence *o = &occ[TT_LINT_HTTP_ERROR_STATUS];
        note(o, -1, 0, r->resp_first_ns, 0, r->body ? r->body_len : 0);
        snprintf(o->detail, sizeof o->detail, "status %d", r->status);
    }
    lint_http2(r, occ);
    if (r->cut_event)
        note(&occ[TT_LINT_CLOSED_MID_EVENT], -1, r->cut_event_off, r->cut_event_ns, r->cut_event_off,
             r->cut_event_end - r->cut_event_off);
    if (occ[TT_LINT_ERROR_EVENT].count && r->error_message[0])
        snprintf(occ[TT_LINT_ERROR_EVENT].detail, sizeof occ[TT_LINT_ERROR_EVENT].detail, "%s", r->error_message);
    if (occ[TT_LINT_FINISH_WITHOUT_TEXT].count && r->finish_reason[0])
        snprintf(occ[TT_LINT_FINISH_WITHOUT_TEXT].detail, sizeof occ[TT_LINT_FINISH_WITHOUT_TEXT].detail,
                 "finish_reason %s", r->finish_reason);
}

static int file_finding(tt_lint_result *res, uint32_t req, tt_lint_id id, const occurrence *o)
{
    if (res->n == res->cap) {
        size_t ncap = res->cap ? res->cap * 2 : 64;
        tt_lint_finding *nf = realloc(res->findings, ncap * sizeof *nf);
        if (!nf) return -1;
        res->findings = nf;
        res->cap = ncap;
    }
    tt_lint_finding *f = &res->findings[res->n++];
    f->id = id;
    f->request = req;
    f->event = o->event;
    f->count = o->count;
    f->offset = o->off;
    f->mono_ns = o->ns;
    f->excerpt_off = o->ex_off;
    f->excerpt_len = o->ex_len;
    memcpy(f->detail, o->detail, sizeof f->detail);
    res->by_severity[tt_lint_entry_of(id)->severity]++;
    res->by_id[id]++;
    return 0;
}

int tt_lint_run(const tt_request *reqs, size_t n, tt_lint_result *res)
{
    memset(res, 0, sizeof *res);
    occurrence occ[TT_LINT_COUNT];
    for (size_t i = 0; i < n; i++) {
        memset(occ, 0, sizeof occ);
        lint_request(&reqs[i], occ);
        for (int id = 0; id < TT_LINT_COUNT; id++)
            if (occ[id].count && file_finding(res, clamp32(i, UINT32_MAX), (tt_lint_id)id, &occ[id]) < 0) return -1;
    }
    return 0;
}

int tt_lint_result_append(tt_lint_result *res, uint32_t request, const tt_lint_finding *f, size_t n)
{
    if (tt_grow(&res->findings, &res->cap, res->n + n, sizeof *res->findings, 64) < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        tt_lint_finding *c = &res->findings[res->n++];
        *c = f[i];
        c->request = request;
        res->by_severity[tt_lint_entry_of(c->id)->severity]++;
        res->by_id[c->id]++;
    }
    return 0;
}

void tt_lint_result_free(tt_lint_result *res)
{
    if (!res) return;
    free(res->findings);
    memset(res, 0, sizeof *res);
}

bool tt_lint_fails(const tt_lint_result *res, tt_lint_severity threshold)
{
    if (!res || threshold == TT_LINT_NONE) return false;
    for (int s = threshold; s <= TT_LINT_ERROR; s++)
        if (res->by_severity[s]) return true;
    return false;
}
