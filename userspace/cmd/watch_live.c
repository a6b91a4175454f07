/* watch_live.c - each vantage while watch runs (watch_live.h). */
#include "cmd/watch_live.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sbuf.h"
#include "core/util.h"
#include "metrics/metrics.h"
#include "report/report.h"

static FILE *open_append_0600(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "a");
    if (!f) close(fd);
    return f;
}

int watch_log_open(watch_log *l, const char *path, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    l->path = path;
    l->f = path ? open_append_0600(path) : stderr;
    if (!l->f) {
        snprintf(err, errlen, "--log %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void watch_log_reopen(watch_log *l)
{
    if (!l->path) return;
    FILE *f = open_append_0600(l->path);
    if (!f) {
        fprintf(stderr, "tokentap watch: --log %s: cannot reopen: %s; still writing the file open before\n", l->path,
                strerror(errno));
        return;
    }
    fclose(l->f);
    l->f = f;
}

void watch_log_line(watch_log *l, const char *text, size_t len)
{
    if (fwrite(text, 1, len, l->f) == len && fflush(l->f) == 0) {
        if (l->failing && l->path)
            fprintf(stderr, "tokentap watch: --log %s: writing again (%llu lines lost)\n", l->path,
                    (unsigned long long)l->dropped);
        l->failing = false;
        return;
    }
    int why = errno;
    clearerr(l->f);
    l->dropped++;
    if (!l->failing && l->path)
        fprintf(stderr, "tokentap watch: --log %s: %s: lines are lost (counted) until a write succeeds; tracing and "
                        "metrics go on\n", l->path, strerror(why));
    l->failing = true;
}

void watch_log_close(watch_log *l)
{
    if (l->f && l->f != stderr) fclose(l->f);
    l->f = NULL;
}

static void samples_push(watch_samples *s, int64_t x)
{
    if (!s->v && !(s->v = malloc(WATCH_SUMMARY_SAMPLES * sizeof *s->v))) return; /* the summary skips it */
    s->v[s->next] = x;
    s->next = (s->next + 1) % WATCH_SUMMARY_SAMPLES;
    if (s->n < WATCH_SUMMARY_SAMPLES) s->n++;
}

/* The median (upper middle) of v[0..n), n > 0, reordering v (quickselect). */
static int64_t median_in_place(int64_t *v, size_t n)
{
    size_t k = n / 2, lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        for (;;) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i >= j) break;
            int64_t t = v[i];
            v[i] = v[j];
            v[j] = t;
            i++;
            j--;
        }
        /* v[lo..j] <= pivot <= v[j+1..hi] */
        if (k <= j) hi = j;
        else lo = j + 1;
    }
    return v[k];
}

/* The median of the samples held (a copy is reordered: the ring keeps its
 * order, so the next push still replaces the oldest); false when none. */
static bool samples_median(const watch_samples *s, double *out)
{
    if (!s->n) return false;
    int64_t *copy = malloc(s->n * sizeof *copy);
    if (!copy) return false;
    memcpy(copy, s->v, s->n * sizeof *copy);
    *out = (double)median_in_place(copy, s->n);
    free(copy);
    return true;
}

void watch_observe_pair(void *ctx, const tt_request *server, const tt_request *client)
{
    int64_t uplink, downlink;
    tt_ljoin_links(server, client, &uplink, &downlink);
    tt_mreg_observe_links(ctx, server, uplink, downlink);
}

void watch_take_new(watch_vantage *w, const watch_limits *lim, const watch_sinks *out, uint64_t now_ns)
{
    size_t n;
    tt_request *reqs = tt_tracker_requests(w->tracker, &n);
    for (; w->taken < n; w->taken++) {
        tt_request *r = &reqs[w->taken];
        tt_req_metrics m;
        if (tt_req_metrics_compute(r, &m) < 0) break;
        if (out->reg) tt_mreg_observe(out->reg, w->vantage, r, &m);
        if (out->join) tt_ljoin_offer(out->join, w->vantage, r, now_ns);
        w->done++;
        if (!tt_request_complete(r)) w->incomplete++;
        if (m.has_ttft) samples_push(&w->ttft, m.ttft_ns);
        for (uint32_t i = 0; i < m.n_itl; i++) samples_push(&w->itl, m.itl_ns[i]);
        if (out->log) {
            char client[64], server[64], why[128];
            tt_sbuf line = {0};
            tt_sbuf_printf(&line, "%s %s -> %s %s %s status=%d tokens=%u", tt_vantage_name(w->vantage),
                           tt_endpoint_format(&r->client, client, sizeof client),
                           tt_endpoint_format(&r->server, server, sizeof server), r->method, r->path, r->status,
                           r->token_events);
            if (m.has_ttft) tt_sbuf_printf(&line, " ttft=%.3fms", (double)m.ttft_ns / 1e6);
            if (m.has_e2el) tt_sbuf_printf(&line, " e2el=%.3fms", (double)m.e2el_ns / 1e6);
            if (!tt_request_complete(r))
                tt_sbuf_printf(&line, " incomplete=%s", tt_incomplete_reasons(r, why, sizeof why));
            tt_sbuf_printf(&line, "\n");
            if (!line.oom) watch_log_line(out->log, line.p, line.len);
            tt_sbuf_free(&line);
        }
        if (w->release) tt_release_take(&w->digest, r, &m);
        tt_req_metrics_free(&m);
    }
    if (w->taken > lim->keep_requests) {
        size_t excess = w->taken - lim->keep_requests;
        tt_tracker_forget(w->tracker, excess);
        w->taken -= excess;
    }
}

