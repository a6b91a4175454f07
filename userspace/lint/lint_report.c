/* lint_report.c - findings as a text section and as a JSON array. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lint/lint.h"
#include "report/report.h"

#define EXCERPT_SHOWN 160u

#define EXCERPT_TAIL 60u

/* C-style escape of p[0..n) appended at buf+len: printable ASCII as is,
 * \r \n \t \\ \" and \xNN for the rest. Returns the new length. */
static size_t escape_into(const uint8_t *p, size_t n, char *buf, size_t len, size_t cap)
{
    for (size_t i = 0; i < n && len + 8 < cap; i++) {
        uint8_t c = p[i];
        if (c == '\n') len += (size_t)snprintf(buf + len, cap - len, "\\n");
        else if (c == '\r') len += (size_t)snprintf(buf + len, cap - len, "\\r");
        else if (c == '\t') len += (size_t)snprintf(buf + len, cap - len, "\\t");
        else if (c == '\\' || c == '"') len += (size_t)snprintf(buf + len, cap - len, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) len += (size_t)snprintf(buf + len, cap - len, "\\x%02x", c);
        else buf[len++] = (char)c;
    }
    return len;
}

/* The excerpt escaped into buf: whole up to EXCERPT_SHOWN bytes, else its
 * head, "...", and its last EXCERPT_TAIL bytes (where terminators are). */
static const char *escape_bytes(const uint8_t *p, size_t n, char *buf, size_t cap)
{
    size_t len;
    if (n <= EXCERPT_SHOWN) {
        len = escape_into(p, n, buf, 0, cap);
    } else {
        len = escape_into(p, EXCERPT_SHOWN - EXCERPT_TAIL, buf, 0, cap);
        if (len + 4 < cap) len += (size_t)snprintf(buf + len, cap - len, "...");
        len = escape_into(p + n - EXCERPT_TAIL, EXCERPT_TAIL, buf, len, cap);
    }
    buf[len] = 0;
    return buf;
}

/* The kept bytes of f's excerpt, or NULL when the body was not kept there. */
static const uint8_t *excerpt_bytes(const tt_lint_finding *f, const tt_request *r, size_t *n)
{
    *n = 0;
    if (!f->excerpt_len || !r->body || f->excerpt_off >= r->body_len) return NULL;
    size_t room = r->body_len - f->excerpt_off;
    *n = f->excerpt_len < room ? f->excerpt_len : room;
    return r->body + f->excerpt_off;
}

static const char *request_name(const tt_request *r, char *buf, size_t cap)
{
    char c[64], s[64];
    if (r->request_id[0]) snprintf(buf, cap, "%s", r->request_id);
    else
        snprintf(buf, cap, "%s -> %s #%u", tt_endpoint_format(&r->client, c, sizeof c),
                 tt_endpoint_format(&r->server, s, sizeof s), r->ordinal);
    return buf;
}

static void write_summary_text(FILE *out, const tt_lint_result *res, const tt_lint_view *v)
{
    fprintf(out, "%-6s %-22s %9s %12s  %s\n", "level", "finding", "requests", "occurrences", "first in");
    for (int id = 0; id < TT_LINT_COUNT; id++) {
        if (!res->by_id[id]) continue;
        const tt_lint_finding *first = NULL;
        uint64_t total = 0;
        for (size_t i = 0; i < res->n; i++) {
            if (res->findings[i].id != (tt_lint_id)id) continue;
            if (!first) first = &res->findings[i];
            total += res->findings[i].count;
        }
        const tt_lint_entry *e = tt_lint_entry_of((tt_lint_id)id);
        char name[192];
        fprintf(out, "%-6s %-22s %9u %12" PRIu64 "  %s\n", tt_lint_severity_name(e->severity), e->name,
                res->by_id[id], total, request_name(&v->reqs[first->request], name, sizeof name));
    }
}

static void write_finding_text(FILE *out, const tt_lint_finding *f, const tt_lint_view *v)
{
    const tt_lint_entry *e = tt_lint_entry_of(f->id);
    const tt_request *r = &v->reqs[f->request];
    char name[192];
    fprintf(out, "\n[%s] %s  request %u %s\n", tt_lint_severity_name(e->severity), e->name, f->request,
            request_name(r, name, sizeof name));
    fprintf(out, "    ");
    if (f->event >= 0) fprintf(out, "event %d, ", f->event);
    fprintf(out, "%u occurrence%s", f->count, f->count == 1 ? "" : "s");
    if (f->offset != TT_LINT_NO_OFFSET) fprintf(out, ", body offset %" PRIu64, f->offset);
    if (f->mono_ns != TT_NS_NONE) fprintf(out, ", at %" PRIu64 " ns", f->mono_ns);
    putc('\n', out);
    if (f->detail[0]) fprintf(out, "    %s\n", f->detail);
    size_t n;
    const uint8_t *bytes = excerpt_bytes(f, r, &n);
    if (bytes) {
        if (v->with_text) {
            char esc[EXCERPT_SHOWN * 4 + 8];
            fprintf(out, "    bytes %" PRIu64 "+%zu: \"%s\"\n", f->excerpt_off, n, escape_bytes(bytes, n, esc, sizeof esc));
        } else {
            fprintf(out, "    bytes %" PRIu64 "+%zu fnv1a64 %016" PRIx64 " (--text shows them)\n", f->excerpt_off, n,
                    tt_lint_fnv1a64(bytes, n));
        }
    }
    fprintf(out, "    %s\n    clients: %s\n", e->summary, e->clients);
}

