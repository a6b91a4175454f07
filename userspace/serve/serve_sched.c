/* serve_sched.c - delay distributions and the due-instant heap; see serve_sched.h. */
#include "serve/serve_sched.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DELAY_MS 3600000.0

void tt_prng_seed(tt_prng *r, uint64_t seed, uint64_t stream)
{
    r->state = seed ^ (stream * 0xd1342543de82ef95ull);
    (void)tt_prng_next(r);
}

uint64_t tt_prng_next(tt_prng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tt_prng_unit(tt_prng *r) { return (double)(tt_prng_next(r) >> 11) * 0x1.0p-53; }

static int parse_ms(const char *s, size_t len, uint64_t *ns, char *err, size_t errlen)
{
    char tmp[64];
    if (len == 0 || len >= sizeof tmp) {
        snprintf(err, errlen, "'%.*s' is not a number of milliseconds", (int)len, s);
        return -1;
    }
    memcpy(tmp, s, len);
    tmp[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (*end || errno || !isfinite(v) || v < 0 || v > MAX_DELAY_MS) {
        snprintf(err, errlen, "'%s' is not a number of milliseconds in [0, %.0f]", tmp, MAX_DELAY_MS);
        return -1;
    }
    *ns = (uint64_t)llround(v * 1e6);
    return 0;
}

#define MAX_REPLAY_VALUES 10000000u

static int parse_replay(const char *path, tt_dist *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open replay file '%s': %s", path, strerror(errno));
        return -1;
    }
    tt_dist d = {.kind = TT_DIST_REPLAY};
    size_t cap = 0, lineno = 0;
    char *line = NULL;
    size_t linecap = 0;
    ssize_t got;
    int rc = -1;
    while ((got = getline(&line, &linecap, f)) >= 0) {
        lineno++;
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
        size_t at = 0;
        while (at < len && (line[at] == ' ' || line[at] == '\t')) at++;
        if (at == len || line[at] == '#') continue;
        if (d.n_values == MAX_REPLAY_VALUES) {
            snprintf(err, errlen, "replay file '%s': more than %u values", path, MAX_REPLAY_VALUES);
            goto out;
        }
        uint64_t ns;
        char why[160];
        if (parse_ms(line + at, len - at, &ns, why, sizeof why)) {
            snprintf(err, errlen, "replay file '%s' line %zu: %s", path, lineno, why);
            goto out;
        }
        if (d.n_values == cap) {
            cap = cap ? cap * 2 : 64;
            uint64_t *p = realloc(d.values, cap * sizeof *p);
            if (!p) {
                snprintf(err, errlen, "replay file '%s': out of memory", path);
                goto out;
            }
            d.values = p;
        }
        d.values[d.n_values++] = ns;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "reading replay file '%s' failed", path);
        goto out;
    }
    if (d.n_values == 0) {
        snprintf(err, errlen, "replay file '%s' holds no delays", path);
        goto out;
    }
    d.a_ns = d.values[0];
    *out = d;
    d.values = NULL;
    rc = 0;
out:
    free(d.values);
    free(line);
    fclose(f);
    return rc;
}

void tt_dist_free(tt_dist *d)
{
    free(d->values);
    *d = (tt_dist){.kind = TT_DIST_FIXED};
}

int tt_dist_parse(const char *text, tt_dist *out, char *err, size_t errlen)
{
    static const char uni[] = "uniform:", nor[] = "normal:", rep[] = "replay:";
    if (!strncmp(text, rep, sizeof rep - 1)) {
        if (!text[sizeof rep - 1]) {
            snprintf(err, errlen, "'%s': expected replay:FILE", text);
            return -1;
        }
        return parse_replay(text + sizeof rep - 1, out, err, errlen);
    }
    bool normal = !strncmp(text, nor, sizeof nor - 1);
    if (normal || !strncmp(text, uni, sizeof uni - 1)) {
        const char *a = text + (normal ? sizeof nor : sizeof uni) - 1;
        const char *colon = strchr(a, ':');
        if (!colon) {
            snprintf(err, errlen, normal ? "'%s': expected normal:MEAN:SD" : "'%s': expected uniform:A:B", text);
            return -1;
        }
        tt_dist d = {.kind = normal ? TT_DIST_NORMAL : TT_DIST_UNIFORM};
        if (parse_ms(a, (size_t)(colon - a), &d.a_ns, err, errlen)) return -1;
        if (parse_ms(colon + 1, strlen(colon + 1), &d.b_ns, err, errlen)) return -1;
        if (!normal && d.b_ns < d.a_ns) {
            snprintf(err, errlen, "'%s': A must not exceed B", text);
            return -1;
        }
        *out = d;
        return 0;
    }
    tt_dist d = {.kind = TT_DIST_FIXED};
    if (parse_ms(text, strlen(text), &d.a_ns, err, errlen)) return -1;
    d.b_ns = d.a_ns;
    *out = d;
    return 0;
}

