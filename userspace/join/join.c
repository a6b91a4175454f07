#include "join/join.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a string -> index table (keys copied into one arena) ---- */

typedef struct key_slot {
    uint64_t hash;
    size_t key_off;   /* into the arena; SIZE_MAX when the slot is empty */
    size_t key_len;
    size_t value;
} key_slot;

typedef struct key_table {
    key_slot *slots;
    size_t cap, used;
    char *arena;
    size_t arena_len, arena_cap;
} key_table;

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void table_free(key_table *t)
{
    free(t->slots);
    free(t->arena);
    memset(t, 0, sizeof *t);
}

static void table_clear(key_table *t)
{
    for (size_t i = 0; i < t->cap; i++) t->slots[i].key_off = SIZE_MAX;
    t->used = 0;
    t->arena_len = 0;
}

static int table_grow(key_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    key_slot *slots = malloc(cap * sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < cap; i++) slots[i].key_off = SIZE_MAX;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].key_off == SIZE_MAX) continue;
        size_t at = t->slots[i].hash & (cap - 1);
        while (slots[at].key_off != SIZE_MAX) at = (at + 1) & (cap - 1);
        slots[at] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* The slot holding key, or the empty slot where it would go. */
static key_slot *table_slot(key_table *t, const char *key, size_t len, uint64_t hash)
{
    size_t at = hash & (t->cap - 1);
    for (;;) {
        key_slot *s = &t->slots[at];
        if (s->key_off == SIZE_MAX) return s;
        if (s->hash == hash && s->key_len == len && !memcmp(t->arena + s->key_off, key, len)) return s;
        at = (at + 1) & (t->cap - 1);
    }
}

static bool table_get(const key_table *t, const char *key, size_t *value)
{
    if (!t->cap) return false;
    key_slot *s = table_slot((key_table *)t, key, strlen(key), fnv1a(key, strlen(key)));
    if (s->key_off == SIZE_MAX) return false;
    *value = s->value;
    return true;
}

/* Insert key -> value unless key is already there (then *existing gets its
 * value when not NULL). 0, or -1 when out of memory. */
static int table_put(key_table *t, const char *key, size_t value, size_t *existing, bool *found)
{
    size_t len = strlen(key);
    uint64_t hash = fnv1a(key, len);
    if ((t->used + 1) * 2 > t->cap && table_grow(t) < 0) return -1;
    key_slot *s = table_slot(t, key, len, hash);
    if (s->key_off != SIZE_MAX) {
        if (existing) *existing = s->value;
        if (found) *found = true;
        return 0;
    }
    if (found) *found = false;
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < t->arena_len + len) cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) return -1;
        t->arena = a;
        t->arena_cap = cap;
    }
    memcpy(t->arena + t->arena_len, key, len);
    *s = (key_slot){.hash = hash, .key_off = t->arena_len, .key_len = len, .value = value};
    t->arena_len += len;
    t->used++;
    return 0;
}

/* The k-th occurrence of base at this vantage: count it in occ and write
 * "base#k" into out. -1 when out of memory. */
static int occurrence_key(key_table *occ, const char *base, char *out, size_t cap)
{
    size_t count = 0;
    bool found = false;
    if (table_put(occ, base, 1, &count, &found) < 0) return -1;
    if (found) {
        size_t len = strlen(base);
        key_slot *s = table_slot(occ, base, len, fnv1a(base, len));
        s->value = count + 1;
    }
    snprintf(out, cap, "%s#%zu", base, found ? count : 0);
    return 0;
}

/* ---- names ---- */

const char *tt_join_key_name(tt_join_key k)
{
    switch (k) {
    case TT_JOIN_ID: return "id";
    case TT_JOIN_SEQUENCE: return "sequence";
    case TT_JOIN_CONNECTION: return "connection";
    case TT_JOIN_RESPONSE_ID: return "response-id";
    case TT_JOIN_ORDER_START: return "order+start";
    case TT_JOIN_ORDER: return "order";
    default: return NULL;
    }
}

const tt_request *tt_join_request(const tt_join *j, const tt_joined *g, tt_vantage v)
{
    if ((unsigned)v >= TT_VANTAGE_COUNT || g->at[v] == TT_JOIN_ABSENT || !j->by_vantage[v]) return NULL;
    return &j->by_vantage[v]->reqs[g->at[v]];
}

