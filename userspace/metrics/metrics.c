#include "metrics/metrics.h"
#include "metrics/quantile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tt_req_metrics_compute(const tt_request *r, tt_req_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->token_events = r->token_events;
    m->usage_completion_tokens = r->usage_completion_tokens;
    m->output_tokens = r->usage_completion_tokens >= 0 ? r->usage_completion_tokens : r->token_events;
    if (r->req_first_ns == TT_NS_NONE || r->first_token_ns == TT_NS_NONE) return 0;
    /* a first token seen before anything was lost is a true TTFT */
    if (r->incomplete & (TT_INC_REQUEST_NOT_SEEN | TT_INC_REQUEST_CUT)) return 0;
    m->has_ttft = true;
    m->ttft_ns = (int64_t)(r->first_token_ns - r->req_first_ns);
    if (!tt_request_complete(r)) return 0;
    m->has_e2el = true;
    m->e2el_ns = (int64_t)(r->last_token_ns - r->req_first_ns);
    if (m->output_tokens > 1) {
        m->has_tpot = true;
        m->tpot_ns = (double)(m->e2el_ns - m->ttft_ns) / (double)(m->output_tokens - 1);
    }
    if (r->token_events > 1 && r->events) {
        m->itl_ns = malloc((r->token_events - 1) * sizeof *m->itl_ns);
        if (!m->itl_ns) return -1;
        uint64_t prev = TT_NS_NONE;
        for (uint32_t i = 0; i < r->n_events; i++) {
            const tt_event_rec *e = &r->events[i];
            if (e->kind != TT_EV_TOKEN) continue;
            if (prev != TT_NS_NONE) m->itl_ns[m->n_itl++] = (int64_t)(e->dispatch_ns - prev);
            prev = e->dispatch_ns;
        }
    }
    return 0;
}

void tt_req_metrics_free(tt_req_metrics *m)
{
    free(m->itl_ns);
    m->itl_ns = NULL;
    m->n_itl = 0;
}

double tt_percentile_sorted(const double *v, size_t n, double p)
{
    if (n == 0) return NAN;
    if (p <= 0) return v[0];
    if (p >= 100) return v[n - 1];
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
    return v[lo] + (v[hi] - v[lo]) * (rank - (double)lo);
}

/* Order-preserving map of a double's bits to an unsigned key (NaN excluded). */
static uint64_t sort_key(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (bits >> 63) ? ~bits : bits | (1ull << 63);
}

