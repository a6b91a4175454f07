/* report_perfetto.c - the breakdown as a Chrome trace (Trace Event Format,
 * JSON object form), which ui.perfetto.dev and chrome://tracing open.
 *
 * One process per vantage (reported, client, wire, server) and one for the
 * TTFT parts; one thread per request in each. Timestamps are microseconds
 * from the earliest request start (otherData.base_ns gives it), written
 * with three decimals so every nanosecond survives. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report/report_multi.h"

enum { PID_REPORTED = 1, PID_CLIENT, PID_CLIENT_WIRE, PID_WIRE, PID_SERVER, PID_PARTS };

typedef struct trace_out {
    FILE *out;
    int64_t base;
    bool first;
} trace_out;

static void json_string(FILE *out, const char *s)
{
    putc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(out, "\\u%04x", *p);
        else putc(*p, out);
    }
    putc('"', out);
}

/* ns as microseconds with exactly three decimals. */
static void micros(FILE *out, int64_t ns)
{
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(out, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", mag / 1000, (unsigned)(mag % 1000));
}

static void begin_event(trace_out *t)
{
    fputs(t->first ? "\n" : ",\n", t->out);
    t->first = false;
}

static void metadata(trace_out *t, const char *what, int pid, int64_t tid, const char *name)
{
    begin_event(t);
    fprintf(t->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d", what, pid);
    if (tid >= 0) fprintf(t->out, ",\"tid\":%" PRId64, tid);
    fputs(",\"args\":{\"name\":", t->out);
    json_string(t->out, name);
    fputs("}}", t->out);
}

static void sort_index(trace_out *t, int pid)
{
    begin_event(t);
    fprintf(t->out, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", pid, pid);
}

static void slice(trace_out *t, int pid, int64_t tid, const char *name, const char *cat, int64_t from, int64_t dur)
{
    begin_event(t);
    fputs("{\"ph\":\"X\",\"name\":", t->out);
    json_string(t->out, name);
    fprintf(t->out, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", cat, pid, tid);
    micros(t->out, from - t->base);
    fputs(",\"dur\":", t->out);
    micros(t->out, dur);
    fprintf(t->out, ",\"args\":{\"ns\":%" PRId64 "}}", dur);
}

static void instant(trace_out *t, int pid, int64_t tid, const char *name, const char *cat, int64_t at, int64_t arg_n)
{
    begin_event(t);
    fputs("{\"ph\":\"i\",\"s\":\"t\",\"name\":", t->out);
    json_string(t->out, name);
    fprintf(t->out, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", cat, pid, tid);
    micros(t->out, at - t->base);
    if (arg_n >= 0) fprintf(t->out, ",\"args\":{\"n\":%" PRId64 "}", arg_n);
    fputs("}", t->out);
}

static int vantage_pid(tt_vantage v)
{
    switch (v) {
    case TT_VANTAGE_CLIENT: return PID_CLIENT;
    case TT_VANTAGE_CLIENT_WIRE: return PID_CLIENT_WIRE;
    case TT_VANTAGE_WIRE: return PID_WIRE;
    default: return PID_SERVER;
    }
}

static void request_at_vantage(trace_out *t, const tt_breakdown *b, size_t i, tt_vantage v)
{
    const tt_joined *g = &b->join.reqs[i];
    const tt_request *r = tt_join_request(&b->join, g, v);
    const tt_req_metrics *m = tt_join_metrics(&b->join, g, v);
    if (!r || r->req_first_ns == TT_NS_NONE) return;
    int pid = vantage_pid(v);
    int64_t tid = (int64_t)i + 1;
    uint64_t end = r->resp_last_ns != TT_NS_NONE ? r->resp_last_ns : r->req_last_ns;
    if (end == TT_NS_NONE || end < r->req_first_ns) end = r->req_first_ns;
    slice(t, pid, tid, "request", "request", (int64_t)r->req_first_ns, (int64_t)(end - r->req_first_ns));
    if (m->has_ttft) slice(t, pid, tid, "TTFT", "ttft", (int64_t)r->req_first_ns, m->ttft_ns);
    int64_t k = 0;
    for (uint32_t e = 0; e < r->n_events; e++) {
        const tt_event_rec *ev = &r->events[e];
        if (ev->kind == TT_EV_TOKEN) instant(t, pid, tid, "token", "token", (int64_t)ev->dispatch_ns, k++);
        else instant(t, pid, tid, tt_event_kind_name((tt_event_kind)ev->kind), "event", (int64_t)ev->dispatch_ns, -1);
    }
}

static void reported_request(trace_out *t, const tt_breakdown *b, size_t i)
{
    const tt_bench_request *br = tt_join_bench(&b->join, &b->join.reqs[i]);
    int64_t start = b->per[i].reported_start_ns;
    if (!br || start == TT_DECOMP_NONE) return;
    int64_t tid = (int64_t)i + 1;
    if (br->e2el_ns != TT_BENCH_NONE && br->e2el_ns >= 0) slice(t, PID_REPORTED, tid, "E2EL", "e2el", start, br->e2el_ns);
    if (br->ttft_ns == TT_BENCH_NONE || br->ttft_ns < 0) return;
    slice(t, PID_REPORTED, tid, "TTFT", "ttft", start, br->ttft_ns);
    int64_t at = start + br->ttft_ns;
    instant(t, PID_REPORTED, tid, "token", "reported-token", at, 0);
    for (size_t k = 0; k < br->n_itl; k++) {
        at += br->itl_ns[k];
        instant(t, PID_REPORTED, tid, "token", "reported-token", at, (int64_t)k + 1);
    }
}

static void parts_request(trace_out *t, const tt_breakdown *b, size_t i)
{
    const tt_split *s = &b->per[i].ttft;
    int64_t tid = (int64_t)i + 1;
    for (size_t r = 0; r < s->n_runs; r++) {
        const tt_run *run = &s->runs[r];
        if (run->from_ns == TT_DECOMP_NONE) continue;
        const char *names[TT_SEG_COUNT];
        size_t n_names = tt_run_names(s, run, false, names);
        char name[200] = "";
        size_t len = 0;
        for (size_t k = 0; k < n_names; k++) {
            int n = snprintf(name + len, sizeof name - len, "%s%s", k ? "+" : "", names[k]);
            if (n > 0 && (size_t)n < sizeof name - len) len += (size_t)n;
        }
        if (run->ns >= 0) {
            slice(t, PID_PARTS, tid, name, "ttft-part", run->from_ns, run->ns);
        } else {
            char neg[260];
            snprintf(neg, sizeof neg, "%s (negative: %" PRId64 " ns)", name, run->ns);
            instant(t, PID_PARTS, tid, neg, "ttft-part", run->from_ns, -1);
        }
    }
}

static const char *thread_name(const tt_breakdown *b, size_t i, char *buf, size_t cap)
{
    const tt_joined *g = &b->join.reqs[i];
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        const tt_request *r = tt_join_request(&b->join, g, (tt_vantage)v);
        if (r && r->request_id[0]) {
            snprintf(buf, cap, "%s", r->request_id);
            return buf;
        }
    }
    snprintf(buf, cap, "request %zu", i);
    return buf;
}

void tt_report_perfetto(FILE *out, const tt_breakdown *b)
{
    trace_out t = {.out = out, .base = INT64_MAX, .first = true};
    for (size_t i = 0; i < b->join.n; i++) {
        if (b->join.reqs[i].start_ns != TT_NS_NONE && (int64_t)b->join.reqs[i].start_ns < t.base)
            t.base = (int64_t)b->join.reqs[i].start_ns;
        if (b->per[i].reported_start_ns != TT_DECOMP_NONE && b->per[i].reported_start_ns < t.base)
            t.base = b->per[i].reported_start_ns;
    }
    if (t.base == INT64_MAX) t.base = 0;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"tokentap\",\"base_ns\":", out);
    fprintf(out, "%" PRId64 "},\"traceEvents\":[", t.base);
    static const struct { int pid; tt_vantage v; const char *name; } procs[] = {
        {PID_CLIENT, TT_VANTAGE_CLIENT, "client"},
        {PID_CLIENT_WIRE, TT_VANTAGE_CLIENT_WIRE, "client wire"},
        {PID_WIRE, TT_VANTAGE_WIRE, "wire"},
        {PID_SERVER, TT_VANTAGE_SERVER, "server"}};
    const size_t n_procs = sizeof procs / sizeof *procs;
    if (b->join.bench) {
        metadata(&t, "process_name", PID_REPORTED, -1, "reported (benchmark)");
        sort_index(&t, PID_REPORTED);
    }
    for (size_t k = 0; k < n_procs; k++)
        if (b->join.by_vantage[procs[k].v]) {
            metadata(&t, "process_name", procs[k].pid, -1, procs[k].name);
            sort_index(&t, procs[k].pid);
        }
    metadata(&t, "process_name", PID_PARTS, -1, "TTFT parts");
    sort_index(&t, PID_PARTS);
    for (size_t i = 0; i < b->join.n; i++) {
        char name[160];
        thread_name(b, i, name, sizeof name);
        int64_t tid = (int64_t)i + 1;
        if (tt_join_bench(&b->join, &b->join.reqs[i]) && b->per[i].reported_start_ns != TT_DECOMP_NONE) {
            metadata(&t, "thread_name", PID_REPORTED, tid, name);
            reported_request(&t, b, i);
        }
        for (size_t k = 0; k < n_procs; k++)
            if (tt_join_request(&b->join, &b->join.reqs[i], procs[k].v)) {
                metadata(&t, "thread_name", procs[k].pid, tid, name);
                request_at_vantage(&t, b, i, procs[k].v);
            }
        if (b->per[i].ttft.n_runs) {
            metadata(&t, "thread_name", PID_PARTS, tid, name);
            parts_request(&t, b, i);
        }
    }
    fputs("\n]}\n", out);
}
