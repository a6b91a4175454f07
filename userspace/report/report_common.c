#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lint/lint.h"
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
    tt_summary_compute(reqs, metrics, a->n_reqs, pct, n_pct, &a->summary);
    tt_lint_result *lint = calloc(1, sizeof *lint);
    if (!lint) return -1;
    a->lint = lint;
    return tt_lint_run(reqs, a->n_reqs, lint);
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
