/* audit_cell.c - grade one audit cell: what the tool reported (its result
 * file, read by import/) against the truth (serve's log, audit_truth.c)
 * and the client socket (the joined report of `tokentap run --json`,
 * docs/formats.md), and name the causes its evidence shows.
 *
 * The true instants of a request: its start is the first request byte at
 * the client socket (the probe), its tokens are serve's token writes. So a
 * tool that measures perfectly is off only by the downlink's transit (tens
 * of microseconds on loopback). docs/audit.md defines every number. */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit_internal.h"
#include "core/util.h"
#include "import/bench_import.h"
#include "join/decompose.h"
#include "metrics/metrics.h"

/* A growable array of int64 samples. */
typedef struct samples {
    int64_t *v;
    size_t n, cap;
    bool oom;
} samples;

static void push(samples *s, int64_t x)
{
    if (s->oom) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        int64_t *n = realloc(s->v, cap * sizeof *n);
        if (!n) {
            s->oom = true;
            return;
        }
        s->v = n;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

/* mean, median, p99 of v (n of them); false when n is 0 or out of memory. */
static bool summarise(const int64_t *v, size_t n, double *mean, double *median, double *p99)
{
    if (!n) return false;
    double *d = malloc(n * sizeof *d);
    if (!d) return false;
    for (size_t i = 0; i < n; i++) d[i] = (double)v[i];
    static const double at99[1] = {99};
    tt_distribution dist;
    tt_distribution_of(d, n, at99, 1, &dist);
    free(d);
    *mean = dist.mean;
    *median = dist.median;
    *p99 = dist.pct[0];
    return true;
}

static void stat_of(const samples *s, tt_audit_stat *st)
{
    memset(st, 0, sizeof *st);
    if (summarise(s->v, s->n, &st->mean, &st->median, &st->p99)) st->n = s->n;
}

static void overhead_of(const samples *s, tt_audit_overhead *o)
{
    double mean;
    memset(o, 0, sizeof *o);
    if (summarise(s->v, s->n, &mean, &o->median, &o->p99)) o->n = s->n;
}

/* The distribution difference of two pooled samples: reported minus true
 * at the mean, the median and p99 (the counts may differ). */
static void diff_of(const samples *rep, const samples *truth, tt_audit_stat *st)
{
    memset(st, 0, sizeof *st);
    double m1, md1, p1, m2, md2, p2;
    if (!summarise(rep->v, rep->n, &m1, &md1, &p1) || !summarise(truth->v, truth->n, &m2, &md2, &p2)) return;
    st->n = rep->n;
    st->mean = m1 - m2;
    st->median = md1 - md2;
    st->p99 = p1 - p2;
}

int tt_audit_add_cause(tt_audit_cell *c, const char *finding, size_t requests, const char *fmt, ...)
{
    tt_audit_cause *n = realloc(c->causes, (c->n_causes + 1) * sizeof *n);
    if (!n) return -1;
    c->causes = n;
    tt_audit_cause *k = &n[c->n_causes++];
    memset(k, 0, sizeof *k);
    snprintf(k->finding, sizeof k->finding, "%s", finding ? finding : "");
    k->requests = requests;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->symptom, sizeof k->symptom, fmt, ap);
    va_end(ap);
    return 0;
}

void tt_audit_cell_free(tt_audit_cell *c)
{
    free(c->causes);
    free(c->ttft_err_ns);
    free(c->itl_reported_ns);
    free(c->itl_true_ns);
    c->causes = NULL;
    c->n_causes = 0;
    c->ttft_err_ns = c->itl_reported_ns = c->itl_true_ns = NULL;
    c->n_ttft_err = c->n_itl_reported = c->n_itl_true = 0;
}

void tt_audit_card_free(tt_audit_card *card)
{
    for (size_t i = 0; i < card->n_cells; i++) tt_audit_cell_free(&card->cells[i]);
    free(card->cells);
    card->cells = NULL;
    card->n_cells = 0;
}

/* ---- reading the run's JSON report ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* a - b and a + b, saturated: a result file may hold any int64 duration. */
static int64_t sub_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* run's report, parsed; NULL when unreadable or not JSON. */
static cJSON *read_report(const char *path)
{
    char *data, err[256];
    size_t len;
    if (tt_read_file(path, (size_t)1 << 30, &data, &len, err, sizeof err) < 0) return NULL;
    cJSON *doc = cJSON_ParseWithLength(data, len);
    free(data);
    return doc;
}

