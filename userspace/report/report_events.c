#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sbuf.h"
#include "proto/event_frame.h"
#include "report/json_writer.h"
#include "report/report.h"

/* The names of the bits set in bits, joined by '|' ("-" when none). */
static void put_flag_names(tt_sbuf *b, unsigned bits, const char *const *names, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!(bits & (1u << i))) continue;
        if (any) tt_sbuf_put(b, "|", 1);
        tt_sbuf_puts(b, names[i]);
        any = true;
    }
    if (!any) tt_sbuf_put(b, "-", 1);
}

static const char *const term_names[] = {"LF", "CR", "CRLF"};
static const char *const field_names[] = {"data", "event", "id", "retry", "other"};
static const char *const frame_names[] = {"data-no-space", "bom", "empty-data-line", "raw-line-sep",
                                          "unterminated", "truncated", "compressed", "bad-prefix"};
static const char *const has_names[] = {"text", "reasoning", "tool-args", "usage", "finish",
                                        "terminal", "choices", "role", "error", "special", "malformed",
                                        "empty-choices"};

#define N(a) (sizeof(a) / sizeof *(a))
/* A string literal onto a tt_sbuf: its length known where it is written. */
#define PUT_LITERAL(b, s) tt_sbuf_put((b), (s), sizeof(s) - 1)

/* The C-style escape of c, a byte tt_sbuf_quoted escapes: \n \r \" \\,
 * the other control bytes and DEL as \xNN. */
