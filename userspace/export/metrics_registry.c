/* metrics_registry.c - histograms and counters for the Prometheus export (metrics_registry.h). */
#include "export/metrics_registry.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sbuf.h"
#include "lint/lint.h"
#include "metrics/metrics.h"
#include "report/report.h"

/* Bucket boundaries (seconds, or tokens), as the GenAI conventions give them
 * (docs/metrics.md cites the documents and versions). */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                     0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
static const double tpot_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5};
static const double duration_bounds[] = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                         1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
static const double token_bounds[] = {1,      4,       16,      64,       256,      1024,     4096,
                                      16384,  65536,   262144,  1048576,  4194304,  16777216, 67108864};
/* tokentap's own stretches are shorter: 10 us to 10 s */
static const double part_bounds[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                     0.01,    0.025,    0.05,    0.1,    0.25,    0.5,    1.0,   2.5,    10.0};

#define MAX_BOUNDS 20

typedef enum family {
    F_SERVER_TTFT = 0,
    F_SERVER_TPOT,
    F_SERVER_DURATION,
    F_CLIENT_TTFC,
    F_CLIENT_TPOC,
    F_CLIENT_DURATION,
    F_CLIENT_TOKENS,
    F_SERVER_QUEUE,
    F_CLIENT_QUEUE,
    F_TLS_LIBRARY,
    F_UPLINK,
    F_DOWNLINK,
    F_COUNT
} family;

static const struct family_def {
    const char *name, *help, *unit;
    const double *bounds;
    size_t n_bounds;
} families[F_COUNT] = {
    [F_SERVER_TTFT] = {"gen_ai_server_time_to_first_token_seconds",
                       "Time to the first token of successful responses, at a server-side vantage.", "seconds",
                       ttft_bounds, sizeof ttft_bounds / sizeof *ttft_bounds},
    [F_SERVER_TPOT] = {"gen_ai_server_time_per_output_token_seconds",
                       "Time per output token after the first, successful responses, at a server-side vantage.",
                       "seconds", tpot_bounds, sizeof tpot_bounds / sizeof *tpot_bounds},
    [F_SERVER_DURATION] = {"gen_ai_server_request_duration_seconds",
                           "Request duration to the last byte, at a server-side vantage.", "seconds",
                           duration_bounds, sizeof duration_bounds / sizeof *duration_bounds},
    [F_CLIENT_TTFC] = {"gen_ai_client_operation_time_to_first_chunk_seconds",
                       "Time from the request to the first token chunk, at a client-side vantage.", "seconds",
                       duration_bounds, sizeof duration_bounds / sizeof *duration_bounds},
    [F_CLIENT_TPOC] = {"gen_ai_client_operation_time_per_output_chunk_seconds",
                       "Time between token chunks after the first, at a client-side vantage.", "seconds",
                       duration_bounds, sizeof duration_bounds / sizeof *duration_bounds},
    [F_CLIENT_DURATION] = {"gen_ai_client_operation_duration_seconds",
                           "Operation duration to the last byte, at a client-side vantage.", "seconds",
                           duration_bounds, sizeof duration_bounds / sizeof *duration_bounds},
    [F_CLIENT_TOKENS] = {"gen_ai_client_token_usage", "Input and output tokens per request (usage, else token events).",
                         NULL, token_bounds, sizeof token_bounds / sizeof *token_bounds},
    [F_SERVER_QUEUE] = {"tokentap_server_queue_seconds",
                        "Time the request sat readable in the server's socket before the server read it.", "seconds",
                        part_bounds, sizeof part_bounds / sizeof *part_bounds},
    [F_CLIENT_QUEUE] = {"tokentap_client_queue_seconds",
                        "Time the first token sat readable in the client's socket before the client read it.",
                        "seconds", part_bounds, sizeof part_bounds / sizeof *part_bounds},
    [F_TLS_LIBRARY] = {"tokentap_tls_library_seconds",
                       "Time the TLS library held the first token: encrypting before the socket write (server), "
                       "decrypting after the socket read (client).",
                       "seconds", part_bounds, sizeof part_bounds / sizeof *part_bounds},
    [F_UPLINK] = {"tokentap_uplink_seconds",
                  "The client's request write until the server's socket had it readable (both ends traced).",
                  "seconds", part_bounds, sizeof part_bounds / sizeof *part_bounds},
    [F_DOWNLINK] = {"tokentap_downlink_seconds",
                    "The server's first-token write until the client's socket had it readable (both ends traced).",
                    "seconds", part_bounds, sizeof part_bounds / sizeof *part_bounds},
};

