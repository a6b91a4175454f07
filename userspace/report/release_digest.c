#include "report/release_digest.h"

#include <stdlib.h>
#include <string.h>

void tt_release_digest_init(tt_release_digest *d)
{
    memset(d, 0, sizeof *d);
    tt_quantile_init(&d->itl);
}

void tt_release_digest_free(tt_release_digest *d)
{
    tt_quantile_free(&d->itl);
    free(d->findings);
    free(d->slot_first);
    memset(d, 0, sizeof *d);
}

/* Room for n more findings and one more slot. */
static int reserve(tt_release_digest *d, size_t n)
{
    if (d->n_findings + n > d->cap_findings) {
        size_t cap = d->cap_findings ? d->cap_findings : 64;
        while (cap < d->n_findings + n) cap *= 2;
        tt_lint_finding *f = realloc(d->findings, cap * sizeof *f);
        if (!f) return -1;
        d->findings = f;
        d->cap_findings = cap;
    }
    if (d->n_slots == d->cap_slots) {
        size_t cap = d->cap_slots ? d->cap_slots * 2 : 256;
        size_t *s = realloc(d->slot_first, cap * sizeof *s);
        if (!s) return -1;
        d->slot_first = s;
        d->cap_slots = cap;
    }
    return 0;
}

void tt_release_on_file(void *ctx, tt_request *r)
{
    tt_release_digest *d = ctx;
    if (d->failed) return;
    tt_req_metrics m;
    tt_lint_result lint;
    if (tt_req_metrics_compute(r, &m) < 0) {
        d->failed = true;
        return;
    }
    if (tt_lint_run(r, 1, &lint) < 0 || reserve(d, lint.n) < 0) {
        d->failed = true;
    } else {
        for (uint32_t k = 0; k < m.n_itl && !d->failed; k++)
            if (tt_quantile_add(&d->itl, m.itl_ns[k]) < 0) d->failed = true;
    }
    if (!d->failed) {
        if (lint.n) memcpy(d->findings + d->n_findings, lint.findings, lint.n * sizeof *lint.findings);
        d->slot_first[d->n_slots] = d->n_findings;
        d->n_findings += lint.n;
        r->consumer_tag = d->n_slots++;
        tt_request_release_events(r);
    }
    tt_lint_result_free(&lint);
    tt_req_metrics_free(&m);
}

int tt_release_digest_absorb(tt_release_digest *dst, tt_release_digest *src, tt_request *src_reqs, size_t n)
{
    if (src->failed) dst->failed = true;
    if (tt_quantile_merge(&dst->itl, &src->itl) < 0) return -1;
    size_t base = dst->n_slots;
    for (size_t k = 0; k < src->n_slots; k++) {
        size_t end = k + 1 < src->n_slots ? src->slot_first[k + 1] : src->n_findings;
        size_t cnt = end - src->slot_first[k];
        if (reserve(dst, cnt) < 0) return -1;
        if (cnt) memcpy(dst->findings + dst->n_findings, src->findings + src->slot_first[k], cnt * sizeof *dst->findings);
        dst->slot_first[dst->n_slots++] = dst->n_findings;
        dst->n_findings += cnt;
    }
    for (size_t i = 0; i < n; i++)
        if (src_reqs[i].events_released) src_reqs[i].consumer_tag += base;
    tt_release_digest_free(src);
    tt_release_digest_init(src);
    return 0;
}