/* The finding ids filed on each request of the report, comma-joined. */
typedef struct finding_sets {
    char (*ids)[512];
    size_t n;
} finding_sets;

static bool set_has(const char *set, const char *id)
{
    size_t k = strlen(id);
    for (const char *p = set; (p = strstr(p, id)) != NULL; p += k)
        if ((p == set || p[-1] == ',') && (p[k] == ',' || p[k] == 0)) return true;
    return false;
}

static void set_add(char *set, size_t cap, const char *id)
{
    if (!*id || set_has(set, id)) return;
    size_t used = strlen(set);
    if (used + strlen(id) + 2 > cap) return;
    snprintf(set + used, cap - used, "%s%s", used ? "," : "", id);
}

static void set_union(char *set, size_t cap, const char *other)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", other);
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) set_add(set, cap, t);
}

static int findings_by_request(const cJSON *doc, size_t n_reqs, finding_sets *fs)
{
    fs->n = n_reqs;
    fs->ids = calloc(n_reqs ? n_reqs : 1, sizeof *fs->ids);
    if (!fs->ids) return -1;
    const cJSON *f;
    cJSON_ArrayForEach(f, get(doc, "findings"))
    {
        int64_t j;
        const cJSON *id = get(f, "id");
        if (!cJSON_IsString(id)) continue;
        if (!tt_audit_int_field(f, "joined_request", &j) && !tt_audit_int_field(f, "request_index", &j)) continue;
        if (j >= 0 && (size_t)j < n_reqs) set_add(fs->ids[j], sizeof fs->ids[j], id->valuestring);
    }
    return 0;
}

/* ---- grading ---- */

/* What the cell's requests showed, gathered before the causes are named. */
typedef struct tally {
    samples ttft_err, e2el_err, tpot_err, itl_rep, itl_true, send_lag, client_lag, downlink, client_queue;
    samples ttft_true, e2el_true, tpot_true;
    samples role_early;           /* TTFT taken at the role-only chunk: how early */
    size_t other_kind_ttft;       /* TTFT taken at another non-token event */
    char other_kind[16];
    samples before_events;        /* TTFT taken before any event arrived: how early */
    size_t near_headers;          /* ... of them, within tolerance of the response headers */
    size_t role_extra_token, role_extra_itl; /* of the role requests: +1 token, +1 ITL sample */
    size_t usage_unread;          /* tokens wrong where usage rode in a frame with choices */
    size_t tokens_wrong;          /* other requests with a wrong token count */
    int64_t tokens_wrong_rep, tokens_wrong_true;
    size_t itl_n_wrong;           /* other requests with a wrong ITL sample count */
    size_t usage_frame_itl;       /* one ITL sample too many, ending at a frame after the last token */
    size_t usage_frame_token;     /* one token too many: that frame counted */
    char trailing_finding[32];    /* the finding naming that frame */
    uint64_t shared_read_events, token_events;
    size_t shared_requests;       /* requests with such events */
    bool itl_reported_unknown, tokens_unknown;
    int64_t client_dropped, client_gaps;   /* records the probe dropped, gaps it left (run's report) */
} tally;

/* Every sample set of t, for what is done to all of them. */
#define TALLY_SAMPLES(t)                                                                                        \
    {&(t)->ttft_err, &(t)->e2el_err, &(t)->tpot_err, &(t)->itl_rep, &(t)->itl_true, &(t)->send_lag,           \
     &(t)->client_lag, &(t)->downlink, &(t)->ttft_true, &(t)->e2el_true, &(t)->tpot_true, &(t)->role_early,   \
     &(t)->before_events, &(t)->client_queue}

static void tally_free(tally *t)
{
    samples *all[] = TALLY_SAMPLES(t);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->v);
}

static bool tally_oom(tally *t)
{
    samples *all[] = TALLY_SAMPLES(t);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->oom) return true;
    return false;
}

/* The disagreement of kind k on request R, or NULL. */
static const cJSON *disagreement(const cJSON *R, const char *kind)
{
    const cJSON *d;
    cJSON_ArrayForEach(d, get(R, "disagreements"))
    {
        const cJSON *k = get(d, "kind");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, kind)) return d;
    }
    return NULL;
}

/* One too many per chunk without a token that the tool timed as one: take
 * them out of extra, the role chunk's first, then the trailing frame's,
 * counting each; returns what they do not explain. */