enum { L_VANTAGE, L_OPERATION, L_MODEL, L_ADDRESS, L_PORT, L_ERROR, L_TOKEN_TYPE, L_COUNT };
static const char *const label_names[L_COUNT] = {"vantage",        "gen_ai_operation_name", "gen_ai_request_model",
                                                 "server_address", "server_port",           "error_type",
                                                 "gen_ai_token_type"};

#define LABEL_MAX 96
#define OVERFLOW_VALUE "_overflow"

typedef struct series {
    char label[L_COUNT][LABEL_MAX];
    uint64_t count, buckets[MAX_BOUNDS];
    double sum;
} series;

typedef struct counter {
    char vantage[16], key[32];
    uint64_t n;
} counter;

struct tt_mreg {
    pthread_mutex_t lock;
    tt_mreg_limits limits;
    series *series[F_COUNT];
    size_t n_series[F_COUNT], cap_series[F_COUNT];
    char (*models)[LABEL_MAX];
    size_t n_models;
    char (*servers)[LABEL_MAX];
    size_t n_servers;
    uint64_t overflow_models, overflow_servers;
    counter *requests, *incomplete; /* vantage x outcome, vantage x reason */
    uint64_t findings[TT_VANTAGE_COUNT][TT_LINT_COUNT]; /* requests showing each framing finding */
    size_t n_requests, n_incomplete, cap_requests, cap_incomplete;
    tt_mreg_tracer tracer;
    /* Bumped (under the lock) by every change a page shows. A page is a
     * function of the registry alone, so the last page rendered in a format
     * stands for every scrape until the next change: a scrape flood costs
     * a copy per scrape and a render per change, not a render per scrape. */
    uint64_t generation;
    struct cached_page {
        char *page; /* NULL: none yet */
        size_t len;
        uint64_t generation;
    } cache[2]; /* by format: [0] Prometheus text, [1] OpenMetrics */
};

tt_mreg *tt_mreg_new(const tt_mreg_limits *limits)
{
    tt_mreg *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->limits = limits ? *limits : (tt_mreg_limits){0};
    if (!m->limits.max_models) m->limits.max_models = 32;
    if (!m->limits.max_servers) m->limits.max_servers = 64;
    m->models = calloc(m->limits.max_models, sizeof *m->models);
    m->servers = calloc(m->limits.max_servers, sizeof *m->servers);
    if (!m->models || !m->servers || pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m->models);
        free(m->servers);
        free(m);
        return NULL;
    }
    return m;
}

void tt_mreg_free(tt_mreg *m)
{
    if (!m) return;
    for (int f = 0; f < F_COUNT; f++) free(m->series[f]);
    for (int f = 0; f < 2; f++) free(m->cache[f].page);
    free(m->models);
    free(m->servers);
    free(m->requests);
    free(m->incomplete);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* value, or the overflow value once `set` holds `max` others (counted). */
static const char *bounded(char (*set)[LABEL_MAX], size_t *n, size_t max, const char *value, uint64_t *overflow)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(set[i], value)) return set[i];
    if (*n == max) {
        (*overflow)++;
        return OVERFLOW_VALUE;
    }
    snprintf(set[*n], LABEL_MAX, "%s", value);
    return set[(*n)++];
}

static series *series_for(tt_mreg *m, family f, char label[L_COUNT][LABEL_MAX])
{
    for (size_t i = 0; i < m->n_series[f]; i++)
        if (!memcmp(m->series[f][i].label, label, sizeof m->series[f][i].label)) return &m->series[f][i];
    if (m->n_series[f] == m->cap_series[f]) {
        size_t cap = m->cap_series[f] ? m->cap_series[f] * 2 : 8;
        series *v = realloc(m->series[f], cap * sizeof *v);
        if (!v) return NULL;
        m->series[f] = v;
        m->cap_series[f] = cap;
    }
    series *s = &m->series[f][m->n_series[f]++];
    memset(s, 0, sizeof *s);
    memcpy(s->label, label, sizeof s->label);
    return s;
}

