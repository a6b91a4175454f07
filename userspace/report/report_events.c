#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto/event_frame.h"
#include "report/json_writer.h"
#include "report/report.h"

/* The names of the bits set in bits, joined by '|' ("-" when none), at buf
 * (cap >= 2 bytes, NUL-terminated; names that no longer fit are left out). */
static void flag_names(char *buf, size_t cap, unsigned bits, const char *const *names, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(bits & (1u << i))) continue;
        size_t name_len = strlen(names[i]), sep = len ? 1 : 0;
        if (len + sep + name_len >= cap) break;
        if (sep) buf[len++] = '|';
        memcpy(buf + len, names[i], name_len);
        len += name_len;
    }
    if (!len) buf[len++] = '-';
    buf[len] = 0;
}

static const char *const term_names[] = {"LF", "CR", "CRLF"};
static const char *const field_names[] = {"data", "event", "id", "retry", "other"};
static const char *const frame_names[] = {"data-no-space", "bom", "empty-data-line", "raw-line-sep",
                                          "unterminated", "truncated", "compressed", "bad-prefix"};
static const char *const has_names[] = {"text", "reasoning", "tool-args", "usage", "finish",
                                        "terminal", "choices", "role", "error", "special", "malformed",
                                        "empty-choices"};

#define N(a) (sizeof(a) / sizeof *(a))

static void escaped(FILE *out, const char *s, size_t n)
{
    putc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", out);
        else if (c == '\r') fputs("\\r", out);
        else if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", c);
        else putc(c, out);
    }
    putc('"', out);
}

/* One line of the text listing, built in place and written with one
 * stdio call (printf's parsing and a call per field were most of a
 * listing's time). Longer input than the line holds is cut, never
 * overrun; an event's line stays far below it. */
typedef struct line {
    size_t n;
    char b[1024];
} line;

static void put_mem(line *l, const char *s, size_t n)
{
    if (n > sizeof l->b - l->n) n = sizeof l->b - l->n;
    memcpy(l->b + l->n, s, n);
    l->n += n;
}

static void put_str(line *l, const char *s) { put_mem(l, s, strlen(s)); }

/* v in decimal, at least width digits wide, padded on the left with
 * spaces ("%*llu"). */
static void put_uint(line *l, uint64_t v, unsigned width)
{
    char d[24];
    size_t i = sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (sizeof d - i < width && i > 0) d[--i] = ' ';
    put_mem(l, d + i, sizeof d - i);
}

/* s, padded on the right with spaces to width ("%-*s"). */
static void put_left(line *l, const char *s, size_t width)
{
    size_t n = strlen(s);
    put_mem(l, s, n);
    for (; n < width; n++) put_mem(l, " ", 1);
}

static void put_hex16(line *l, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char d[16];
    for (int i = 15; i >= 0; i--, v >>= 4) d[i] = hex[v & 15];
    put_mem(l, d, sizeof d);
}

/* ns in milliseconds as "%.3f" writes (double)ns / 1e6. Whole
 * microseconds, rounded, give the same digits unless ns is an exact half
 * microsecond (the double sits on one side of the tie) or too large for
 * the double to keep a nanosecond: those go through printf. */