static int64_t explain_extra(int64_t extra, bool role_counted, size_t *role_n, bool trailing_counted,
                             size_t *trailing_n)
{
    if (role_counted && extra >= 1) {
        (*role_n)++;
        extra--;
    }
    if (trailing_counted && extra >= 1) {
        (*trailing_n)++;
        extra--;
    }
    return extra;
}

/* One successful record rec of the tool, joined to request R (client
 * vantage cl, may be NULL) and to its truth T. */
static void grade_timing(tally *t, const tt_bench_request *rec, const cJSON *R, const cJSON *cl,
                         const tt_truth_req *T, const char *findings, double tol_ms)
{
    int64_t start = T->read_ns, v;
    if (cl && tt_audit_int_field(cl, "req_first_mono_ns", &v)) start = v;
    int64_t first = T->token_ns[0], last = T->token_ns[T->n_token - 1];
    if (rec->ttft_ns != TT_BENCH_NONE) {
        push(&t->ttft_err, sub_sat(rec->ttft_ns, first - start));
        push(&t->ttft_true, first - start);
    }
    if (rec->e2el_ns != TT_BENCH_NONE) {
        push(&t->e2el_err, sub_sat(rec->e2el_ns, last - start));
        push(&t->e2el_true, last - start);
    }
    if (rec->ttft_ns != TT_BENCH_NONE && rec->e2el_ns != TT_BENCH_NONE && rec->output_tokens > 1 && T->n_token > 1) {
        int64_t rep = sub_sat(rec->e2el_ns, rec->ttft_ns) / (rec->output_tokens - 1);
        int64_t tru = (last - first) / (int64_t)(T->n_token - 1);
        push(&t->tpot_err, sub_sat(rep, tru));
        push(&t->tpot_true, tru);
    }
    for (size_t k = 0; rec->itl_ns && k < rec->n_itl; k++) push(&t->itl_rep, rec->itl_ns[k]);
    if (!rec->itl_ns) t->itl_reported_unknown = true;
    for (size_t k = 1; k < T->n_token; k++) push(&t->itl_true, T->token_ns[k] - T->token_ns[k - 1]);

    const cJSON *dec = get(R, "decomposition");
    if (tt_audit_int_field(dec, "send_lag_ns", &v)) push(&t->send_lag, v);
    if (tt_audit_int_field(dec, "client_lag_ns", &v)) push(&t->client_lag, v);
    /* the kernel's ready instant at the tool's socket: as root, run puts the eBPF one on the probe's connections */
    if (tt_audit_int_field(dec, "client_queue_ns", &v)) push(&t->client_queue, v);
    if (cl && tt_audit_int_field(cl, "first_token_mono_ns", &v)) push(&t->downlink, v - first);
    int64_t shared, n_tok;
    if (tt_audit_int_field(get(dec, "itl"), "shared_read_events", &shared) && shared > 0) {
        t->shared_read_events += (uint64_t)shared;
        t->shared_requests++;
    }
    if (cl && tt_audit_int_field(cl, "token_events", &n_tok)) t->token_events += (uint64_t)n_tok;

    /* Before any event arrived: the tool's first-token stamp (its start
     * plus its TTFT; without a start in the file, the request at the
     * socket plus its TTFT, a bound from above since the tool started
     * earlier) well before the first event reached its socket. Near the
     * response headers when within tolerance of them. */
    bool before_events = false, at_role = false;
    int64_t headers, first_event, first_tok, req_first, rstart = 0;
    double near_ns = tol_ms * 1e6;
    bool have_start = tt_audit_int_field(get(R, "reported"), "start_mono_ns", &rstart);
    if (cl && rec->ttft_ns != TT_BENCH_NONE && tt_audit_int_field(cl, "resp_headers_mono_ns", &headers) &&
        tt_audit_int_field(cl, "first_event_mono_ns", &first_event) &&
        tt_audit_int_field(cl, "first_token_mono_ns", &first_tok) &&
        tt_audit_int_field(cl, "req_first_mono_ns", &req_first)) {
        int64_t mark = add_sat(have_start ? rstart : req_first, rec->ttft_ns);
        if ((double)first_event - (double)mark > near_ns) {
            push(&t->before_events, sub_sat(first_tok, mark));
            if (fabs((double)mark - (double)headers) <= near_ns) t->near_headers++;
            before_events = true;
        }
    }
    /* at an event before the first token (the breakdown's disagreement;
     * its event is a guess when the file gives no start) */
    const cJSON *d = disagreement(R, "ttft-at-non-token-event");
    int64_t early = 0;
    if (!before_events && have_start && d && tt_audit_int_field(d, "early_ns", &early)) {
        const cJSON *kind = get(d, "event_kind");
        if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "ROLE")) {
            push(&t->role_early, early);
            at_role = true;
        } else if (cJSON_IsString(kind)) {
            t->other_kind_ttft++;
            snprintf(t->other_kind, sizeof t->other_kind, "%s", kind->valuestring);
        }
    }

    /* Counts one too many: a chunk without a token timed as one. The role
     * chunk comes right before the first token (often in the same read, so
     * the TTFT cannot show it): the tool's first ITL is then a sliver of the
     * true first gap (under half of it: the tool's own processing between
     * two reads widens it). The usage-only frame comes right after the
     * last token: its last ITL is a sliver. */
    size_t n = T->n_token;
    bool first_sliver = false, last_sliver = false;
    if (rec->itl_ns && rec->n_itl && n > 1) {
        first_sliver = rec->itl_ns[0] < (T->token_ns[1] - T->token_ns[0]) / 2;
        last_sliver = rec->itl_ns[rec->n_itl - 1] < (T->token_ns[n - 1] - T->token_ns[n - 2]) / 2;
    }
    bool role_counted = at_role || (first_sliver && set_has(findings, "role-only-first-chunk"));
    /* a frame after the last token that carries none: vLLM's usage-only
     * frame, or a finish chunk without text */
    const char *trailing = set_has(findings, "usage-empty-choices")  ? "usage-empty-choices"
                           : set_has(findings, "finish-without-text") ? "finish-without-text"
                                                                      : NULL;
    bool usage_counted = last_sliver && trailing;
    if (usage_counted) snprintf(t->trailing_finding, sizeof t->trailing_finding, "%s", trailing);

    int64_t true_tokens = T->tokens >= 0 ? T->tokens : (int64_t)T->n_token;
    if (rec->output_tokens < 0) {
        t->tokens_unknown = true;
    } else if (rec->output_tokens != true_tokens) {
        int64_t extra = explain_extra(rec->output_tokens - true_tokens, role_counted, &t->role_extra_token,
                                      usage_counted, &t->usage_frame_token);
        if (extra && set_has(findings, "usage-with-choices")) {
            t->usage_unread++;
        } else if (extra) {
            t->tokens_wrong++;
            t->tokens_wrong_rep = add_sat(t->tokens_wrong_rep, rec->output_tokens);
            t->tokens_wrong_true += true_tokens;
        }
    }
    int64_t true_itl = n > 0 ? (int64_t)n - 1 : 0;
    if (rec->itl_ns && (int64_t)rec->n_itl != true_itl &&
        explain_extra((int64_t)rec->n_itl - true_itl, role_counted, &t->role_extra_itl, usage_counted,
                      &t->usage_frame_itl))
        t->itl_n_wrong++;
}

