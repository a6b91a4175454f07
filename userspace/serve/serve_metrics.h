/* serve_metrics.h - the server's own latency histograms, exposed at
 * GET /metrics in Prometheus text format under vLLM's metric names
 * (vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
 * vllm:e2e_request_latency_seconds), so a client's or tokentap's view of the
 * same streams can be set against what the server itself measured. */
#ifndef TT_SERVE_METRICS_H
#define TT_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/sbuf.h"

#define TT_SERVE_HIST_MAX_BUCKETS 24

typedef struct tt_serve_hist {
    const double *bounds;  /* upper bounds in seconds, ascending (the le= values) */
    size_t n_bounds;
    uint64_t counts[TT_SERVE_HIST_MAX_BUCKETS]; /* observations <= bounds[i], not cumulative */
    uint64_t count;
    uint64_t sum_ns;
} tt_serve_hist;

typedef struct tt_serve_metrics {
    tt_serve_hist ttft;    /* request's last byte read -> first token's write */
    tt_serve_hist itl;     /* one token's write -> the next one's */
    tt_serve_hist e2e;     /* request's last byte read -> the stream's last write */
    uint64_t requests_finished; /* streamed generations that ran to their end */
} tt_serve_metrics;

/* Zero counts and set vLLM's bucket bounds for each histogram. */
void tt_serve_metrics_init(tt_serve_metrics *m);
void tt_serve_hist_observe(tt_serve_hist *h, uint64_t ns);
/* Add from's observations to into (both initialised by tt_serve_metrics_init):
 * the sum of several workers' histograms. */
void tt_serve_metrics_add(tt_serve_metrics *into, const tt_serve_metrics *from);
/* Append the Prometheus text exposition; model is the served name (label value). */
void tt_serve_metrics_render(const tt_serve_metrics *m, const char *model, tt_sbuf *out);

#endif