const tt_req_metrics *tt_join_metrics(const tt_join *j, const tt_joined *g, tt_vantage v)
{
    if ((unsigned)v >= TT_VANTAGE_COUNT || g->at[v] == TT_JOIN_ABSENT || !j->by_vantage[v]) return NULL;
    return &j->by_vantage[v]->metrics[g->at[v]];
}

const tt_bench_request *tt_join_bench(const tt_join *j, const tt_joined *g)
{
    if (!j->bench || g->bench == TT_JOIN_ABSENT || g->bench >= j->bench->n_reqs) return NULL;
    return &j->bench->reqs[g->bench];
}

bool tt_join_bench_start(const tt_join *j, const tt_bench_request *b, int64_t *start_ns)
{
    if (b->start_ns == TT_BENCH_NONE) return false;
    const tt_join_options *o = &j->opt;
    if (b->start_clock == TT_BENCH_CLOCK_MONO) {
        if (o->clock_is_mono) *start_ns = b->start_ns;
        else if (o->has_wall_to_mono) *start_ns = b->start_ns + o->wall_to_mono_ns;
        else return false;
    } else if (b->start_clock == TT_BENCH_CLOCK_WALL) {
        if (!o->clock_is_mono) *start_ns = b->start_ns;
        else if (o->has_wall_to_mono) *start_ns = b->start_ns - o->wall_to_mono_ns;
        else return false;
    } else {
        return false;
    }
    /* the tool's host is not the reference's: its clock onto the reference's */
    if (o->has_clock_map)
        *start_ns += (int64_t)llround(o->map_d0_ns + o->map_skew * (double)(*start_ns - o->map_t0_ns));
    return true;
}

/* ---- across vantages ---- */

#define N_KEYS 4

/* The keys of r, base form (without the occurrence count), strongest
 * first; "" when r has none of that kind. */
static void request_keys(const tt_request *r, char keys[N_KEYS][400])
{
    char c[64], s[64];
    for (int q = 0; q < N_KEYS; q++) keys[q][0] = 0;
    if (r->request_id[0]) snprintf(keys[0], sizeof keys[0], "i|%s", r->request_id);
    if (r->client.family) {
        tt_endpoint_format(&r->client, c, sizeof c);
        tt_endpoint_format(&r->server, s, sizeof s);
        if (r->req_seq_known) snprintf(keys[1], sizeof keys[1], "s|%s|%s|%u", c, s, r->req_seq);
        snprintf(keys[2], sizeof keys[2], "c|%s|%s|%u", c, s, r->ordinal);
    }
    if (r->response_id[0]) snprintf(keys[3], sizeof keys[3], "r|%s", r->response_id);
}

static const tt_join_key key_kinds[N_KEYS] = {TT_JOIN_ID, TT_JOIN_SEQUENCE, TT_JOIN_CONNECTION,
                                              TT_JOIN_RESPONSE_ID};

static int grow_groups(tt_join *j, size_t *cap)
{
    if (j->n < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    tt_joined *g = realloc(j->reqs, ncap * sizeof *g);
    if (!g) return -1;
    j->reqs = g;
    *cap = ncap;
    return 0;
}

static int join_vantages(tt_join *j, const tt_analysis *const *as, size_t n)
{
    key_table groups = {0}, occ = {0};
    size_t cap = 0;
    int rc = -1;
    for (size_t k = 0; k < n; k++) {
        const tt_analysis *a = as[k];
        tt_vantage v = a->vantage;
        table_clear(&occ);
        for (size_t i = 0; i < a->n_reqs; i++) {
            const tt_request *r = &a->reqs[i];
            char base[N_KEYS][400], full[N_KEYS][420];
            request_keys(r, base);
            for (int q = 0; q < N_KEYS; q++) {
                full[q][0] = 0;
                if (base[q][0] && occurrence_key(&occ, base[q], full[q], sizeof full[q]) < 0) goto out;
            }
            size_t g = TT_JOIN_ABSENT;
            tt_join_key how = TT_JOIN_NONE;
            for (int q = 0; q < N_KEYS && g == TT_JOIN_ABSENT; q++) {
                size_t cand;
                if (full[q][0] && table_get(&groups, full[q], &cand) && j->reqs[cand].at[v] == TT_JOIN_ABSENT) {
                    g = cand;
                    how = key_kinds[q];
                }
            }
            if (g == TT_JOIN_ABSENT) {
                if (grow_groups(j, &cap) < 0) goto out;
                g = j->n++;
                tt_joined *ng = &j->reqs[g];
                memset(ng, 0, sizeof *ng);
                for (int w = 0; w < TT_VANTAGE_COUNT; w++) ng->at[w] = TT_JOIN_ABSENT;
                ng->bench = TT_JOIN_ABSENT;
                ng->start_ns = TT_NS_NONE;
            } else {
                j->by_key[how]++;
            }
            j->reqs[g].at[v] = i;
            j->reqs[g].how[v] = how;
            for (int q = 0; q < N_KEYS; q++)
                if (full[q][0] && table_put(&groups, full[q], g, NULL, NULL) < 0) goto out;
        }
    }
    rc = 0;
out:
    table_free(&groups);
    table_free(&occ);
    return rc;
}

/* The instant a group's request started: at the client when it was seen
 * there (the benchmark's own side), else the earliest vantage. */
static uint64_t group_start(const tt_join *j, const tt_joined *g)
{
    const tt_request *c = tt_join_request(j, g, TT_VANTAGE_CLIENT);
    if (c && c->req_first_ns != TT_NS_NONE) return c->req_first_ns;
    uint64_t best = TT_NS_NONE;
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        const tt_request *r = tt_join_request(j, g, (tt_vantage)v);
        if (r && r->req_first_ns < best) best = r->req_first_ns;
    }
    return best;
}