static void observe(tt_mreg *m, family f, char label[L_COUNT][LABEL_MAX], double v)
{
    series *s = series_for(m, f, label);
    if (!s) return;
    s->count++;
    s->sum += v;
    for (size_t b = 0; b < families[f].n_bounds; b++)
        if (v <= families[f].bounds[b]) s->buckets[b]++;
}

static void count(counter **v, size_t *n, size_t *cap, const char *vantage, const char *key)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].vantage, vantage) && !strcmp((*v)[i].key, key)) {
            (*v)[i].n++;
            return;
        }
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        counter *nv = realloc(*v, c * sizeof *nv);
        if (!nv) return;
        *v = nv;
        *cap = c;
    }
    counter *k = &(*v)[(*n)++];
    memset(k, 0, sizeof *k);
    snprintf(k->vantage, sizeof k->vantage, "%s", vantage);
    snprintf(k->key, sizeof k->key, "%s", key);
    k->n = 1;
}

/* gen_ai.operation.name from the request's path (the conventions' values). */
static const char *operation_of(const char *path)
{
    if (strstr(path, "/chat/completions") || strstr(path, "/messages") || strstr(path, "/responses") ||
        strstr(path, "/api/chat"))
        return "chat";
    if (strstr(path, "/embeddings")) return "embeddings";
    if (strstr(path, "/completions") || strstr(path, "/generate") || strstr(path, "/completion")) return "text_completion";
    return "other";
}

static bool server_side(tt_vantage v)
{
    return v == TT_VANTAGE_SERVER || v == TT_VANTAGE_SERVER_TLS || v == TT_VANTAGE_WIRE;
}

/* The convention's labels of r, seen at the vantage named vantage (the
 * registry's lock held: the bounded label values are counted). */
static void fill_labels(tt_mreg *m, const char *vantage, const tt_request *r, char label[L_COUNT][LABEL_MAX])
{
    memset(label, 0, L_COUNT * LABEL_MAX);
    char address[64] = "";
    if (r->server.family == 6) inet_ntop(AF_INET6, r->server.addr, address, sizeof address);
    else inet_ntop(AF_INET, r->server.addr, address, sizeof address);
    char server_key[LABEL_MAX];
    snprintf(server_key, sizeof server_key, "%s:%u", address, (unsigned)r->server.port);
    bool complete = tt_request_complete(r);
    snprintf(label[L_VANTAGE], LABEL_MAX, "%s", vantage);
    snprintf(label[L_OPERATION], LABEL_MAX, "%s", operation_of(r->path));
    snprintf(label[L_MODEL], LABEL_MAX, "%s",
             bounded(m->models, &m->n_models, m->limits.max_models, r->fields.model, &m->overflow_models));
    const char *srv = bounded(m->servers, &m->n_servers, m->limits.max_servers, server_key, &m->overflow_servers);
    if (!strcmp(srv, OVERFLOW_VALUE)) {
        snprintf(label[L_ADDRESS], LABEL_MAX, "%s", OVERFLOW_VALUE);
        snprintf(label[L_PORT], LABEL_MAX, "%s", OVERFLOW_VALUE);
    } else {
        snprintf(label[L_ADDRESS], LABEL_MAX, "%s", address);
        snprintf(label[L_PORT], LABEL_MAX, "%u", (unsigned)r->server.port);
    }
    if (r->status >= 400) snprintf(label[L_ERROR], LABEL_MAX, "%d", r->status);
    else if (r->error_message[0]) snprintf(label[L_ERROR], LABEL_MAX, "stream_error");
    else if (!complete) snprintf(label[L_ERROR], LABEL_MAX, "incomplete");
}

