/* serve_metrics.c - latency histograms and their Prometheus text; see serve_metrics.h. */
#include "serve/serve_metrics.h"

#include <inttypes.h>
#include <string.h>

/* vLLM's bucket bounds (vllm/v1/metrics/loggers.py, v0.8-v0.10). */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                     1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                    0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
static const double e2e_bounds[] = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
                                    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

static void hist_init(tt_serve_hist *h, const double *bounds, size_t n)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n_bounds = n < TT_SERVE_HIST_MAX_BUCKETS ? n : TT_SERVE_HIST_MAX_BUCKETS;
}

void tt_serve_metrics_init(tt_serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    hist_init(&m->ttft, ttft_bounds, sizeof ttft_bounds / sizeof ttft_bounds[0]);
    hist_init(&m->itl, itl_bounds, sizeof itl_bounds / sizeof itl_bounds[0]);
    hist_init(&m->e2e, e2e_bounds, sizeof e2e_bounds / sizeof e2e_bounds[0]);
}

void tt_serve_hist_observe(tt_serve_hist *h, uint64_t ns)
{
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < h->n_bounds && s > h->bounds[i]) i++;
    if (i < h->n_bounds) h->counts[i]++;
    h->count++;
    h->sum_ns += ns;
}

static void hist_add(tt_serve_hist *into, const tt_serve_hist *from)
{
    for (size_t i = 0; i < into->n_bounds && i < from->n_bounds; i++) into->counts[i] += from->counts[i];
    into->count += from->count;
    into->sum_ns += from->sum_ns;
}

void tt_serve_metrics_add(tt_serve_metrics *into, const tt_serve_metrics *from)
{
    hist_add(&into->ttft, &from->ttft);
    hist_add(&into->itl, &from->itl);
    hist_add(&into->e2e, &from->e2e);
    into->requests_finished += from->requests_finished;
}

static void render_hist(const tt_serve_hist *h, const char *name, const char *help, const char *model,
                        tt_sbuf *out)
{
    tt_sbuf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        tt_sbuf_printf(out, "%s_bucket{le=\"%g\",model_name=\"%s\"} %" PRIu64 "\n", name, h->bounds[i], model, cum);
    }
    tt_sbuf_printf(out, "%s_bucket{le=\"+Inf\",model_name=\"%s\"} %" PRIu64 "\n", name, model, h->count);
    tt_sbuf_printf(out, "%s_count{model_name=\"%s\"} %" PRIu64 "\n", name, model, h->count);
    tt_sbuf_printf(out, "%s_sum{model_name=\"%s\"} %.9f\n", name, model, (double)h->sum_ns / 1e9);
}

void tt_serve_metrics_render(const tt_serve_metrics *m, const char *model_name, tt_sbuf *out)
{
    char model[256]; /* the label value, escaped as the text format asks */
    size_t o = 0;
    for (const char *c = model_name; *c && o + 3 < sizeof model; c++) {
        if (*c == '\\' || *c == '"' || *c == '\n') {
            model[o++] = '\\';
            model[o++] = *c == '\n' ? 'n' : *c;
        } else {
            model[o++] = *c;
        }
    }
    model[o] = 0;
    render_hist(&m->ttft, "vllm:time_to_first_token_seconds",
                "Histogram of time to first token in seconds.", model, out);
    render_hist(&m->itl, "vllm:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.", model, out);
    render_hist(&m->e2e, "vllm:e2e_request_latency_seconds",
                "Histogram of e2e request latency in seconds.", model, out);
    tt_sbuf_printf(out, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
                        "# TYPE vllm:request_success_total counter\n"
                        "vllm:request_success_total{model_name=\"%s\"} %" PRIu64 "\n",
                   model, m->requests_finished);
}