static int by_start(const void *pa, const void *pb)
{
    const tt_joined *a = pa, *b = pb;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    for (int v = 0; v < TT_VANTAGE_COUNT; v++)
        if (a->at[v] != b->at[v]) return a->at[v] < b->at[v] ? -1 : 1;
    return 0;
}

/* ---- to the benchmark's records ---- */

static const char *group_request_id(const tt_join *j, const tt_joined *g)
{
    static const tt_vantage order[] = {TT_VANTAGE_CLIENT, TT_VANTAGE_CLIENT_WIRE, TT_VANTAGE_WIRE, TT_VANTAGE_SERVER,
                                       TT_VANTAGE_CLIENT_TLS, TT_VANTAGE_SERVER_TLS};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        const tt_request *r = tt_join_request(j, g, order[k]);
        if (r && r->request_id[0]) return r->request_id;
    }
    return NULL;
}

/* A request the benchmark could have sent: a POST, or one whose head was not seen. */
static bool group_is_candidate(const tt_join *j, const tt_joined *g)
{
    bool any_method = false;
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        const tt_request *r = tt_join_request(j, g, (tt_vantage)v);
        if (!r || !r->method[0]) continue;
        any_method = true;
        if (!strcmp(r->method, "POST")) return true;
    }
    return !any_method;
}

static void bench_match(tt_join *j, size_t group, size_t rec, tt_join_key how)
{
    j->reqs[group].bench = rec;
    j->reqs[group].bench_how = how;
    j->bench_by_key[how]++;
}

/* Records carrying their own request id. */
static int match_by_record_id(tt_join *j, bool *rec_done)
{
    key_table ids = {0}, occ = {0};
    int rc = -1;
    char full[420], base[400];
    for (size_t g = 0; g < j->n; g++) {
        const char *id = group_request_id(j, &j->reqs[g]);
        if (!id) continue;
        snprintf(base, sizeof base, "%s", id);
        if (occurrence_key(&occ, base, full, sizeof full) < 0 || table_put(&ids, full, g, NULL, NULL) < 0) goto out;
    }
    table_clear(&occ);
    for (size_t i = 0; i < j->bench->n_reqs; i++) {
        const char *id = j->bench->reqs[i].request_id;
        if (!id || !id[0]) continue;
        snprintf(base, sizeof base, "%s", id);
        if (occurrence_key(&occ, base, full, sizeof full) < 0) goto out;
        size_t g;
        if (table_get(&ids, full, &g) && j->reqs[g].bench == TT_JOIN_ABSENT) {
            bench_match(j, g, i, TT_JOIN_ID);
            rec_done[i] = true;
        }
    }
    rc = 0;
out:
    table_free(&ids);
    table_free(&occ);
    return rc;
}

/* Records without an id, when the tool numbered its x-request-ids
 * <prefix><index>: one prefix, every number below the record count, and
 * index 0 among them (so a 1-based numbering is never taken for it). */