static double from_key(uint64_t key)
{
    uint64_t bits = (key >> 63) ? key & ~(1ull << 63) : ~key;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static int cmp_key(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Below this many values a comparison sort is cheaper than four passes
 * over 65536 digit counts (a run's TTFTs, TPOTs and E2ELs, one per request). */
#define RADIX_SORT_MIN 16384

/* Sort ascending: LSD radix sort on 16-bit digits (the pooled ITLs of a
 * large capture are millions of values; a comparison sort dominated), or
 * qsort of the same keys for fewer than RADIX_SORT_MIN. */
static void sort_doubles(double *v, size_t n)
{
    if (n < RADIX_SORT_MIN) {
        uint64_t *k = malloc((n + 1) * sizeof *k);
        if (!k) abort();
        for (size_t i = 0; i < n; i++) k[i] = sort_key(v[i]);
        qsort(k, n, sizeof *k, cmp_key);
        for (size_t i = 0; i < n; i++) v[i] = from_key(k[i]);
        free(k);
        return;
    }
    uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    size_t *count = malloc(65536 * sizeof *count);
    if (!a || !b || !count) abort();
    for (size_t i = 0; i < n; i++) a[i] = sort_key(v[i]);
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (size_t i = 0; i < n; i++) count[(a[i] >> shift) & 0xffff]++;
        if (count[(a[0] >> shift) & 0xffff] == n) continue; /* every key shares this digit */
        size_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) b[count[(a[i] >> shift) & 0xffff]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < n; i++) v[i] = from_key(a[i]);
    free(a);
    free(b);
    free(count);
}

void tt_distribution_of_sorted(const double *v, size_t n, const double *pct, size_t n_pct, tt_distribution *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (!n) return;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    d->mean = sum / (double)n;
    double sq = 0;
    for (size_t i = 0; i < n; i++) sq += (v[i] - d->mean) * (v[i] - d->mean);
    d->stddev = sqrt(sq / (double)n);
    d->min = v[0];
    d->max = v[n - 1];
    d->median = tt_percentile_sorted(v, n, 50);
    for (size_t i = 0; i < n_pct; i++) d->pct[i] = tt_percentile_sorted(v, n, pct[i]);
}

static void distribute(double *v, size_t n, const tt_summary *s, tt_distribution *d)
{
    if (n) sort_doubles(v, n);
    tt_distribution_of_sorted(v, n, s->pct_at, s->n_pct, d);
}

void tt_summary_compute(const tt_request *reqs, const tt_req_metrics *m, size_t n,
                        const double *pct, size_t n_pct, tt_summary *s)
{
    tt_summary_compute_pooled(reqs, m, n, pct, n_pct, NULL, s);
}

int tt_summary_compute_pooled(const tt_request *reqs, const tt_req_metrics *m, size_t n, const double *pct,
                              size_t n_pct, const tt_quantile *more_itl, tt_summary *s)
{
    memset(s, 0, sizeof *s);
    s->n_pct = n_pct > TT_MAX_PERCENTILES ? TT_MAX_PERCENTILES : n_pct;
    memcpy(s->pct_at, pct, s->n_pct * sizeof *pct);
    s->requests = n;
    tt_quantile itl;
    tt_quantile_init(&itl);
    int rc = more_itl ? tt_quantile_merge(&itl, more_itl) : 0;
    double *ttft = malloc((n + 1) * sizeof *ttft), *tpot = malloc((n + 1) * sizeof *tpot);
    double *e2el = malloc((n + 1) * sizeof *e2el);
    if (!ttft || !tpot || !e2el) abort();
    size_t nt = 0, np = 0, ne = 0;
    s->start_ns = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        const tt_request *r = &reqs[i];
        if (tt_request_complete(r)) s->complete++;
        else s->incomplete++;
        if (r->framing != TT_FRAMING_NONE) s->streaming++;
        if (r->status >= 400 || r->grpc_status > 0 || r->kind_counts[TT_EV_ERROR]) s->http_errors++;
        if (r->token_events) s->with_tokens++;
        if (r->req_first_ns != TT_NS_NONE && r->req_first_ns < s->start_ns) s->start_ns = r->req_first_ns;
        if (r->resp_last_ns != TT_NS_NONE && r->resp_last_ns > s->end_ns) s->end_ns = r->resp_last_ns;
        if (m[i].has_ttft) ttft[nt++] = (double)m[i].ttft_ns;
        if (!m[i].has_e2el) continue;
        s->token_events += m[i].token_events;
        s->output_tokens += (uint64_t)m[i].output_tokens;
        if (m[i].usage_completion_tokens >= 0) s->usage_tokens_requests++;
        e2el[ne++] = (double)m[i].e2el_ns;
        if (m[i].has_tpot) tpot[np++] = m[i].tpot_ns;
        for (uint32_t k = 0; k < m[i].n_itl && rc == 0; k++) rc = tt_quantile_add(&itl, m[i].itl_ns[k]);
    }
    if (s->start_ns == UINT64_MAX) s->start_ns = 0;
    if (s->end_ns > s->start_ns) s->duration_s = (double)(s->end_ns - s->start_ns) / 1e9;
    if (s->duration_s > 0) {
        s->output_throughput = (double)s->output_tokens / s->duration_s;
        s->request_throughput = (double)s->complete / s->duration_s;
    }
    distribute(ttft, nt, s, &s->ttft);
    distribute(tpot, np, s, &s->tpot);
    tt_quantile_distribution(&itl, s->pct_at, s->n_pct, &s->itl);
    distribute(e2el, ne, s, &s->e2el);
    free(ttft);
    free(tpot);
    free(e2el);
    tt_quantile_free(&itl);
    return rc;
}

int tt_parse_percentiles(const char *spec, double *out, size_t max, char *err, size_t errlen)
{
    size_t n = 0;
    const char *p = spec;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v >= 0 && v <= 100) || (*end && *end != ',')) {
            snprintf(err, errlen, "--percentiles wants numbers in 0..100 separated by commas, got '%s'", spec);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "--percentiles takes at most %zu values", max);
            return -1;
        }
        out[n++] = v;
        p = *end ? end + 1 : end;
    }
    if (!n) {
        snprintf(err, errlen, "--percentiles is empty");
        return -1;
    }
    return (int)n;
}