static double median_of(const samples *s)
{
    double mean = 0, med = 0, p99 = 0;
    return summarise(s->v, s->n, &mean, &med, &p99) ? med : NAN;
}

static double mean_of(const samples *s)
{
    double mean = 0, med = 0, p99 = 0;
    return summarise(s->v, s->n, &mean, &med, &p99) ? mean : NAN;
}

static double ms(double ns)
{
    return ns / 1e6;
}

/* The tolerance on a median error: the larger of the two bounds. */
static double tolerance_ns(const tt_cell_inputs *in, double true_median)
{
    double pct = isfinite(true_median) ? fabs(true_median) * in->tolerance_pct / 100.0 : 0;
    double abs_ns = in->tolerance_ms * 1e6;
    return pct > abs_ns ? pct : abs_ns;
}

/* The true medians the errors are judged against, found once per cell. */
typedef struct truth_medians {
    double ttft, e2el, itl, tpot;
} truth_medians;

static truth_medians truth_medians_of(const tally *t)
{
    return (truth_medians){median_of(&t->ttft_true), median_of(&t->e2el_true), median_of(&t->itl_true),
                           median_of(&t->tpot_true)};
}

/* Whether err's median is out of tolerance against a true median. */
static bool err_out(const tt_audit_stat *err, double true_median, const tt_cell_inputs *in)
{
    return err->n && fabs(err->median) > tolerance_ns(in, true_median);
}