void tt_mreg_observe(tt_mreg *m, tt_vantage v, const tt_request *r, const tt_req_metrics *rm)
{
    char label[L_COUNT][LABEL_MAX];
    bool complete = tt_request_complete(r);
    bool ok = complete && r->status >= 200 && r->status < 300 && !r->error_message[0];
    tt_lint_result lint;
    bool linted = tt_lint_run(r, 1, &lint) == 0;

    pthread_mutex_lock(&m->lock);
    m->generation++; /* a request is counted at least */
    for (size_t i = 0; linted && i < lint.n; i++)
        if ((unsigned)lint.findings[i].id < TT_LINT_COUNT && (unsigned)v < TT_VANTAGE_COUNT) m->findings[v][lint.findings[i].id]++;
    fill_labels(m, tt_vantage_name(v), r, label);

    count(&m->requests, &m->n_requests, &m->cap_requests, label[L_VANTAGE], complete ? "complete" : "incomplete");
    if (!complete) {
        char why[128];
        tt_incomplete_reasons(r, why, sizeof why);
        for (char *save = NULL, *tok = strtok_r(why, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            count(&m->incomplete, &m->n_incomplete, &m->cap_incomplete, label[L_VANTAGE], tok);
    }

    bool server = server_side(v);
    /* the latencies of successful responses; the duration of every whole one */
    if (ok && rm->has_ttft) observe(m, server ? F_SERVER_TTFT : F_CLIENT_TTFC, label, (double)rm->ttft_ns / 1e9);
    if (ok && server && rm->has_tpot) observe(m, F_SERVER_TPOT, label, rm->tpot_ns / 1e9);
    if (ok && !server)
        for (uint32_t i = 0; i < rm->n_itl; i++) observe(m, F_CLIENT_TPOC, label, (double)rm->itl_ns[i] / 1e9);
    /* duration: to the last token (E2EL), or for a whole response without
     * tokens (an error) to its last byte */
    int64_t duration = -1;
    if (rm->has_e2el) duration = rm->e2el_ns;
    else if (complete && r->req_first_ns != TT_NS_NONE && r->resp_last_ns != TT_NS_NONE && r->resp_last_ns >= r->req_first_ns)
        duration = (int64_t)(r->resp_last_ns - r->req_first_ns);
    if (duration >= 0) observe(m, server ? F_SERVER_DURATION : F_CLIENT_DURATION, label, (double)duration / 1e9);
    if (ok && !server) {
        snprintf(label[L_TOKEN_TYPE], LABEL_MAX, "output");
        observe(m, F_CLIENT_TOKENS, label, (double)rm->output_tokens);
        if (r->usage_prompt_tokens >= 0) {
            snprintf(label[L_TOKEN_TYPE], LABEL_MAX, "input");
            observe(m, F_CLIENT_TOKENS, label, (double)r->usage_prompt_tokens);
        }
        memset(label[L_TOKEN_TYPE], 0, LABEL_MAX); /* series are told apart by the whole label bytes */
    }
    /* tokentap's own stretches, where this vantage alone gives them */
    if (v == TT_VANTAGE_SERVER && r->req_ready_ns != TT_NS_NONE && r->req_ready_ns <= r->req_first_ns)
        observe(m, F_SERVER_QUEUE, label, (double)(r->req_first_ns - r->req_ready_ns) / 1e9);
    if (v == TT_VANTAGE_CLIENT && r->first_token_ready_ns != TT_NS_NONE && r->first_token_ns != TT_NS_NONE &&
        r->first_token_ready_ns <= r->first_token_ns)
        observe(m, F_CLIENT_QUEUE, label, (double)(r->first_token_ns - r->first_token_ready_ns) / 1e9);
    if ((v == TT_VANTAGE_SERVER_TLS || v == TT_VANTAGE_CLIENT_TLS) && r->first_token_ready_ns != TT_NS_NONE &&
        r->first_token_ns != TT_NS_NONE) {
        /* at a TLS vantage the "ready" instant is the ciphertext's socket instant */
        int64_t held = v == TT_VANTAGE_SERVER_TLS ? (int64_t)(r->first_token_ready_ns - r->first_token_ns)
                                                  : (int64_t)(r->first_token_ns - r->first_token_ready_ns);
        if (held >= 0) observe(m, F_TLS_LIBRARY, label, (double)held / 1e9);
    }
    pthread_mutex_unlock(&m->lock);
    tt_lint_result_free(&lint);
}

void tt_mreg_observe_links(tt_mreg *m, const tt_request *server, int64_t uplink_ns, int64_t downlink_ns)
{
    if (uplink_ns < 0 && downlink_ns < 0) return;
    char label[L_COUNT][LABEL_MAX];
    pthread_mutex_lock(&m->lock);
    m->generation++;
    fill_labels(m, "joined", server, label);
    if (uplink_ns >= 0) observe(m, F_UPLINK, label, (double)uplink_ns / 1e9);
    if (downlink_ns >= 0) observe(m, F_DOWNLINK, label, (double)downlink_ns / 1e9);
    pthread_mutex_unlock(&m->lock);
}

void tt_mreg_set_tracer(tt_mreg *m, const tt_mreg_tracer *t)
{
    pthread_mutex_lock(&m->lock);
    if (memcmp(&m->tracer, t, sizeof *t)) { /* all uint64_t: no padding to compare */
        m->tracer = *t;
        m->generation++;
    }
    pthread_mutex_unlock(&m->lock);
}

const char *tt_mreg_content_type(tt_mreg_format f)
{
    return f == TT_MREG_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                    : "text/plain; version=0.0.4; charset=utf-8";
}

tt_mreg_format tt_mreg_negotiate(const char *accept)
{
    return accept && strstr(accept, "application/openmetrics-text") ? TT_MREG_OPENMETRICS : TT_MREG_PROMETHEUS;
}

/* A label value as the exposition formats quote it: \\, \" and \n escaped. */
static void put_label_value(tt_sbuf *b, const char *v)
{
    tt_sbuf_puts(b, "\"");
    for (; *v; v++) {
        if (*v == '\\') tt_sbuf_puts(b, "\\\\");
        else if (*v == '"') tt_sbuf_puts(b, "\\\"");
        else if (*v == '\n') tt_sbuf_puts(b, "\\n");
        else tt_sbuf_put(b, v, 1);
    }
    tt_sbuf_puts(b, "\"");
}

static void put_labels(tt_sbuf *b, const series *s, bool token_type, const char *le)
{
    tt_sbuf_puts(b, "{");
    for (int l = 0; l < L_COUNT; l++) {
        if (l == L_TOKEN_TYPE && !token_type) continue;
        tt_sbuf_printf(b, "%s%s=", l ? "," : "", label_names[l]);
        put_label_value(b, s->label[l]);
    }
    if (le) tt_sbuf_printf(b, ",le=\"%s\"", le);
    tt_sbuf_puts(b, "}");
}

static void put_header(tt_sbuf *b, tt_mreg_format f, const char *name, const char *type, const char *help,
                       const char *unit)
{
    tt_sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    if (f == TT_MREG_OPENMETRICS && unit) tt_sbuf_printf(b, "# UNIT %s %s\n", name, unit);
}

/* A counter family: OpenMetrics names the family without _total and its
 * samples with it; the Prometheus text format names both with it. */
static void put_counter(tt_sbuf *b, tt_mreg_format f, const char *base, const char *help)
{
    char name[96];
    snprintf(name, sizeof name, f == TT_MREG_OPENMETRICS ? "%s" : "%s_total", base);
    put_header(b, f, name, "counter", help, NULL);
}

/* What each vantage's tracker holds and has let go of: gauges of the
 * streams in flight and connections followed, counters of evictions and
 * of finished requests released after they were taken. A vantage that
 * never held anything is left out. */
static void put_held(tt_sbuf *b, tt_mreg_format f, const tt_mreg_tracer *t)
{
    bool any[TT_VANTAGE_COUNT];
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        const struct tt_mreg_held *h = &t->held[v];
        any[v] = h->in_flight || h->connections || h->evicted_connections || h->evicted_requests || h->released;
    }
    put_header(b, f, "tokentap_streams_in_flight", "gauge", "Requests begun and not yet finished, per vantage.", NULL);
    for (int v = 0; v < TT_VANTAGE_COUNT; v++)
        if (any[v])
            tt_sbuf_printf(b, "tokentap_streams_in_flight{vantage=\"%s\"} %llu\n", tt_vantage_name((tt_vantage)v),
                           (unsigned long long)t->held[v].in_flight);
    put_header(b, f, "tokentap_connections_followed", "gauge", "Connections the parser follows now, per vantage.", NULL);
    for (int v = 0; v < TT_VANTAGE_COUNT; v++)
        if (any[v])
            tt_sbuf_printf(b, "tokentap_connections_followed{vantage=\"%s\"} %llu\n", tt_vantage_name((tt_vantage)v),
                           (unsigned long long)t->held[v].connections);
    put_counter(b, f, "tokentap_evictions", "Connections (and the requests they had begun) let go to bound memory.");
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        if (!any[v]) continue;
        const char *name = tt_vantage_name((tt_vantage)v);
        tt_sbuf_printf(b, "tokentap_evictions_total{vantage=\"%s\",what=\"connection\"} %llu\n", name,
                       (unsigned long long)t->held[v].evicted_connections);
        tt_sbuf_printf(b, "tokentap_evictions_total{vantage=\"%s\",what=\"request\"} %llu\n", name,
                       (unsigned long long)t->held[v].evicted_requests);
    }
    put_counter(b, f, "tokentap_requests_released", "Finished requests released once exported (--keep-requests).");
    for (int v = 0; v < TT_VANTAGE_COUNT; v++)
        if (any[v])
            tt_sbuf_printf(b, "tokentap_requests_released_total{vantage=\"%s\"} %llu\n",
                           tt_vantage_name((tt_vantage)v), (unsigned long long)t->held[v].released);
}