/* One standard normal draw (Box-Muller, the cosine half). */
static double standard_normal(tt_prng *r)
{
    double u1 = 1.0 - tt_prng_unit(r); /* (0, 1]: log is finite */
    double u2 = tt_prng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static uint64_t normal_draw(const tt_dist *d, tt_prng *r)
{
    double mean = (double)d->a_ns, sd = (double)d->b_ns;
    for (int tries = 0; tries < 1000; tries++) {
        double v = mean + sd * standard_normal(r);
        if (v < 0) continue;
        if (v > MAX_DELAY_MS * 1e6) v = MAX_DELAY_MS * 1e6;
        return (uint64_t)llround(v);
    }
    return 0; /* unreachable in practice: the mean is >= 0, so a draw is >= 0 half the time */
}

uint64_t tt_dist_draw(const tt_dist *d, tt_prng *r, uint64_t *cursor)
{
    switch (d->kind) {
    case TT_DIST_UNIFORM: {
        if (d->b_ns == d->a_ns) return d->a_ns;
        uint64_t span = d->b_ns - d->a_ns;
        return d->a_ns + (uint64_t)(tt_prng_unit(r) * (double)(span + 1));
    }
    case TT_DIST_NORMAL: return d->b_ns == 0 ? d->a_ns : normal_draw(d, r);
    case TT_DIST_REPLAY:
        if (!d->n_values) return 0;
        if (!cursor) return d->values[0];
        return d->values[(*cursor)++ % d->n_values];
    default: return d->a_ns;
    }
}

uint64_t tt_dist_sample(const tt_dist *d, tt_prng *r) { return tt_dist_draw(d, r, NULL); }

const char *tt_dist_format(const tt_dist *d, char *buf, size_t buflen)
{
    switch (d->kind) {
    case TT_DIST_UNIFORM:
        snprintf(buf, buflen, "uniform:%g:%gms", (double)d->a_ns / 1e6, (double)d->b_ns / 1e6);
        break;
    case TT_DIST_NORMAL:
        snprintf(buf, buflen, "normal:%g:%gms", (double)d->a_ns / 1e6, (double)d->b_ns / 1e6);
        break;
    case TT_DIST_REPLAY: snprintf(buf, buflen, "replay:%zu values", d->n_values); break;
    default: snprintf(buf, buflen, "%gms", (double)d->a_ns / 1e6); break;
    }
    return buf;
}

size_t tt_split_cuts(const uint32_t *offsets, size_t n_offsets, size_t frame_len, uint32_t *cuts)
{
    size_t n = 0;
    for (size_t i = 0; i < n_offsets; i++) {
        uint32_t o = offsets[i];
        if (o == 0 || o >= frame_len) continue;
        size_t at = n;
        while (at > 0 && cuts[at - 1] > o) at--;
        if (at > 0 && cuts[at - 1] == o) continue;
        memmove(cuts + at + 1, cuts + at, (n - at) * sizeof *cuts);
        cuts[at] = o;
        n++;
    }
    return n;
}

bool tt_coalesce_due(uint32_t n, size_t held, bool last_event) { return last_event || n <= 1 || held >= n; }

static void heap_place(tt_heap *h, size_t i, tt_heap_item *it)
{
    h->items[i] = it;
    it->slot = i;
}

static void sift_up(tt_heap *h, size_t i)
{
    tt_heap_item *it = h->items[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->items[parent]->due_ns <= it->due_ns) break;
        heap_place(h, i, h->items[parent]);
        i = parent;
    }
    heap_place(h, i, it);
}

static void sift_down(tt_heap *h, size_t i)
{
    tt_heap_item *it = h->items[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n) break;
        if (child + 1 < h->n && h->items[child + 1]->due_ns < h->items[child]->due_ns) child++;
        if (h->items[child]->due_ns >= it->due_ns) break;
        heap_place(h, i, h->items[child]);
        i = child;
    }
    heap_place(h, i, it);
}

int tt_heap_set(tt_heap *h, tt_heap_item *item, uint64_t due_ns)
{
    if (item->slot != SIZE_MAX && item->slot < h->n && h->items[item->slot] == item) {
        uint64_t old = item->due_ns;
        item->due_ns = due_ns;
        if (due_ns < old) sift_up(h, item->slot);
        else sift_down(h, item->slot);
        return 0;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        tt_heap_item **p = realloc(h->items, cap * sizeof *p);
        if (!p) return -1;
        h->items = p;
        h->cap = cap;
    }
    item->due_ns = due_ns;
    h->items[h->n] = item;
    item->slot = h->n++;
    sift_up(h, item->slot);
    return 0;
}

void tt_heap_remove(tt_heap *h, tt_heap_item *item)
{
    size_t i = item->slot;
    if (i == SIZE_MAX || i >= h->n || h->items[i] != item) return;
    item->slot = SIZE_MAX;
    h->n--;
    if (i == h->n) return;
    tt_heap_item *last = h->items[h->n];
    heap_place(h, i, last);
    sift_up(h, i);
    sift_down(h, last->slot);
}

tt_heap_item *tt_heap_top(const tt_heap *h) { return h->n ? h->items[0] : NULL; }

void tt_heap_free(tt_heap *h)
{
    free(h->items);
    *h = (tt_heap){0};
}