/* Whether an overhead's median is over the absolute tolerance. */
static bool part_over(const tt_audit_overhead *o, const tt_cell_inputs *in)
{
    return o->n && fabs(o->median) > in->tolerance_ms * 1e6;
}

/* "one output token too many (N requests) and one ITL sample too many (M
 * requests)", leaving out a part whose count is 0; "" when both are. */
static void counted_parts(char *out, size_t cap, size_t tokens, size_t itls)
{
    char a[80] = "", b[80] = "";
    if (tokens) snprintf(a, sizeof a, "one output token too many (%zu requests)", tokens);
    if (itls) snprintf(b, sizeof b, "one ITL sample too many (%zu requests)", itls);
    snprintf(out, cap, "%s%s%s", a, a[0] && b[0] ? " and " : "", b);
}

static int name_causes(tt_audit_cell *c, const tally *t, const truth_medians *tm, const tt_cell_inputs *in)
{
    int rc = 0;
    if (t->role_early.n || t->role_extra_token || t->role_extra_itl) {
        char at[160] = "", counted[200];
        if (t->role_early.n)
            snprintf(at, sizeof at, "TTFT taken at the role-only first chunk, which carries no text: %.3f ms before "
                     "the first token (median, %zu requests)", ms(median_of(&t->role_early)), t->role_early.n);
        counted_parts(counted, sizeof counted, t->role_extra_token, t->role_extra_itl);
        size_t touched = t->role_early.n > t->role_extra_itl ? t->role_early.n : t->role_extra_itl;
        if (t->role_extra_token > touched) touched = t->role_extra_token;
        rc |= tt_audit_add_cause(c, "role-only-first-chunk", touched, "%s%s%s%s", at, at[0] && counted[0] ? "; " : "",
                                 counted[0] ? "the role-only first chunk timed as a token: " : "", counted);
    }
    if (t->other_kind_ttft)
        rc |= tt_audit_add_cause(c, !strcmp(t->other_kind, "KEEPALIVE") ? "keepalive-comment" : "", t->other_kind_ttft,
                                 "TTFT taken at a %s event, before the first token", t->other_kind);
    if (t->before_events.n)
        rc |= tt_audit_add_cause(c, "", t->before_events.n,
                                 "TTFT taken before any event arrived: %.3f ms before the first token reached the "
                                 "client socket (median); the stamp lies within %g ms of the response headers in %zu "
                                 "of them", ms(median_of(&t->before_events)), in->tolerance_ms, t->near_headers);
    if (t->usage_unread)
        rc |= tt_audit_add_cause(c, "usage-with-choices", t->usage_unread,
                                 "output tokens wrong where the usage came in a frame that still carries choices: the "
                                 "tool did not read that usage");
    if (t->tokens_wrong)
        rc |= tt_audit_add_cause(c, "", t->tokens_wrong, "output tokens reported %lld, true %lld over these requests",
                                 (long long)t->tokens_wrong_rep, (long long)t->tokens_wrong_true);
    if (t->usage_frame_itl || t->usage_frame_token) {
        char counted[200];
        counted_parts(counted, sizeof counted, t->usage_frame_token, t->usage_frame_itl);
        rc |= tt_audit_add_cause(c, t->trailing_finding,
                                 t->usage_frame_itl > t->usage_frame_token ? t->usage_frame_itl : t->usage_frame_token,
                                 "a frame after the last token that carries none (%s) timed as a token: %s",
                                 !strcmp(t->trailing_finding, "usage-empty-choices") ? "the usage-only frame, choices []"
                                                                                      : "a finish chunk without text",
                                 counted);
    }
    if (t->itl_n_wrong)
        rc |= tt_audit_add_cause(c, "", t->itl_n_wrong,
                                 "ITL samples reported differ from token events - 1 (not explained by a chunk "
                                 "without a token timed as one)");
    if (c->ok_but_undelivered)
        rc |= tt_audit_add_cause(c, "", c->ok_but_undelivered,
                                 "counted successful although the stream did not complete at the client socket");
    if (c->records > c->records_matched) {
        char lost[256] = "";
        if (t->client_dropped > 0 || t->client_gaps > 0)
            snprintf(lost, sizeof lost,
                     ": tokentap's probe dropped %lld records there (%lld gaps in streams), so these requests went "
                     "unseen and are not graded; the tool may be right about them",
                     (long long)t->client_dropped, (long long)t->client_gaps);
        rc |= tt_audit_add_cause(c, "", c->records - c->records_matched,
                                 "records in the result file that match no request seen at the client socket%s", lost);
    }
    /* the tool's own time, named where it puts TTFT or E2EL out of tolerance */
    bool latency_out = err_out(&c->err_ttft, tm->ttft, in) || err_out(&c->err_e2el, tm->e2el, in);
    bool lag_over = latency_out && part_over(&c->client_lag, in), down_over = latency_out && part_over(&c->downlink, in),
         send_over = latency_out && part_over(&c->send_lag, in);
    if (lag_over)
        rc |= tt_audit_add_cause(c, "", c->client_lag.n,
                                 "the tool stamps the first token %.3f ms after its socket returned it (client lag "
                                 "median; p99 %.3f ms): its own processing, added to TTFT and E2EL",
                                 ms(c->client_lag.median), ms(c->client_lag.p99));
    if (down_over)
        rc |= tt_audit_add_cause(c, "", c->downlink.n,
                                 "the first token took %.3f ms from serve's write to the tool's read (median; p99 "
                                 "%.3f ms): on loopback that is the tool's socket queue, its event loop busy "
                                 "elsewhere (no vantage here splits it from the network)",
                                 ms(c->downlink.median), ms(c->downlink.p99));
    if (send_over)
        rc |= tt_audit_add_cause(c, "", c->send_lag.n,
                                 "the tool starts its clock %.3f ms before its request reaches the socket (send lag "
                                 "median; p99 %.3f ms)", ms(c->send_lag.median), ms(c->send_lag.p99));
    /* out of tolerance with no part over it at its median: the tool's own
     * time comes in bursts; the means add up where the medians do not
     * (said only when they explain at least half of the mean error) */
    if (latency_out && !lag_over && !down_over && !send_over && c->err_ttft.n && c->err_ttft.mean > 0) {
        double send_mean = mean_of(&t->send_lag), down_mean = mean_of(&t->downlink);
        double lag_mean = mean_of(&t->client_lag);
        if (send_mean + down_mean + lag_mean >= c->err_ttft.mean / 2)
            rc |= tt_audit_add_cause(c, "", c->err_ttft.n,
                                     "TTFT off by %+.3f ms at the median (mean %+.3f ms) with no part of the tool's "
                                     "own time over tolerance at its median: it comes in bursts, and the means add "
                                     "up: send lag %.3f ms, downlink (network + queue) %.3f ms, client lag %.3f ms "
                                     "(p99 %.3f, %.3f, %.3f ms)", ms(c->err_ttft.median), ms(c->err_ttft.mean),
                                     ms(send_mean), ms(down_mean), ms(lag_mean), ms(c->send_lag.p99),
                                     ms(c->downlink.p99), ms(c->client_lag.p99));
    }
    if (t->shared_read_events && err_out(&c->err_itl, tm->itl, in))
        rc |= tt_audit_add_cause(c, "coalesced-events", t->shared_requests,
                                 "%llu of %llu token events reached the tool in one read with another event: it "
                                 "cannot time them apart, so its ITL samples are off (median %+.3f ms)",
                                 (unsigned long long)t->shared_read_events, (unsigned long long)t->token_events,
                                 ms(c->err_itl.median));
    return rc ? -1 : 0;
}

