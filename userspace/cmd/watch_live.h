/* watch_live.h - what `tokentap watch` does with each vantage while it
 * runs (watch.c is the command): a line per finished request, the rolling
 * summary, the metrics export, and what it keeps: finished requests past
 * --keep-requests and, over --max-memory, everything it can are let go. */
#ifndef TT_WATCH_LIVE_H
#define TT_WATCH_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/live_join.h"
#include "export/metrics_registry.h"
#include "report/release_digest.h"
#include "source/bpf_source.h"
#include "timeline/conn_tracker.h"

/* Where the live lines go: stderr, or --log FILE (appended, created 0600,
 * reopened on SIGHUP). A line a write could not take (a full disk) is
 * counted, said once on stderr, and tracing goes on. */
typedef struct watch_log {
    FILE *f;
    const char *path;  /* NULL: stderr */
    uint64_t dropped;  /* lines lost to failed writes */
    bool failing;      /* the last write failed (said on stderr) */
} watch_log;

/* Open path for the lines (NULL: stderr). 0, or -1 with err set. */
int watch_log_open(watch_log *l, const char *path, char *err, size_t errlen);
/* SIGHUP: open the path again (after a rotation); on failure say so on
 * stderr and keep the file already open. */
void watch_log_reopen(watch_log *l);
/* One whole line (text ends in '\n'): written and flushed, or counted lost. */
void watch_log_line(watch_log *l, const char *text, size_t len);
void watch_log_close(watch_log *l);

/* The most recent samples the summary's medians are taken over. */
#define WATCH_SUMMARY_SAMPLES 65536u

/* The last WATCH_SUMMARY_SAMPLES values pushed (a ring, allocated at the first). */
typedef struct watch_samples {
    int64_t *v;
    size_t n, next;
} watch_samples;

/* One vantage's tracker and what watch has taken from it. */
typedef struct watch_vantage {
    tt_vantage vantage;
    tt_tracker *tracker;
    size_t taken;             /* filed requests already handled (index into the tracker's) */
    uint64_t done, incomplete;
    watch_samples ttft, itl;
    /* Each handled request's events let go (watch_take_new), what the
     * final report needs of them kept in digest: when watch keeps every
     * request and its report needs no events (watch.c). */
    bool release;
    tt_release_digest digest;
} watch_vantage;

/* What watch keeps: finished requests per vantage for the final report
 * (SIZE_MAX: all), and the heap budget in bytes (0: none). */
typedef struct watch_limits {
    size_t keep_requests;
    size_t max_heap;
} watch_limits;

/* Where each finished request goes; any may be NULL: its line (log), its
 * metrics (reg), and the pairing of its two socket views (join, whose
 * pairs reg observes). */
typedef struct watch_sinks {
    watch_log *log;
    tt_mreg *reg;
    tt_ljoin *join;
} watch_sinks;

/* Handle the requests w's tracker filed since the last call (now_ns): count
 * them and hand them to the sinks; then let go of the oldest beyond
 * lim->keep_requests. */
void watch_take_new(watch_vantage *w, const watch_limits *lim, const watch_sinks *out, uint64_t now_ns);

/* Over lim->max_heap: let go of every finished request the vantages keep,
 * then evict an eighth of each tracker's connections (least recently
 * active first) until the heap is under budget or nothing is left; the
 * requests an eviction finishes go to out like any other (then let go). */
void watch_bound_memory(watch_vantage *ws, size_t n, const watch_limits *lim, const watch_sinks *out,
                        uint64_t now_ns);

/* tt_ljoin_pair_fn for watch_sinks.join: ctx is the tt_mreg. */
void watch_observe_pair(void *ctx, const tt_request *server, const tt_request *client);

/* The tracer's and the trackers' running totals into reg. */
void watch_export(const tt_bpf_source *src, const watch_vantage *ws, size_t n, const watch_log *log, tt_mreg *reg);

/* The rolling summary line: requests done and medians at the server
 * vantage (and the client's once it saw one), and what was lost. */
void watch_print_summary(const tt_bpf_source *src, double elapsed_s, const watch_vantage *server,
                         const watch_vantage *client, watch_log *log);

/* One line per vantage whose report lacks requests let go (nothing when none). */
void watch_say_released(watch_vantage *ws, size_t n);

void watch_vantage_free(watch_vantage *w);

#endif
