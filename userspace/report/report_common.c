#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lint/lint.h"
#include "report/release_digest.h"
#include "report/report.h"

const char *tt_vantage_name(tt_vantage v)
{
    switch (v) {
    case TT_VANTAGE_WIRE: return "wire";
    case TT_VANTAGE_SERVER: return "server";
    case TT_VANTAGE_CLIENT: return "client";
    case TT_VANTAGE_SERVER_TLS: return "server_tls";
    case TT_VANTAGE_CLIENT_TLS: return "client_tls";
    case TT_VANTAGE_CLIENT_WIRE: return "client_wire";
    default: return "?";
    }
}

const char *tt_clock_name(tt_clock_domain c)
{
    return c == TT_CLOCK_MONOTONIC ? "monotonic" : "capture";
}

const char *tt_incomplete_reasons(const tt_request *r, char *buf, size_t cap)
{
    static const struct { unsigned bit; const char *name; } reasons[] = {
        {TT_INC_REQUEST_NOT_SEEN, "request-not-captured"}, {TT_INC_REQUEST_CUT, "request-cut"},
        {TT_INC_NO_RESPONSE, "no-response"},               {TT_INC_RESPONSE_CUT, "response-cut"},
        {TT_INC_GAP, "gap"},                               {TT_INC_HTTP_ERROR, "http-error"},
        {TT_INC_EVICTED, "evicted"},
    };
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++) {
        if (!(r->incomplete & reasons[i].bit)) continue;
        int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", reasons[i].name);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
    return buf;
}

int tt_analysis_fill(tt_analysis *a, tt_tracker *t, const double *pct, size_t n_pct)
{
    return tt_analysis_fill_released(a, t, pct, n_pct, NULL);
}

/* The findings of every request, in request order: a released request's
 * from its slot in d, the others linted now, one at a time. */
static int lint_released(const tt_request *reqs, size_t n, const tt_release_digest *d, tt_lint_result *res)
{
    memset(res, 0, sizeof *res);
    for (size_t i = 0; i < n; i++) {
        const tt_request *r = &reqs[i];
        if (r->events_released) {
            size_t k = r->consumer_tag;
            if (k >= d->n_slots) return -1;
            size_t first = d->slots[k].first_finding;
            size_t end = k + 1 < d->n_slots ? d->slots[k + 1].first_finding : d->n_findings;
            if (end > first && tt_lint_result_append(res, (uint32_t)i, d->findings + first, end - first) < 0)
                return -1;
            continue;
        }
        tt_lint_result one;
        int rc = tt_lint_run(r, 1, &one);
        if (rc == 0) rc = tt_lint_result_append(res, (uint32_t)i, one.findings, one.n);
        tt_lint_result_free(&one);
        if (rc < 0) return -1;
    }
    return 0;
}

int tt_analysis_fill_released(tt_analysis *a, tt_tracker *t, const double *pct, size_t n_pct,
                              tt_release_digest *d)
{
    if (d && d->failed) return -1;
    a->released = d;
    tt_tracker_sort(t);
    a->tracker = t;
    tt_request *reqs = tt_tracker_requests(t, &a->n_reqs);
    a->reqs = reqs;
    a->notes = tt_tracker_notes(t, &a->n_notes);
    tt_req_metrics *metrics = calloc(a->n_reqs + 1, sizeof *metrics);
    if (!metrics) return -1;
    a->metrics = metrics;
    for (size_t i = 0; i < a->n_reqs; i++)
        if (tt_req_metrics_compute(&reqs[i], &metrics[i]) < 0) return -1;
    if (tt_summary_compute_pooled(reqs, metrics, a->n_reqs, pct, n_pct, d ? &d->itl : NULL, &a->summary) < 0)
        return -1;
    tt_lint_result *lint = calloc(1, sizeof *lint);
    if (!lint) return -1;
    a->lint = lint;
    if (!d || !d->n_slots) return tt_lint_run(reqs, a->n_reqs, lint);
    return lint_released(reqs, a->n_reqs, d, lint);
}

void tt_analysis_release(tt_analysis *a)
{
    tt_req_metrics *metrics = (tt_req_metrics *)a->metrics;
    if (metrics)
        for (size_t i = 0; i < a->n_reqs; i++) tt_req_metrics_free(&metrics[i]);
    free(metrics);
    a->metrics = NULL;
    tt_lint_result *lint = (tt_lint_result *)a->lint;
    tt_lint_result_free(lint);
    free(lint);
    a->lint = NULL;
}

void tt_report_write(FILE *out, const tt_analysis *a, bool json, bool events)
{
    if (events && json) tt_report_events_json(out, a);
    else if (events) tt_report_events_text(out, a);
    else if (json) tt_report_json(out, a);
    else tt_report_text(out, a);
}

FILE *tt_open_output(const char *path)
{
    if (!path || !strcmp(path, "-")) return stdout;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) close(fd);
    return f;
}
