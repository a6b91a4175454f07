#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sbuf.h"
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
            char names[160];
            const char *type = tt_tracker_type_name(a->tracker, e->type_id);
            tt_sbuf_reset(&l);
            tt_sbuf_put(&l, "  ", 2);
            put_uint4(&l, k);
            tt_sbuf_put(&l, " ", 1);
            put_left9(&l, tt_event_kind_name((tt_event_kind)e->kind));
            tt_sbuf_puts(&l, " t=");
            tt_sbuf_u64(&l, e->dispatch_ns);
            tt_sbuf_puts(&l, " first=");
            tt_sbuf_u64(&l, e->first_ns);
            if (r->req_first_ns != TT_NS_NONE) {
                tt_sbuf_puts(&l, " +");
                put_ms(&l, e->dispatch_ns - r->req_first_ns);
                tt_sbuf_puts(&l, "ms");
            }
            if (e->ready_ns != TT_NS_NONE && e->ready_ns <= e->dispatch_ns) {
                tt_sbuf_puts(&l, " queued=");
                put_ms(&l, e->dispatch_ns - e->ready_ns);
                tt_sbuf_puts(&l, "ms");
            }
            tt_sbuf_puts(&l, " off=");
            tt_sbuf_u64(&l, e->first_off);
            tt_sbuf_puts(&l, "..");
            tt_sbuf_u64(&l, e->dispatch_off);
            tt_sbuf_puts(&l, " type=");
            tt_sbuf_puts(&l, type[0] ? type : "-");
            tt_sbuf_puts(&l, " data=");
            tt_sbuf_u64(&l, e->data_len);
            tt_sbuf_puts(&l, " text=");
            tt_sbuf_u64(&l, e->text_bytes);
            tt_sbuf_puts(&l, " hash=");
            put_hex16(&l, e->text_hash);
            flag_names(names, sizeof names, e->has, has_names, N(has_names));
            tt_sbuf_puts(&l, " has=");
            tt_sbuf_puts(&l, names);
            flag_names(names, 32, e->terminators, term_names, N(term_names));
            tt_sbuf_puts(&l, " term=");
            tt_sbuf_puts(&l, names);
            flag_names(names, 48, e->fields, field_names, N(field_names));
            tt_sbuf_puts(&l, " fields=");
            tt_sbuf_puts(&l, names);
            tt_sbuf_puts(&l, " lines=");
            tt_sbuf_u64(&l, e->lines);
            tt_sbuf_puts(&l, " comments=");
            tt_sbuf_u64(&l, e->comment_lines);
            tt_sbuf_puts(&l, " chunks=");
            tt_sbuf_u64(&l, (uint32_t)(e->last_chunk - e->first_chunk + 1));
            tt_sbuf_puts(&l, " shared=");
            tt_sbuf_u64(&l, e->shared_chunk);
            flag_names(names, 96, e->frame_flags, frame_names, N(frame_names));
            tt_sbuf_puts(&l, " flags=");
            tt_sbuf_puts(&l, names);
            bool with_text =
                a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len;
            if (!with_text) tt_sbuf_put(&l, "\n", 1);
            if (l.oom) { /* a line could not be built: said, not cut short */
                fputs("(out of memory: the event listing stops here)\n", out);
                tt_sbuf_free(&l);
                return;
            }
            fwrite(l.p, 1, l.len, out);
            if (with_text) {
                fputs(" text=", out);
                escaped(out, r->text + e->text_off, e->text_bytes);
                putc('\n', out);
            }
        }
    }
    tt_sbuf_free(&l);
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