/* The page of format f, NUL-terminated (the NUL counted in len), the
 * registry's lock held; oom set when memory ran out. */
static tt_sbuf render_locked(tt_mreg *m, tt_mreg_format f)
{
    tt_sbuf b = {0};
    for (int fam = 0; fam < F_COUNT; fam++) {
        const struct family_def *d = &families[fam];
        put_header(&b, f, d->name, "histogram", d->help, d->unit);
        bool token_type = fam == F_CLIENT_TOKENS;
        for (size_t i = 0; i < m->n_series[fam]; i++) {
            const series *s = &m->series[fam][i];
            char le[32];
            for (size_t k = 0; k < d->n_bounds; k++) {
                snprintf(le, sizeof le, "%g", d->bounds[k]);
                tt_sbuf_printf(&b, "%s_bucket", d->name);
                put_labels(&b, s, token_type, le);
                tt_sbuf_printf(&b, " %llu\n", (unsigned long long)s->buckets[k]);
            }
            tt_sbuf_printf(&b, "%s_bucket", d->name);
            put_labels(&b, s, token_type, "+Inf");
            tt_sbuf_printf(&b, " %llu\n%s_sum", (unsigned long long)s->count, d->name);
            put_labels(&b, s, token_type, NULL);
            tt_sbuf_printf(&b, " %.9g\n%s_count", s->sum, d->name);
            put_labels(&b, s, token_type, NULL);
            tt_sbuf_printf(&b, " %llu\n", (unsigned long long)s->count);
        }
    }
    put_counter(&b, f, "tokentap_requests", "Requests finished at a vantage, by outcome.");
    for (size_t i = 0; i < m->n_requests; i++)
        tt_sbuf_printf(&b, "tokentap_requests_total{vantage=\"%s\",outcome=\"%s\"} %llu\n", m->requests[i].vantage,
                       m->requests[i].key, (unsigned long long)m->requests[i].n);
    put_counter(&b, f, "tokentap_incomplete_requests", "Incomplete requests at a vantage, by reason.");
    for (size_t i = 0; i < m->n_incomplete; i++)
        tt_sbuf_printf(&b, "tokentap_incomplete_requests_total{vantage=\"%s\",reason=\"%s\"} %llu\n",
                       m->incomplete[i].vantage, m->incomplete[i].key, (unsigned long long)m->incomplete[i].n);
    put_counter(&b, f, "tokentap_framing_findings", "Requests showing a framing finding (docs/framing.md), by id.");
    for (int v = 0; v < TT_VANTAGE_COUNT; v++)
        for (int id = 0; id < TT_LINT_COUNT; id++)
            if (m->findings[v][id])
                tt_sbuf_printf(&b, "tokentap_framing_findings_total{vantage=\"%s\",id=\"%s\"} %llu\n",
                               tt_vantage_name((tt_vantage)v), tt_lint_entry_of((tt_lint_id)id)->name,
                               (unsigned long long)m->findings[v][id]);
    put_counter(&b, f, "tokentap_label_overflow", "Observations whose label value was past the bound (_overflow).");
    tt_sbuf_printf(&b, "tokentap_label_overflow_total{label=\"gen_ai_request_model\"} %llu\n",
                   (unsigned long long)m->overflow_models);
    tt_sbuf_printf(&b, "tokentap_label_overflow_total{label=\"server_address\"} %llu\n",
                   (unsigned long long)m->overflow_servers);
    static const struct { const char *name, *help; size_t off; } tracer[] = {
        {"tokentap_ring_drops", "Records the kernel's ring buffer refused.", offsetof(tt_mreg_tracer, ring_drops)},
        {"tokentap_ring_drop_bytes", "Data bytes in the refused records.", offsetof(tt_mreg_tracer, ring_drop_bytes)},
        {"tokentap_gaps", "Gaps in the traced streams (bytes lost or not copied).", offsetof(tt_mreg_tracer, gaps)},
        {"tokentap_gap_bytes", "Bytes in those gaps.", offsetof(tt_mreg_tracer, gap_bytes)},
        {"tokentap_bytes_traced", "Bytes of traced TCP data.", offsetof(tt_mreg_tracer, bytes_traced)},
        {"tokentap_records", "Records read from the kernel.", offsetof(tt_mreg_tracer, records)},
        {"tokentap_log_lines_lost", "Live lines a failed write of --log lost (a full disk).",
         offsetof(tt_mreg_tracer, log_lines_lost)},
        {"tokentap_tls_uprobe_links_released", "TLS uprobe links let go after their process exited.",
         offsetof(tt_mreg_tracer, tls_links_released)},
        {"tokentap_tls_processes_released", "Exited processes whose TLS uprobe links were let go.",
         offsetof(tt_mreg_tracer, tls_processes_released)},
    };
    for (size_t i = 0; i < sizeof tracer / sizeof *tracer; i++) {
        put_counter(&b, f, tracer[i].name, tracer[i].help);
        uint64_t v;
        memcpy(&v, (const char *)&m->tracer + tracer[i].off, sizeof v);
        tt_sbuf_printf(&b, "%s_total %llu\n", tracer[i].name, (unsigned long long)v);
    }
    put_header(&b, f, "tokentap_connections_open", "gauge", "Connections being followed now.", NULL);
    tt_sbuf_printf(&b, "tokentap_connections_open %llu\n", (unsigned long long)m->tracer.connections_open);
    put_header(&b, f, "tokentap_tls_uprobe_links", "gauge", "TLS uprobe links attached now.", NULL);
    tt_sbuf_printf(&b, "tokentap_tls_uprobe_links %llu\n", (unsigned long long)m->tracer.tls_links_held);
    put_header(&b, f, "tokentap_heap_bytes", "gauge", "Heap the watcher has in use.", "bytes");
    tt_sbuf_printf(&b, "tokentap_heap_bytes %llu\n", (unsigned long long)m->tracer.heap_bytes);
    put_held(&b, f, &m->tracer);
    if (f == TT_MREG_OPENMETRICS) tt_sbuf_puts(&b, "# EOF\n");
    tt_sbuf_put(&b, "", 1);
    return b;
}

char *tt_mreg_render(tt_mreg *m, tt_mreg_format f, size_t *len)
{
    struct cached_page *c = &m->cache[f == TT_MREG_OPENMETRICS];
    pthread_mutex_lock(&m->lock);
    if (!c->page || c->generation != m->generation) {
        tt_sbuf b = render_locked(m, f);
        if (b.oom || !b.p) { /* the old page stays, known stale: the next scrape tries again */
            pthread_mutex_unlock(&m->lock);
            tt_sbuf_free(&b);
            return NULL;
        }
        free(c->page);
        c->page = b.p;
        c->len = b.len - 1; /* the NUL not counted */
        c->generation = m->generation;
    }
    size_t n = c->len;
    char *copy = malloc(n + 1);
    if (copy) memcpy(copy, c->page, n + 1);
    pthread_mutex_unlock(&m->lock);
    if (copy) *len = n;
    return copy;
}
