/* audit_truth.c - the truth of an audit cell: serve's ground-truth log
 * (docs/serve.md, "The ground-truth log"), one record per request with the
 * CLOCK_MONOTONIC instant of the write that completed each token event. */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_internal.h"

void tt_truth_free(tt_truth *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->reqs[i].token_ns);
    free(t->reqs);
    memset(t, 0, sizeof *t);
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool tt_audit_int_field(const cJSON *o, const char *key, int64_t *out)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) <= 9007199254740992.0)) return false;
    *out = (int64_t)llround(v->valuedouble);
    return true;
}

/* Requests are looked up from the newest: a write belongs to a stream
 * still open, and the open ones are at the end of the log's order. */
const tt_truth_req *tt_truth_find(const tt_truth *t, const char *peer, uint32_t ordinal)
{
    for (size_t i = t->n; i-- > 0;)
        if (t->reqs[i].ordinal == ordinal && !strcmp(t->reqs[i].peer, peer)) return &t->reqs[i];
    return NULL;
}

bool tt_truth_ended(const tt_truth_req *r)
{
    return r->stream ? r->events_total > 0 && r->events_written >= r->events_total : r->events_written > 0;
}

static int add_request(tt_truth *t, const cJSON *o)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        tt_truth_req *n = realloc(t->reqs, cap * sizeof *n);
        if (!n) return -1;
        t->reqs = n;
        t->cap = cap;
    }
    tt_truth_req *r = &t->reqs[t->n];
    memset(r, 0, sizeof *r);
    const char *peer = str_of(o, "peer"), *id = str_of(o, "request_id"), *path = str_of(o, "path");
    int64_t v;
    if (!peer || !tt_audit_int_field(o, "ordinal", &v) || !tt_audit_int_field(o, "request_read_ns", &r->read_ns)) {
        t->bad_lines++;
        return 0;
    }
    snprintf(r->peer, sizeof r->peer, "%s", peer);
    r->ordinal = (uint32_t)v;
    snprintf(r->request_id, sizeof r->request_id, "%s", id ? id : "");
    snprintf(r->path, sizeof r->path, "%s", path ? path : "");
    r->status = tt_audit_int_field(o, "status", &v) ? (int)v : 0;
    r->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "stream"));
    r->generation = tt_audit_int_field(o, "tokens", &r->tokens);
    if (!r->generation) r->tokens = -1;
    if (!tt_audit_int_field(o, "events", &r->events_total)) r->events_total = 0;
    t->n++;
    return 0;
}

static int add_write(tt_truth *t, const cJSON *o)
{
    const char *peer = str_of(o, "peer");
    int64_t ord, mono;
    if (!peer || !tt_audit_int_field(o, "ordinal", &ord) || !tt_audit_int_field(o, "mono_ns", &mono)) {
        t->bad_lines++;
        return 0;
    }
    tt_truth_req *r = (tt_truth_req *)tt_truth_find(t, peer, (uint32_t)ord);
    if (!r) {
        t->bad_lines++;
        return 0;
    }
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "events"), *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *kind = cJSON_GetArrayItem(e, 1);
        r->events_written++;
        if (!cJSON_IsString(kind) || (strcmp(kind->valuestring, "token") && strcmp(kind->valuestring, "body")))
            continue;
        if (!strcmp(kind->valuestring, "body")) continue; /* a whole non-streamed body: no token instants */
        if (r->n_token == r->cap_token) {
            size_t cap = r->cap_token ? r->cap_token * 2 : 32;
            int64_t *n = realloc(r->token_ns, cap * sizeof *n);
            if (!n) return -1;
            r->token_ns = n;
            r->cap_token = cap;
        }
        r->token_ns[r->n_token++] = mono;
    }
    return 0;
}

int tt_truth_load(const char *path, tt_truth *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read serve's log %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        cJSON *o = cJSON_ParseWithLength(line, (size_t)len);
        const char *type = o ? str_of(o, "type") : NULL;
        if (!type) t->bad_lines++;
        else if (!strcmp(type, "request")) rc = add_request(t, o);
        else if (!strcmp(type, "write")) rc = add_write(t, o);
        else if (strcmp(type, "clock") && strcmp(type, "close")) t->bad_lines++;
        cJSON_Delete(o);
        if (rc < 0) break;
    }
    free(line);
    fclose(f);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory reading %s", path);
        tt_truth_free(t);
    }
    return rc;
}

size_t tt_truth_count_done(const char *buf, size_t len)
{
    static const char needle[] = ",\"done\"]";
    size_t n = 0, k = sizeof needle - 1;
    for (const char *p = buf; len >= k && (p = memmem(p, len - (size_t)(p - buf), needle, k)) != NULL; p += k) n++;
    return n;
}