void watch_bound_memory(watch_vantage *ws, size_t n, const watch_limits *lim, const watch_sinks *out,
                        uint64_t now_ns)
{
    if (!lim->max_heap || tt_heap_in_use() <= lim->max_heap) return;
    for (size_t i = 0; i < n; i++) {
        tt_tracker_forget(ws[i].tracker, ws[i].taken); /* only what was taken: the rest is still to export */
        ws[i].taken = 0;
    }
    while (tt_heap_in_use() > lim->max_heap) {
        size_t evicted = 0;
        for (size_t i = 0; i < n; i++) {
            tt_tracker_stats st;
            tt_tracker_stats_get(ws[i].tracker, &st);
            evicted += tt_tracker_evict(ws[i].tracker, st.live_connections / 8 + 1, now_ns);
        }
        if (!evicted) return;
        /* what the evictions filed is taken (counted, exported) and let go at once */
        watch_limits none = {.keep_requests = 0};
        for (size_t i = 0; i < n; i++) watch_take_new(&ws[i], &none, out, now_ns);
    }
}

void watch_export(const tt_bpf_source *src, const watch_vantage *ws, size_t n, const watch_log *log, tt_mreg *reg)
{
    tt_bpf_stats bs;
    tt_bpf_source_stats(src, &bs);
    tt_mreg_tracer t = {
        .ring_drops = bs.rb_fail,
        .ring_drop_bytes = bs.rb_fail_bytes,
        .gaps = bs.gaps,
        .gap_bytes = bs.gap_bytes,
        .bytes_traced = bs.data_bytes,
        .records = bs.records,
        .connections_open = bs.connections >= bs.closes ? bs.connections - bs.closes : 0,
        .heap_bytes = tt_heap_in_use(),
        .log_lines_lost = log ? log->dropped : 0,
        .tls_links_held = bs.tls_links_held,
        .tls_links_released = bs.tls_links_released,
        .tls_processes_released = bs.tls_processes_released,
    };
    for (size_t i = 0; i < n; i++) {
        tt_tracker_stats st;
        tt_tracker_stats_get(ws[i].tracker, &st);
        t.held[ws[i].vantage] = (struct tt_mreg_held){
            .in_flight = st.in_flight,
            .connections = st.live_connections,
            .evicted_connections = st.evicted_connections,
            .evicted_requests = st.evicted_requests,
            .released = st.forgotten,
        };
    }
    tt_mreg_set_tracer(reg, &t);
}

static void print_tally(tt_sbuf *line, const watch_vantage *w)
{
    double med;
    tt_sbuf_printf(line, " | %s: %llu requests done (%llu incomplete)", tt_vantage_name(w->vantage),
                   (unsigned long long)w->done, (unsigned long long)w->incomplete);
    if (samples_median(&w->ttft, &med)) tt_sbuf_printf(line, ", TTFT median %.3f ms", med / 1e6);
    if (samples_median(&w->itl, &med)) tt_sbuf_printf(line, ", ITL median %.3f ms", med / 1e6);
}

void watch_print_summary(const tt_bpf_source *src, double elapsed_s, const watch_vantage *server,
                         const watch_vantage *client, watch_log *log)
{
    tt_bpf_stats bs;
    tt_bpf_source_stats(src, &bs);
    tt_sbuf line = {0};
    tt_sbuf_printf(&line, "tokentap watch: [%.1fs]", elapsed_s);
    print_tally(&line, server);
    if (client->done) print_tally(&line, client);
    tt_sbuf_printf(&line, " | lost: %llu records refused by the ring buffer, %llu gaps (%llu bytes)\n",
                   (unsigned long long)bs.rb_fail, (unsigned long long)bs.gaps, (unsigned long long)bs.gap_bytes);
    if (!line.oom) watch_log_line(log, line.p, line.len);
    tt_sbuf_free(&line);
}

void watch_say_released(watch_vantage *ws, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tt_tracker_stats st;
        size_t held;
        tt_tracker_requests(ws[i].tracker, &held);
        tt_tracker_stats_get(ws[i].tracker, &st);
        if (!st.forgotten && !st.evicted_connections) continue;
        fprintf(stderr, "tokentap watch: %s: the report holds the last %zu finished requests; %llu earlier ones were "
                        "counted and exported, then let go (--keep-requests, --max-memory); %llu connections evicted "
                        "(--max-connections, --max-memory)\n",
                tt_vantage_name(ws[i].vantage), held, (unsigned long long)st.forgotten,
                (unsigned long long)st.evicted_connections);
    }
}

void watch_vantage_free(watch_vantage *w)
{
    tt_tracker_free(w->tracker);
    tt_release_digest_free(&w->digest);
    free(w->ttft.v);
    free(w->itl.v);
    memset(w, 0, sizeof *w);
}