static size_t c_escape_byte(unsigned char c, char out[6])
{
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    if (c == '\n' || c == '\r' || c == '"' || c == '\\') {
        out[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : (char)c;
        return 2;
    }
    out[1] = 'x';
    out[2] = hex[c >> 4];
    out[3] = hex[c & 15];
    return 4;
}

/* The text listing builds each event's line in a tt_sbuf and writes it
 * with one stdio call (printf's parsing and a call per field were most of
 * a listing's time). */

/* v in decimal, padded on the left with spaces to 4 columns ("%4u"). */
static void put_uint4(tt_sbuf *b, uint32_t v)
{
    if (v < 1000) tt_sbuf_put(b, "   ", v < 10 ? 3 : v < 100 ? 2 : 1);
    tt_sbuf_u64(b, v);
}

/* s, padded on the right with spaces to 9 columns ("%-9s"). */
static void put_left9(tt_sbuf *b, const char *s)
{
    size_t n = strlen(s);
    tt_sbuf_put(b, s, n);
    if (n < 9) tt_sbuf_put(b, "         ", 9 - n);
}

static void put_hex16(tt_sbuf *b, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char d[16];
    for (int i = 15; i >= 0; i--, v >>= 4) d[i] = hex[v & 15];
    tt_sbuf_put(b, d, sizeof d);
}

/* ns in milliseconds as "%.3f" writes (double)ns / 1e6. Whole
 * microseconds, rounded, give the same digits unless ns is an exact half
 * microsecond (the double sits on one side of the tie) or too large for
 * the double to keep a nanosecond: those go through printf. */
static void put_ms(tt_sbuf *b, uint64_t ns)
{
    if (ns < (UINT64_C(1) << 50) && ns % 1000 != 500) {
        uint64_t us = (ns + 500) / 1000;
        tt_sbuf_u64(b, us / 1000);
        char frac[4] = {'.', (char)('0' + us % 1000 / 100), (char)('0' + us % 100 / 10), (char)('0' + us % 10)};
        tt_sbuf_put(b, frac, sizeof frac);
        return;
    }
    tt_sbuf_printf(b, "%.3f", (double)ns / 1e6);
}

void tt_report_events_text(FILE *out, const tt_analysis *a)
{
    tt_sbuf l = {0};
    for (size_t i = 0; i < a->n_reqs; i++) {
        const tt_request *r = &a->reqs[i];
        char c[64], s[64];
        fprintf(out, "request %zu %s %s -> %s #%u %s %s status=%d dialect=%s events=%u\n", i,
                r->request_id[0] ? r->request_id : "-", tt_endpoint_format(&r->client, c, sizeof c),
                tt_endpoint_format(&r->server, s, sizeof s), r->ordinal, r->method[0] ? r->method : "-",
                r->path[0] ? r->path : "-", r->status, tt_dialect_name(r->dialect), r->n_events);
        for (uint32_t k = 0; k < r->n_events; k++) {
            const tt_event_rec *e = &r->events[k];
            const char *type = tt_tracker_type_name(a->tracker, e->type_id);
            tt_sbuf_reset(&l);
            tt_sbuf_put(&l, "  ", 2);
            put_uint4(&l, k);
            tt_sbuf_put(&l, " ", 1);
            put_left9(&l, tt_event_kind_name((tt_event_kind)e->kind));
            PUT_LITERAL(&l, " t=");
            tt_sbuf_u64(&l, e->dispatch_ns);
            PUT_LITERAL(&l, " first=");
            tt_sbuf_u64(&l, e->first_ns);
            if (r->req_first_ns != TT_NS_NONE) {
                PUT_LITERAL(&l, " +");
                put_ms(&l, e->dispatch_ns - r->req_first_ns);
                PUT_LITERAL(&l, "ms");
            }
            if (e->ready_ns != TT_NS_NONE && e->ready_ns <= e->dispatch_ns) {
                PUT_LITERAL(&l, " queued=");
                put_ms(&l, e->dispatch_ns - e->ready_ns);
                PUT_LITERAL(&l, "ms");
            }
            PUT_LITERAL(&l, " off=");
            tt_sbuf_u64(&l, e->first_off);
            PUT_LITERAL(&l, "..");
            tt_sbuf_u64(&l, e->dispatch_off);
            PUT_LITERAL(&l, " type=");
            tt_sbuf_puts(&l, type[0] ? type : "-");
            PUT_LITERAL(&l, " data=");
            tt_sbuf_u64(&l, e->data_len);
            PUT_LITERAL(&l, " text=");
            tt_sbuf_u64(&l, e->text_bytes);
            PUT_LITERAL(&l, " hash=");
            put_hex16(&l, e->text_hash);
            PUT_LITERAL(&l, " has=");
            put_flag_names(&l, e->has, has_names, N(has_names));
            PUT_LITERAL(&l, " term=");
            put_flag_names(&l, e->terminators, term_names, N(term_names));
            PUT_LITERAL(&l, " fields=");
            put_flag_names(&l, e->fields, field_names, N(field_names));
            PUT_LITERAL(&l, " lines=");
            tt_sbuf_u64(&l, e->lines);
            PUT_LITERAL(&l, " comments=");
            tt_sbuf_u64(&l, e->comment_lines);
            PUT_LITERAL(&l, " chunks=");
            tt_sbuf_u64(&l, (uint32_t)(e->last_chunk - e->first_chunk + 1));
            PUT_LITERAL(&l, " shared=");
            tt_sbuf_u64(&l, e->shared_chunk);
            PUT_LITERAL(&l, " flags=");
            put_flag_names(&l, e->frame_flags, frame_names, N(frame_names));
            if (a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len) {
                PUT_LITERAL(&l, " text=");
                tt_sbuf_quoted(&l, r->text + e->text_off, e->text_bytes, c_escape_byte);
            }
            PUT_LITERAL(&l, "\n");
            if (l.oom) { /* a line could not be built: said, not cut short */
                fputs("(out of memory: the event listing stops here)\n", out);
                tt_sbuf_free(&l);
                return;
            }
            fwrite(l.p, 1, l.len, out);
        }
    }
    tt_sbuf_free(&l);
}

/* The JSON listing builds each event's object in a tt_sbuf, its names
 * written as literals, and hands it to the writer whole (a writer call
 * per name and per value, each name escaped, were most of a --json
 * --events run). */
/* One event as a JSON object, at l (reset first). */
static void event_json(tt_sbuf *l, const tt_analysis *a, const tt_request *r, const tt_event_rec *e)
{
    tt_sbuf_reset(l);
    PUT_LITERAL(l, "{\"kind\":\"");
    tt_sbuf_puts(l, tt_event_kind_name((tt_event_kind)e->kind));
    PUT_LITERAL(l, "\",\"dispatch_mono_ns\":");
    tt_sbuf_u64(l, e->dispatch_ns);
    PUT_LITERAL(l, ",\"ready_ns\":");
    if (e->ready_ns != UINT64_MAX) tt_sbuf_u64(l, e->ready_ns);
    else PUT_LITERAL(l, "null");
    PUT_LITERAL(l, ",\"first_mono_ns\":");
    tt_sbuf_u64(l, e->first_ns);
    PUT_LITERAL(l, ",\"first_off\":");
    tt_sbuf_u64(l, e->first_off);
    PUT_LITERAL(l, ",\"dispatch_off\":");
    tt_sbuf_u64(l, e->dispatch_off);
    PUT_LITERAL(l, ",\"type\":");
    const char *type = tt_tracker_type_name(a->tracker, e->type_id);
    if (type && *type) tt_sbuf_json_str(l, type, strlen(type));
    else PUT_LITERAL(l, "null");
    PUT_LITERAL(l, ",\"data_bytes\":");
    tt_sbuf_u64(l, e->data_len);
    PUT_LITERAL(l, ",\"text_bytes\":");
    tt_sbuf_u64(l, e->text_bytes);
    PUT_LITERAL(l, ",\"text_fnv1a64\":\"");
    put_hex16(l, e->text_hash);
    PUT_LITERAL(l, "\",\"carries\":\"");
    put_flag_names(l, e->has, has_names, N(has_names));
    PUT_LITERAL(l, "\",\"terminators\":\"");
    put_flag_names(l, e->terminators, term_names, N(term_names));
    PUT_LITERAL(l, "\",\"fields\":\"");
    put_flag_names(l, e->fields, field_names, N(field_names));
    PUT_LITERAL(l, "\",\"framing_flags\":\"");
    put_flag_names(l, e->frame_flags, frame_names, N(frame_names));
    PUT_LITERAL(l, "\",\"lines\":");
    tt_sbuf_u64(l, e->lines);
    PUT_LITERAL(l, ",\"comment_lines\":");
    tt_sbuf_u64(l, e->comment_lines);
    PUT_LITERAL(l, ",\"chunks\":");
    tt_sbuf_u64(l, (uint32_t)(e->last_chunk - e->first_chunk + 1));
    PUT_LITERAL(l, ",\"shared_chunk_with\":");
    tt_sbuf_u64(l, e->shared_chunk);
    if (a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len) {
        PUT_LITERAL(l, ",\"text\":");
        tt_sbuf_json_str(l, r->text + e->text_off, e->text_bytes);
    }
    PUT_LITERAL(l, "}");
}

void tt_report_events_json(FILE *out, const tt_analysis *a)
{
    tt_jw w;
    tt_sbuf l = {0};
    tt_jw_init(&w, out, false);
    tt_jw_object_begin(&w, NULL);
    tt_jw_str(&w, "input", a->input);
    tt_jw_str(&w, "vantage", tt_vantage_name(a->vantage));
    tt_jw_str(&w, "clock", tt_clock_name(a->clock));
    tt_jw_array_begin(&w, "requests");
    for (size_t i = 0; i < a->n_reqs; i++) {
        const tt_request *r = &a->reqs[i];
        tt_jw_object_begin(&w, NULL);
        tt_jw_str_or_null(&w, "request_id", r->request_id);
        tt_jw_uint(&w, "index", i);
        tt_jw_instant(&w, "req_first_mono_ns", r->req_first_ns);
        tt_jw_instant(&w, "req_ready_mono_ns", r->req_ready_ns);
        tt_jw_array_begin(&w, "events");
        for (uint32_t k = 0; k < r->n_events && !l.oom; k++) {
            event_json(&l, a, r, &r->events[k]);
            if (!l.oom) tt_jw_raw(&w, NULL, l.p, l.len);
        }
        tt_jw_array_end(&w);
        tt_jw_object_end(&w);
        if (l.oom) break;
    }
    tt_jw_array_end(&w);
    if (l.oom) tt_jw_str(&w, "listing_stopped", "out of memory: the event listing stops here");
    tt_jw_object_end(&w);
    tt_jw_end(&w);
    tt_sbuf_free(&l);
}