static void match_by_id_suffix(tt_join *j, bool *rec_done)
{
    size_t n_rec = j->bench->n_reqs;
    size_t *group_of = malloc((n_rec + 1) * sizeof *group_of);
    if (!group_of) return;
    for (size_t i = 0; i < n_rec; i++) group_of[i] = TT_JOIN_ABSENT;
    const char *prefix = NULL;
    size_t prefix_len = 0, numbered = 0;
    bool ok = true;
    for (size_t g = 0; g < j->n && ok; g++) {
        const char *id = group_request_id(j, &j->reqs[g]);
        if (!id) continue;
        size_t len = strlen(id), d = len;
        while (d > 0 && id[d - 1] >= '0' && id[d - 1] <= '9') d--;
        if (d == len || len - d > 18) continue;
        if (!prefix) {
            prefix = id;
            prefix_len = d;
        } else if (d != prefix_len || memcmp(id, prefix, d)) {
            ok = false;
            break;
        }
        unsigned long long num = strtoull(id + d, NULL, 10);
        if (num >= n_rec || group_of[num] != TT_JOIN_ABSENT) ok = false;
        else group_of[num] = g;
        numbered++;
    }
    if (ok && numbered && group_of[0] != TT_JOIN_ABSENT)
        for (size_t i = 0; i < n_rec; i++) {
            size_t g = group_of[i];
            if (rec_done[i] || (j->bench->reqs[i].request_id && j->bench->reqs[i].request_id[0])) continue;
            if (g == TT_JOIN_ABSENT || j->reqs[g].bench != TT_JOIN_ABSENT) continue;
            bench_match(j, g, i, TT_JOIN_ID);
            rec_done[i] = true;
        }
    free(group_of);
}

typedef struct timed_index {
    int64_t t;
    size_t i;
} timed_index;