void tt_lint_write_text(FILE *out, const tt_lint_result *res, const tt_lint_view *v)
{
    if (!res) return;
    tt_report_rule(out, " Findings ", '=');
    if (!res->n) {
        fputs("none\n", out);
        return;
    }
    fprintf(out, "%zu findings: %u error, %u warn, %u info\n", res->n, res->by_severity[TT_LINT_ERROR],
            res->by_severity[TT_LINT_WARN], res->by_severity[TT_LINT_INFO]);
    write_summary_text(out, res, v);
    if (!v->detailed) {
        fputs("(tokentap lint lists each finding with its bytes and what it does to known clients)\n", out);
        return;
    }
    for (size_t i = 0; i < res->n; i++) write_finding_text(out, &res->findings[i], v);
}

static void write_finding_json(tt_jw *w, const tt_lint_finding *f, const tt_lint_view *v)
{
    const tt_lint_entry *e = tt_lint_entry_of(f->id);
    const tt_request *r = &v->reqs[f->request];
    char ep[64], buf[EXCERPT_SHOWN * 4 + 8];
    tt_jw_object_begin(w, NULL);
    tt_jw_str(w, "id", e->name);
    tt_jw_str(w, "severity", tt_lint_severity_name(e->severity));
    if (v->vantage) tt_jw_str(w, "vantage", v->vantage);
    tt_jw_uint(w, "request_index", f->request);
    if (v->joined && v->joined[f->request] != SIZE_MAX) tt_jw_uint(w, "joined_request", v->joined[f->request]);
    else if (v->joined) tt_jw_null(w, "joined_request");
    tt_jw_str_or_null(w, "request_id", r->request_id);
    tt_jw_object_begin(w, "connection");
    tt_jw_str(w, "client", tt_endpoint_format(&r->client, ep, sizeof ep));
    tt_jw_str(w, "server", tt_endpoint_format(&r->server, ep, sizeof ep));
    tt_jw_uint(w, "ordinal", r->ordinal);
    tt_jw_object_end(w);
    if (f->event >= 0) tt_jw_int(w, "event_index", f->event);
    else tt_jw_null(w, "event_index");
    tt_jw_uint(w, "count", f->count);
    if (f->offset != TT_LINT_NO_OFFSET) tt_jw_uint(w, "offset", f->offset);
    else tt_jw_null(w, "offset");
    if (f->mono_ns != TT_NS_NONE) tt_jw_uint(w, "mono_ns", f->mono_ns);
    else tt_jw_null(w, "mono_ns");
    size_t n;
    const uint8_t *bytes = excerpt_bytes(f, r, &n);
    if (bytes) {
        tt_jw_object_begin(w, "excerpt");
        tt_jw_uint(w, "offset", f->excerpt_off);
        tt_jw_uint(w, "bytes", n);
        snprintf(buf, sizeof buf, "%016" PRIx64, tt_lint_fnv1a64(bytes, n));
        tt_jw_str(w, "fnv1a64", buf);
        if (v->with_text) tt_jw_str(w, "text", escape_bytes(bytes, n, buf, sizeof buf));
        tt_jw_object_end(w);
    } else {
        tt_jw_null(w, "excerpt");
    }
    tt_jw_str_or_null(w, "detail", f->detail);
    tt_jw_str(w, "description", e->summary);
    tt_jw_str(w, "clients", e->clients);
    tt_jw_object_end(w);
}

void tt_lint_write_json_items(tt_jw *w, const tt_lint_result *res, const tt_lint_view *v)
{
    if (res)
        for (size_t i = 0; i < res->n; i++) write_finding_json(w, &res->findings[i], v);
}

void tt_lint_write_json(tt_jw *w, const char *key, const tt_lint_result *res, const tt_lint_view *v)
{
    tt_jw_array_begin(w, key);
    tt_lint_write_json_items(w, res, v);
    tt_jw_array_end(w);
}

const tt_lint_finding *tt_lint_findings_of(const tt_lint_result *res, size_t request, size_t *n)
{
    *n = 0;
    if (!res) return NULL;
    size_t lo = 0, hi = res->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (res->findings[mid].request < request) lo = mid + 1;
        else hi = mid;
    }
    size_t end = lo;
    while (end < res->n && res->findings[end].request == request) end++;
    *n = end - lo;
    return *n ? &res->findings[lo] : NULL;
}

void tt_lint_write_json_summary(tt_jw *w, const char *key, const tt_lint_result *res)
{
    tt_jw_object_begin(w, key);
    tt_jw_uint(w, "findings", res ? res->n : 0);
    for (int s = TT_LINT_INFO; s <= TT_LINT_ERROR; s++)
        tt_jw_uint(w, tt_lint_severity_name((tt_lint_severity)s), res ? res->by_severity[s] : 0);
    tt_jw_object_begin(w, "requests_by_id");
    for (int id = 0; res && id < TT_LINT_COUNT; id++)
        if (res->by_id[id]) tt_jw_uint(w, tt_lint_entry_of((tt_lint_id)id)->name, res->by_id[id]);
    tt_jw_object_end(w);
    tt_jw_object_end(w);
}
