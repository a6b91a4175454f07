#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto/event_frame.h"
#include "report/json_writer.h"
#include "report/report.h"

static void flag_names(char *buf, size_t cap, unsigned bits, const char *const *names, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(bits & (1u << i))) continue;
        int k = snprintf(buf + len, cap - len, "%s%s", len ? "|" : "", names[i]);
        if (k < 0 || (size_t)k >= cap - len) break;
        len += (size_t)k;
    }
    if (!len) snprintf(buf, cap, "-");
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
            char term[32], fields[48], flags[96], has[160];
            flag_names(term, sizeof term, e->terminators, term_names, N(term_names));
            flag_names(fields, sizeof fields, e->fields, field_names, N(field_names));
            flag_names(flags, sizeof flags, e->frame_flags, frame_names, N(frame_names));
            flag_names(has, sizeof has, e->has, has_names, N(has_names));
            const char *type = tt_tracker_type_name(a->tracker, e->type_id);
            fprintf(out, "  %4u %-9s t=%" PRIu64 " first=%" PRIu64, k, tt_event_kind_name((tt_event_kind)e->kind),
                    e->dispatch_ns, e->first_ns);
            if (r->req_first_ns != TT_NS_NONE)
                fprintf(out, " +%.3fms", (double)(e->dispatch_ns - r->req_first_ns) / 1e6);
            if (e->ready_ns != TT_NS_NONE && e->ready_ns <= e->dispatch_ns)
                fprintf(out, " queued=%.3fms", (double)(e->dispatch_ns - e->ready_ns) / 1e6);
            fprintf(out, " off=%" PRIu64 "..%" PRIu64 " type=%s data=%u text=%u hash=%016" PRIx64
                         " has=%s term=%s fields=%s lines=%u comments=%u chunks=%u shared=%u flags=%s",
                    e->first_off, e->dispatch_off, type[0] ? type : "-", e->data_len, e->text_bytes, e->text_hash, has,
                    term, fields, e->lines, e->comment_lines, e->last_chunk - e->first_chunk + 1, e->shared_chunk,
                    flags);
            if (a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len) {
                fputs(" text=", out);
                escaped(out, r->text + e->text_off, e->text_bytes);
            }
            putc('\n', out);
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
