/* metrics.h - per-request TTFT, ITL, TPOT, E2EL at one vantage, and the
 * summary over requests (docs/metrics.md is the authority).
 *
 *   TTFT = first_token - req_first        E2EL = last_token - req_first
 *   ITL  = gaps between successive token events (dispatch instants)
 *   TPOT = (E2EL - TTFT) / (output_tokens - 1)
 *   output_tokens = usage.completion_tokens when present, else token events
 *
 * E2EL - TTFT == sum(ITL) exactly, in integer ns. */
#ifndef TT_METRICS_H
#define TT_METRICS_H

#include "timeline/request.h"

typedef struct tt_req_metrics {
    bool has_ttft;          /* first token and request start both seen */
    bool has_e2el;          /* and the exchange is complete */
    int64_t ttft_ns;
    int64_t e2el_ns;
    bool has_tpot;          /* has_e2el and output_tokens > 1 */
    double tpot_ns;
    int64_t *itl_ns;        /* token_events - 1 gaps when has_e2el; owned, free with tt_req_metrics_free */
    uint32_t n_itl;
    uint32_t token_events;
    int64_t output_tokens;  /* usage when present, else token events */
    int64_t usage_completion_tokens; /* -1 when no usage was seen */
} tt_req_metrics;

/* Compute r's metrics into m (zeroed first). Returns 0; -1 only on allocation failure. */
int tt_req_metrics_compute(const tt_request *r, tt_req_metrics *m);
/* (r's events released, r->events NULL: everything but the ITLs, n_itl 0.) */
void tt_req_metrics_free(tt_req_metrics *m);

#define TT_MAX_PERCENTILES 16

typedef struct tt_distribution {
    size_t n;
    double mean, median, stddev, min, max;
    double pct[TT_MAX_PERCENTILES]; /* at the summary's percentiles */
} tt_distribution;

typedef struct tt_summary {
    size_t requests, complete, incomplete, streaming, http_errors, with_tokens;
    uint64_t token_events, output_tokens, usage_tokens_requests;
    uint64_t start_ns, end_ns;  /* first request start, last response byte */
    double duration_s;
    double output_throughput;   /* output tokens / duration */
    double request_throughput;
    size_t n_pct;
    double pct_at[TT_MAX_PERCENTILES];
    tt_distribution ttft, tpot, itl, e2el;  /* ns */
} tt_summary;

/* Summarise complete requests (TTFT over every request that has one).
 * metrics[i] belongs to reqs[i]. pct lists the percentiles to report. The
 * pooled ITL distribution is a tt_quantile (metrics/quantile.h): exact up
 * to TT_QUANTILE_EXACT_MAX gaps, within TT_QUANTILE_REL_ERROR beyond. */
void tt_summary_compute(const tt_request *reqs, const tt_req_metrics *metrics, size_t n,
                        const double *pct, size_t n_pct, tt_summary *s);
/* The same, with the ITLs of more_itl (requests whose events were released
 * after their gaps were taken) pooled with those of metrics[]. Returns 0, or
 * -1 when out of memory (s then holds what could be pooled). */
struct tt_quantile;
int tt_summary_compute_pooled(const tt_request *reqs, const tt_req_metrics *metrics, size_t n, const double *pct,
                              size_t n_pct, const struct tt_quantile *more_itl, tt_summary *s);

/* The distribution of n values sorted ascending at the percentiles pct[0..n_pct). */
void tt_distribution_of_sorted(const double *sorted, size_t n, const double *pct, size_t n_pct, tt_distribution *d);

/* Percentile p (0..100) of sorted values, linear interpolation between the
 * closest ranks (numpy's default, which vllm bench serve uses). */
double tt_percentile_sorted(const double *sorted, size_t n, double p);

/* Parse "50,90,99" into out; returns the count, or -1 with a reason in err. */
int tt_parse_percentiles(const char *spec, double *out, size_t max, char *err, size_t errlen);

#endif
