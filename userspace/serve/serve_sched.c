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

int tt_dist_parse(const char *text, tt_dist *out, char *err, size_t errlen)
{
    static const char uni[] = "uniform:";
    if (!strncmp(text, uni, sizeof uni - 1)) {
        const char *a = text + sizeof uni - 1;
        const char *colon = strchr(a, ':');
        if (!colon) {
            snprintf(err, errlen, "'%s': expected uniform:A:B", text);
            return -1;
        }
        tt_dist d = {.kind = TT_DIST_UNIFORM};
        if (parse_ms(a, (size_t)(colon - a), &d.a_ns, err, errlen)) return -1;
        if (parse_ms(colon + 1, strlen(colon + 1), &d.b_ns, err, errlen)) return -1;
        if (d.b_ns < d.a_ns) {
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

uint64_t tt_dist_sample(const tt_dist *d, tt_prng *r)
{
    if (d->kind == TT_DIST_FIXED || d->b_ns == d->a_ns) return d->a_ns;
    uint64_t span = d->b_ns - d->a_ns;
    return d->a_ns + (uint64_t)(tt_prng_unit(r) * (double)(span + 1));
}

const char *tt_dist_format(const tt_dist *d, char *buf, size_t buflen)
{
    if (d->kind == TT_DIST_FIXED)
        snprintf(buf, buflen, "%gms", (double)d->a_ns / 1e6);
    else
        snprintf(buf, buflen, "uniform:%g:%gms", (double)d->a_ns / 1e6, (double)d->b_ns / 1e6);
    return buf;
}

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
