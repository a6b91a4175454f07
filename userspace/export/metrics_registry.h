/* metrics_registry.h - what `tokentap watch --metrics` exports
 * (docs/metrics.md, "Prometheus export"): histograms named and bucketed
 * after the OpenTelemetry GenAI semantic conventions, in Prometheus form,
 * fed one finished request at a time, and tokentap's own counters.
 *
 * Every series carries the vantage and the convention's attributes
 * (gen_ai_operation_name, gen_ai_request_model from the request body,
 * server_address, server_port, error_type). Cardinality is bounded:
 * past max_models distinct models, or max_servers distinct server
 * addresses, new values are replaced by "_overflow" and counted. No
 * prompt or completion text enters the registry: a request gives only its
 * model name, its instants and counts.
 *
 * Thread-safe: the watch loop observes, the HTTP thread renders; both
 * take the registry's lock. */
#ifndef TT_METRICS_REGISTRY_H
#define TT_METRICS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tt_types.h"
#include "metrics/metrics.h"
#include "timeline/request.h"

typedef struct tt_mreg tt_mreg;

typedef struct tt_mreg_limits {
    size_t max_models;  /* distinct gen_ai_request_model values (default 32) */
    size_t max_servers; /* distinct server_address:server_port pairs (default 64) */
} tt_mreg_limits;

/* A registry; limits may be NULL (the defaults). NULL when out of memory. */
tt_mreg *tt_mreg_new(const tt_mreg_limits *limits);
void tt_mreg_free(tt_mreg *m);

/* One finished request seen at vantage v, with its metrics (rm, from
 * tt_req_metrics_compute): its histograms and counters. */
void tt_mreg_observe(tt_mreg *m, tt_vantage v, const tt_request *r, const tt_req_metrics *rm);

/* The stretches of one request that need both socket vantages of a host
 * (export/live_join.h): uplink and downlink in ns, -1 when not known;
 * labelled as the server's view of it, with vantage="joined". */
void tt_mreg_observe_links(tt_mreg *m, const tt_request *server, int64_t uplink_ns, int64_t downlink_ns);

/* The tracer's own running totals, replaced at each call (the watch loop
 * copies them in; a scrape reads the last copy). */
typedef struct tt_mreg_tracer {
    uint64_t ring_drops, ring_drop_bytes, gaps, gap_bytes, bytes_traced, records;
    uint64_t connections_open;
    uint64_t heap_bytes; /* the watcher's heap in use (tt_heap_in_use) */
    uint64_t log_lines_lost; /* live lines a failed write of --log lost */
    uint64_t tls_links_held, tls_links_released, tls_processes_released; /* TLS uprobes (tt_bpf_stats) */
    struct tt_mreg_held {
        uint64_t in_flight, connections;                       /* now */
        uint64_t evicted_connections, evicted_requests, released; /* since the start */
    } held[TT_VANTAGE_COUNT]; /* what each vantage's tracker holds and has let go of */
} tt_mreg_tracer;
void tt_mreg_set_tracer(tt_mreg *m, const tt_mreg_tracer *t);

typedef enum tt_mreg_format {
    TT_MREG_PROMETHEUS = 0, /* text format 0.0.4 */
    TT_MREG_OPENMETRICS     /* OpenMetrics 1.0 text */
} tt_mreg_format;

/* The Content-Type of a format. */
const char *tt_mreg_content_type(tt_mreg_format f);

/* The format a scraper asks for in its Accept header (NULL: Prometheus
 * text): OpenMetrics when it names application/openmetrics-text. */
tt_mreg_format tt_mreg_negotiate(const char *accept);

/* The whole registry rendered in format f, NUL-terminated, malloc'd
 * (*len its length). NULL when out of memory. Rendered once per change of
 * the registry (an observation, new tracer totals): until the next change
 * every call gets a copy of that page, which is what a new render would
 * give. */
char *tt_mreg_render(tt_mreg *m, tt_mreg_format f, size_t *len);

#endif