static int copy_samples(int64_t **dst, size_t *n, const samples *s)
{
    *n = 0;
    *dst = NULL;
    if (!s->n) return 0;
    *dst = malloc(s->n * sizeof **dst);
    if (!*dst) return -1;
    memcpy(*dst, s->v, s->n * sizeof **dst);
    *n = s->n;
    return 0;
}

/* Whether every graded number of c is within tolerance. */
static bool judge(const tt_audit_cell *c, const truth_medians *tm, const tt_cell_inputs *in)
{
    if (!c->graded || c->cmd_status != 0 || c->cmd_problem[0]) return false;
    if (c->failed_but_delivered || c->ok_but_undelivered || c->records != c->records_matched) return false;
    if (c->records < c->requests_sent) return false;
    if (c->tokens_reported >= 0 && c->tokens_reported != c->tokens_true) return false;
    if (c->itl_samples_reported >= 0 && c->itl_samples_reported != c->itl_samples_true) return false;
    return !err_out(&c->err_ttft, tm->ttft, in) && !err_out(&c->err_itl, tm->itl, in) &&
           !err_out(&c->err_tpot, tm->tpot, in) && !err_out(&c->err_e2el, tm->e2el, in);
}

/* An importer's reason without the path it starts with (the card names {result}). */
static const char *without_path(const char *err, const char *path)
{
    size_t k = strlen(path);
    if (strncmp(err, path, k)) return err;
    err += k;
    if (*err == ':') err++;
    while (*err == ' ') err++;
    return err;
}