static int by_time(const void *pa, const void *pb)
{
    const timed_index *a = pa, *b = pb;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Each remaining record, in start order, to the earliest unmatched request
 * starting at or after it (1 ms earlier allowed for clock conversion) and
 * within the tolerance. */
static int match_by_start(tt_join *j, bool *rec_done)
{
    size_t n_rec = j->bench->n_reqs;
    timed_index *recs = malloc((n_rec + 1) * sizeof *recs), *grp = malloc((j->n + 1) * sizeof *grp);
    if (!recs || !grp) {
        free(recs);
        free(grp);
        return -1;
    }
    size_t nr = 0, ng = 0;
    for (size_t i = 0; i < n_rec; i++) {
        int64_t t;
        if (!rec_done[i] && tt_join_bench_start(j, &j->bench->reqs[i], &t)) recs[nr++] = (timed_index){t, i};
    }
    for (size_t g = 0; g < j->n; g++)
        if (j->reqs[g].bench == TT_JOIN_ABSENT && j->reqs[g].start_ns != TT_NS_NONE &&
            group_is_candidate(j, &j->reqs[g]))
            grp[ng++] = (timed_index){(int64_t)j->reqs[g].start_ns, g};
    qsort(recs, nr, sizeof *recs, by_time);
    qsort(grp, ng, sizeof *grp, by_time);
    int64_t tol = j->opt.start_tolerance_ns > 0 ? j->opt.start_tolerance_ns : 1000000000;
    int64_t early = 1000000;
    size_t lo = 0;
    for (size_t r = 0; r < nr; r++) {
        while (lo < ng && grp[lo].t < recs[r].t - early) lo++;
        for (size_t p = lo; p < ng && grp[p].t - recs[r].t <= tol; p++) {
            tt_joined *g = &j->reqs[grp[p].i];
            if (g->bench != TT_JOIN_ABSENT) continue;
            bench_match(j, grp[p].i, recs[r].i, TT_JOIN_ORDER_START);
            rec_done[recs[r].i] = true;
            break;
        }
    }
    free(recs);
    free(grp);
    return 0;
}

/* Records left, in file order, to requests left, in start order; when the
 * counts differ the earliest requests are passed over (a tool's warm-up
 * request is not in its results) and the note says so. */
static void match_by_order(tt_join *j, bool *rec_done)
{
    size_t left_rec = 0, left_grp = 0;
    for (size_t i = 0; i < j->bench->n_reqs; i++) left_rec += !rec_done[i];
    for (size_t g = 0; g < j->n; g++)
        left_grp += j->reqs[g].bench == TT_JOIN_ABSENT && group_is_candidate(j, &j->reqs[g]);
    if (!left_rec || !left_grp) return;
    if (left_rec != left_grp)
        j->bench_note = "the benchmark file and the capture hold different numbers of requests; matched by order "
                        "from the last request back";
    size_t skip = left_grp > left_rec ? left_grp - left_rec : 0;
    size_t rec_skip = left_rec > left_grp ? left_rec - left_grp : 0;
    size_t i = 0;
    for (size_t g = 0; g < j->n; g++) {
        if (j->reqs[g].bench != TT_JOIN_ABSENT || !group_is_candidate(j, &j->reqs[g])) continue;
        if (skip) {
            skip--;
            continue;
        }
        while (i < j->bench->n_reqs && (rec_done[i] || rec_skip)) {
            if (!rec_done[i]) rec_skip--;
            i++;
        }
        if (i >= j->bench->n_reqs) break;
        bench_match(j, g, i, TT_JOIN_ORDER);
        rec_done[i++] = true;
    }
}

static int join_bench(tt_join *j)
{
    size_t n_rec = j->bench->n_reqs;
    bool *rec_done = calloc(n_rec + 1, sizeof *rec_done);
    if (!rec_done) return -1;
    int rc = match_by_record_id(j, rec_done);
    if (rc == 0 && !j->bench->ids_not_indices) match_by_id_suffix(j, rec_done);
    size_t with_start = 0, left = 0, usable = 0;
    for (size_t i = 0; i < n_rec; i++) {
        int64_t t;
        bool has = tt_join_bench_start(j, &j->bench->reqs[i], &t);
        usable += has;
        if (rec_done[i]) continue;
        left++;
        with_start += has;
    }
    j->bench_starts_usable = n_rec && usable == n_rec;
    if (rc == 0 && left) {
        if (with_start) rc = match_by_start(j, rec_done);
        else match_by_order(j, rec_done);
        if (with_start && with_start < left && !j->bench_note)
            j->bench_note = "some records give no start instant on the capture's clock";
        else if (!with_start && n_rec && j->bench->reqs[0].start_clock != TT_BENCH_CLOCK_NONE && !j->bench_note)
            j->bench_note = "the records' start instants cannot be put on the capture's clock (no wall-to-monotonic "
                            "offset); matched by order";
    }
    for (size_t i = 0; i < n_rec; i++) j->bench_unmatched += !rec_done[i];
    for (size_t g = 0; g < j->n; g++) {
        tt_joined *grp = &j->reqs[g];
        int64_t t;
        if (grp->bench != TT_JOIN_ABSENT && grp->start_ns != TT_NS_NONE &&
            tt_join_bench_start(j, &j->bench->reqs[grp->bench], &t))
            grp->bench_start_delta_ns = (int64_t)grp->start_ns - t;
        else if (grp->bench != TT_JOIN_ABSENT)
            grp->bench_start_delta_ns = TT_BENCH_NONE;
    }
    if (rc == 0 && j->bench_unmatched && !j->bench_note)
        j->bench_note = "some records met no request (not captured, or started outside the tolerance)";
    if (rc == 0 && !j->bench_note && j->bench->id_note && j->bench_by_key[TT_JOIN_ID] < n_rec)
        j->bench_note = j->bench->id_note;
    free(rec_done);
    return rc;
}

int tt_join_build(tt_join *j, const tt_analysis *const *as, size_t n, const tt_bench_result *bench,
                  const tt_join_options *opt)
{
    memset(j, 0, sizeof *j);
    if (opt) j->opt = *opt;
    else j->opt.clock_is_mono = true;
    for (size_t k = 0; k < n; k++) {
        tt_vantage v = as[k]->vantage;
        if ((unsigned)v >= TT_VANTAGE_COUNT || j->by_vantage[v]) return -1;
        j->by_vantage[v] = as[k];
    }
    if (join_vantages(j, as, n) < 0) goto fail;
    for (size_t g = 0; g < j->n; g++) {
        tt_joined *grp = &j->reqs[g];
        grp->start_ns = group_start(j, grp);
        int seen = 0;
        for (int v = 0; v < TT_VANTAGE_COUNT; v++) seen += grp->at[v] != TT_JOIN_ABSENT;
        j->multi_vantage += seen > 1;
    }
    if (j->n) qsort(j->reqs, j->n, sizeof *j->reqs, by_start);
    j->bench = bench;
    if (bench && join_bench(j) < 0) goto fail;
    return 0;
fail:
    tt_join_free(j);
    return -1;
}

void tt_join_free(tt_join *j)
{
    free(j->reqs);
    memset(j, 0, sizeof *j);
}