static void put_ms(line *l, uint64_t ns)
{
    if (ns < (UINT64_C(1) << 50) && ns % 1000 != 500) {
        uint64_t us = (ns + 500) / 1000;
        put_uint(l, us / 1000, 0);
        char frac[4] = {'.', (char)('0' + us % 1000 / 100), (char)('0' + us % 100 / 10), (char)('0' + us % 10)};
        put_mem(l, frac, sizeof frac);
        return;
    }
    char b[40];
    int n = snprintf(b, sizeof b, "%.3f", (double)ns / 1e6);
    if (n > 0) put_mem(l, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

void tt_report_events_text(FILE *out, const tt_analysis *a)
{
    for (size_t i = 0; i < a->n_reqs; i++) {
        const tt_request *r = &a->reqs[i];
        char c[64], s[64];
        fprintf(out, "request %zu %s %s -> %s #%u %s %s status=%d dialect=%s events=%u\n", i,
                r->request_id[0] ? r->request_id : "-", tt_endpoint_format(&r->client, c, sizeof c),
                tt_endpoint_format(&r->server, s, sizeof s), r->ordinal, r->method[0] ? r->method : "-",
                r->path[0] ? r->path : "-", r->status, tt_dialect_name(r->dialect), r->n_events);
        for (uint32_t k = 0; k < r->n_events; k++) {
            const tt_event_rec *e = &r->events[k];
            char names[160];
            const char *type = tt_tracker_type_name(a->tracker, e->type_id);
            line l = {.n = 0};
            put_mem(&l, "  ", 2);
            put_uint(&l, k, 4);
            put_mem(&l, " ", 1);
            put_left(&l, tt_event_kind_name((tt_event_kind)e->kind), 9);
            put_str(&l, " t=");
            put_uint(&l, e->dispatch_ns, 0);
            put_str(&l, " first=");
            put_uint(&l, e->first_ns, 0);
            if (r->req_first_ns != TT_NS_NONE) {
                put_str(&l, " +");
                put_ms(&l, e->dispatch_ns - r->req_first_ns);
                put_str(&l, "ms");
            }
            if (e->ready_ns != TT_NS_NONE && e->ready_ns <= e->dispatch_ns) {
                put_str(&l, " queued=");
                put_ms(&l, e->dispatch_ns - e->ready_ns);
                put_str(&l, "ms");
            }
            put_str(&l, " off=");
            put_uint(&l, e->first_off, 0);
            put_str(&l, "..");
            put_uint(&l, e->dispatch_off, 0);
            put_str(&l, " type=");
            put_str(&l, type[0] ? type : "-");
            put_str(&l, " data=");
            put_uint(&l, e->data_len, 0);
            put_str(&l, " text=");
            put_uint(&l, e->text_bytes, 0);
            put_str(&l, " hash=");
            put_hex16(&l, e->text_hash);
            flag_names(names, sizeof names, e->has, has_names, N(has_names));
            put_str(&l, " has=");
            put_str(&l, names);
            flag_names(names, 32, e->terminators, term_names, N(term_names));
            put_str(&l, " term=");
            put_str(&l, names);
            flag_names(names, 48, e->fields, field_names, N(field_names));
            put_str(&l, " fields=");
            put_str(&l, names);
            put_str(&l, " lines=");
            put_uint(&l, e->lines, 0);
            put_str(&l, " comments=");
            put_uint(&l, e->comment_lines, 0);
            put_str(&l, " chunks=");
            put_uint(&l, (uint32_t)(e->last_chunk - e->first_chunk + 1), 0);
            put_str(&l, " shared=");
            put_uint(&l, e->shared_chunk, 0);
            flag_names(names, 96, e->frame_flags, frame_names, N(frame_names));
            put_str(&l, " flags=");
            put_str(&l, names);
            bool with_text =
                a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len;
            if (!with_text) put_mem(&l, "\n", 1);
            fwrite(l.b, 1, l.n, out);
            if (with_text) {
                fputs(" text=", out);
                escaped(out, r->text + e->text_off, e->text_bytes);
                putc('\n', out);
            }
        }
    }
}

void tt_report_events_json(FILE *out, const tt_analysis *a)
{
    tt_jw w;
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
        for (uint32_t k = 0; k < r->n_events; k++) {
            const tt_event_rec *e = &r->events[k];
            char buf[160];
            tt_jw_object_begin(&w, NULL);
            tt_jw_str(&w, "kind", tt_event_kind_name((tt_event_kind)e->kind));
            tt_jw_uint(&w, "dispatch_mono_ns", e->dispatch_ns);
            tt_jw_instant(&w, "ready_ns", e->ready_ns);
            tt_jw_uint(&w, "first_mono_ns", e->first_ns);
            tt_jw_uint(&w, "first_off", e->first_off);
            tt_jw_uint(&w, "dispatch_off", e->dispatch_off);
            tt_jw_str_or_null(&w, "type", tt_tracker_type_name(a->tracker, e->type_id));
            tt_jw_uint(&w, "data_bytes", e->data_len);
            tt_jw_uint(&w, "text_bytes", e->text_bytes);
            snprintf(buf, sizeof buf, "%016" PRIx64, e->text_hash);
            tt_jw_str(&w, "text_fnv1a64", buf);
            flag_names(buf, sizeof buf, e->has, has_names, N(has_names));
            tt_jw_str(&w, "carries", buf);
            flag_names(buf, sizeof buf, e->terminators, term_names, N(term_names));
            tt_jw_str(&w, "terminators", buf);
            flag_names(buf, sizeof buf, e->fields, field_names, N(field_names));
            tt_jw_str(&w, "fields", buf);
            flag_names(buf, sizeof buf, e->frame_flags, frame_names, N(frame_names));
            tt_jw_str(&w, "framing_flags", buf);
            tt_jw_uint(&w, "lines", e->lines);
            tt_jw_uint(&w, "comment_lines", e->comment_lines);
            tt_jw_uint(&w, "chunks", e->last_chunk - e->first_chunk + 1);
            tt_jw_uint(&w, "shared_chunk_with", e->shared_chunk);
            if (a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len)
                tt_jw_strn(&w, "text", r->text + e->text_off, e->text_bytes);
            tt_jw_object_end(&w);
        }
        tt_jw_array_end(&w);
        tt_jw_object_end(&w);
    }
    tt_jw_array_end(&w);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
}