int tt_audit_grade_cell(tt_audit_cell *c, const tt_cell_inputs *in, tt_cell_evidence *ev)
{
    memset(ev, 0, sizeof *ev);
    c->tokens_reported = c->tokens_true = c->itl_samples_reported = c->itl_samples_true = -1;
    char err[512];
    tt_truth truth;
    if (tt_truth_load(in->serve_log, &truth, err, sizeof err) < 0) {
        snprintf(c->cmd_problem, sizeof c->cmd_problem, "%.390s", err);
        return 0;
    }
    for (size_t i = 0; i < truth.n; i++)
        if (truth.reqs[i].generation && tt_truth_ended(&truth.reqs[i])) c->server_completed++;

    cJSON *doc = read_report(in->run_report);
    tt_bench_result bench = {0};
    bool have_bench = false;
    if (access(in->result_path, F_OK) != 0) {
        snprintf(c->cmd_problem, sizeof c->cmd_problem, "wrote no result file at {result}");
    } else if (tt_bench_load(in->result_path, TT_BENCH_AUTO, &bench, err, sizeof err) < 0) {
        snprintf(c->cmd_problem, sizeof c->cmd_problem, "its result file is not one tokentap reads: %.300s",
                 without_path(err, in->result_path));
    } else {
        have_bench = true;
        snprintf(c->result_format, sizeof c->result_format, "%s", tt_bench_format_name(bench.format));
    }
    if (!doc && !c->cmd_problem[0])
        snprintf(c->cmd_problem, sizeof c->cmd_problem, "tokentap run wrote no report (%.300s)", in->run_report);

    const cJSON *reqs = get(doc, "requests");
    size_t n_reqs = (size_t)cJSON_GetArraySize(reqs);
    finding_sets fs = {0};
    const cJSON **by_record = NULL;
    const tt_truth_req **truth_of = NULL;
    int rc = 0;
    tally t;
    memset(&t, 0, sizeof t);
    truth_medians tm = {NAN, NAN, NAN, NAN};
    if (findings_by_request(doc, n_reqs, &fs) < 0) goto oom;
    const cJSON *client_source = get(get(get(doc, "per_vantage"), "client"), "source");
    if (!tt_audit_int_field(client_source, "dropped_records", &t.client_dropped)) t.client_dropped = 0;
    if (!tt_audit_int_field(client_source, "gaps", &t.client_gaps)) t.client_gaps = 0;

    /* each request's truth, by its connection (serve counts ordinals from 1);
     * requests sent: generation requests the client socket saw */
    truth_of = calloc(n_reqs ? n_reqs : 1, sizeof *truth_of);
    if (!truth_of) goto oom;
    size_t i = 0;
    const cJSON *R;
    cJSON_ArrayForEach(R, reqs)
    {
        const cJSON *conn = get(R, "connection"), *peer = get(conn, "client");
        int64_t ord;
        if (cJSON_IsString(peer) && tt_audit_int_field(conn, "ordinal", &ord))
            truth_of[i] = tt_truth_find(&truth, peer->valuestring, (uint32_t)ord + 1);
        if (truth_of[i] && truth_of[i]->generation && get(get(R, "vantages"), "client")) c->requests_sent++;
        const cJSON *path = get(R, "path");
        if (cJSON_IsString(path)) {
            char clean[128];
            snprintf(clean, sizeof clean, "%s", path->valuestring);
            clean[strcspn(clean, "?")] = 0;
            set_add(ev->paths, sizeof ev->paths, clean);
        }
        i++;
    }
    size_t answered = 0;
    for (size_t k = 0; k < truth.n; k++) answered += truth.reqs[k].generation;
    if (answered && !c->requests_sent && !c->cmd_problem[0])
        snprintf(c->cmd_problem, sizeof c->cmd_problem,
                 "the probe saw none of the %zu requests serve answered: the tool bypasses libc's socket calls (a "
                 "static or Go binary?), so its start instants are serve's", answered);
    if (!have_bench || !doc) goto done;

    c->records = bench.n_reqs;
    by_record = calloc(bench.n_reqs ? bench.n_reqs : 1, sizeof *by_record);
    if (!by_record) goto oom;
    size_t *req_index = calloc(bench.n_reqs ? bench.n_reqs : 1, sizeof *req_index);
    if (!req_index) goto oom;
    i = 0;
    cJSON_ArrayForEach(R, reqs)
    {
        int64_t idx;
        if (tt_audit_int_field(get(R, "reported"), "index", &idx) && idx >= 0 && (size_t)idx < bench.n_reqs) {
            by_record[idx] = R;
            req_index[idx] = i;
        }
        i++;
    }
    c->tokens_reported = c->tokens_true = c->itl_samples_reported = c->itl_samples_true = 0;
    c->graded = true;
    for (size_t k = 0; k < bench.n_reqs; k++) {
        const tt_bench_request *rec = &bench.reqs[k];
        R = by_record[k];
        if (rec->success) c->reported_ok++;
        if (!R) continue;
        const cJSON *cl = get(get(R, "vantages"), "client");
        const tt_truth_req *T = truth_of[req_index[k]];
        if (!T || !T->generation) continue;
        c->records_matched++;
        const char *findings = fs.ids[req_index[k]];
        int64_t events;
        bool complete = cJSON_IsTrue(get(R, "complete"));
        bool delivered = cl ? complete && tt_audit_int_field(cl, "token_events", &events) && events == (int64_t)T->n_token
                            : tt_truth_ended(T);
        if (rec->success && !delivered) c->ok_but_undelivered++;
        if (!rec->success && delivered && tt_truth_ended(T)) {
            c->failed_but_delivered++;
            set_union(ev->failed_findings, sizeof ev->failed_findings, findings);
            if (rec->error && !ev->failed_error[0]) snprintf(ev->failed_error, sizeof ev->failed_error, "%s", rec->error);
        }
        if (rec->success) set_union(ev->ok_findings, sizeof ev->ok_findings, findings);
        int64_t true_tokens = T->tokens >= 0 ? T->tokens : (int64_t)T->n_token;
        if (rec->output_tokens >= 0) c->tokens_reported = add_sat(c->tokens_reported, rec->output_tokens);
        else t.tokens_unknown = true;
        c->tokens_true += true_tokens;
        c->itl_samples_reported += rec->itl_ns || !rec->success ? (int64_t)rec->n_itl : 0;
        if (rec->success && !rec->itl_ns) t.itl_reported_unknown = true;
        c->itl_samples_true += T->n_token > 0 ? (int64_t)T->n_token - 1 : 0;
        if (rec->success && T->n_token > 0) grade_timing(&t, rec, R, cl, T, findings, in->tolerance_ms);
    }
    free(req_index);
    if (t.tokens_unknown) c->tokens_reported = -1;
    if (t.itl_reported_unknown) c->itl_samples_reported = -1;
    if (tally_oom(&t)) goto oom;
    stat_of(&t.ttft_err, &c->err_ttft);
    stat_of(&t.e2el_err, &c->err_e2el);
    stat_of(&t.tpot_err, &c->err_tpot);
    diff_of(&t.itl_rep, &t.itl_true, &c->err_itl);
    overhead_of(&t.send_lag, &c->send_lag);
    overhead_of(&t.client_lag, &c->client_lag);
    overhead_of(&t.downlink, &c->downlink);
    overhead_of(&t.client_queue, &c->client_queue);
    if (copy_samples(&c->ttft_err_ns, &c->n_ttft_err, &t.ttft_err) < 0 ||
        copy_samples(&c->itl_reported_ns, &c->n_itl_reported, &t.itl_rep) < 0 ||
        copy_samples(&c->itl_true_ns, &c->n_itl_true, &t.itl_true) < 0)
        goto oom;
    tm = truth_medians_of(&t);
    if (name_causes(c, &t, &tm, in) < 0) goto oom;
done:
    c->within_tolerance = judge(c, &tm, in);
    goto out;
oom:
    rc = -1;
out:
    tally_free(&t);
    free(truth_of);
    free(by_record);
    free(fs.ids);
    if (have_bench) tt_bench_result_free(&bench);
    cJSON_Delete(doc);
    tt_truth_free(&truth);
    return rc;
}
