#include "report/release_digest.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

void tt_release_digest_init(tt_release_digest *d)
{
    memset(d, 0, sizeof *d);
    tt_quantile_init(&d->itl);
}

void tt_release_digest_free(tt_release_digest *d)
{
    tt_quantile_free(&d->itl);
    free(d->findings);
    free(d->slots);
    for (size_t i = 0; i < d->n_spools; i++) fclose(d->spools[i]);
    memset(d, 0, sizeof *d);
}

/* An unnamed temporary file in $TMPDIR (else /tmp), open for update. */
static FILE *spool_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/tokentap-json-XXXXXX", dir && *dir ? dir : "/tmp");
    if (n < 0 || (size_t)n >= sizeof path) return NULL;
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) return NULL;
    unlink(path);
    FILE *f = fdopen(fd, "w+");
    if (!f) close(fd);
    return f;
}

int tt_release_digest_spool_json(tt_release_digest *d, tt_vantage vantage, bool with_text)
{
    if (!d->n_spools) {
        FILE *f = spool_file();
        if (!f) return -1;
        d->spools[d->n_spools++] = f;
    }
    d->vantage = vantage;
    d->with_text = with_text;
    return 0;
}

/* Room for n more findings and one more slot. */
static int reserve(tt_release_digest *d, size_t n)
{
    if (tt_grow(&d->findings, &d->cap_findings, d->n_findings + n, sizeof *d->findings, 64) < 0) return -1;
    return tt_grow(&d->slots, &d->cap_slots, d->n_slots + 1, sizeof *d->slots, 256);
}

/* r's object of the JSON document at the end of the spool, at the depth of
 * the "requests" array's items, with no comma before it (the copy adds it). */
static int spool_request(tt_release_digest *d, const tt_request *r, const tt_req_metrics *m, tt_release_slot *s)
{
    FILE *f = d->spools[0];
    off_t at = ftello(f);
    if (at < 0) return -1;
    tt_jw w;
    tt_jw_init(&w, f, true);
    w.depth = 2; /* the document's object, then its "requests" array */
    tt_report_json_request(&w, r, m, d->vantage, d->with_text);
    tt_jw_flush(&w);
    off_t end = ftello(f);
    if (end < at || fflush(f) != 0 || ferror(f)) return -1; /* on disk now, or never counted on */
    s->spool = 0;
    s->json_off = (uint64_t)at;
    s->json_len = (uint64_t)(end - at);
    return 0;
}

void tt_release_on_file(void *ctx, tt_request *r)
{
    tt_release_digest *d = ctx;
    if (d->failed || d->spool_broken) return;
    tt_req_metrics m;
    if (tt_req_metrics_compute(r, &m) < 0) {
        d->failed = true;
        return;
    }
    tt_release_take(d, r, &m);
    tt_req_metrics_free(&m);
}

void tt_release_take(tt_release_digest *d, tt_request *r, const tt_req_metrics *m)
{
    if (d->failed || d->spool_broken || r->events_released) return;
    tt_lint_result lint;
    tt_release_slot slot = {.first_finding = d->n_findings};
    if (tt_lint_run(r, 1, &lint) < 0 || reserve(d, lint.n) < 0) {
        d->failed = true;
    } else if (d->n_spools && spool_request(d, r, m, &slot) < 0) {
        d->spool_broken = true; /* (disk full): this request and the later ones keep their events */
    } else {
        for (uint32_t k = 0; k < m->n_itl && !d->failed; k++)
            if (tt_quantile_add(&d->itl, m->itl_ns[k]) < 0) d->failed = true;
    }
    if (!d->failed && !d->spool_broken) {
        if (lint.n) memcpy(d->findings + d->n_findings, lint.findings, lint.n * sizeof *lint.findings);
        d->n_findings += lint.n;
        d->slots[d->n_slots] = slot;
        r->consumer_tag = d->n_slots++;
        tt_request_release_events(r);
    }
    tt_lint_result_free(&lint);
}

/* d->read_failed set; -1. */
static int read_back_failed(tt_release_digest *d)
{
    d->read_failed = true;
    return -1;
}

int tt_release_digest_copy_json(tt_release_digest *d, size_t k, tt_jw *w)
{
    if (k >= d->n_slots || d->slots[k].spool >= d->n_spools) return read_back_failed(d);
    const tt_release_slot *s = &d->slots[k];
    FILE *f = d->spools[s->spool];
    if (fflush(f) != 0 || fseeko(f, (off_t)s->json_off, SEEK_SET) != 0) return read_back_failed(d);
    tt_jw_flush(w); /* what the writer holds goes before the copy */
    if (w->need_comma[w->depth]) putc(',', w->out);
    w->need_comma[w->depth] = true;
    char buf[65536];
    for (uint64_t left = s->json_len; left;) {
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        size_t got = fread(buf, 1, want, f);
        if (got != want) {
            fseeko(f, 0, SEEK_END);
            return read_back_failed(d);
        }
        fwrite(buf, 1, got, w->out);
        left -= got;
    }
    return fseeko(f, 0, SEEK_END) == 0 ? 0 : read_back_failed(d);
}

int tt_release_digest_absorb(tt_release_digest *dst, tt_release_digest *src, tt_request *src_reqs, size_t n)
{
    if (src->failed) dst->failed = true;
    if (tt_quantile_merge(&dst->itl, &src->itl) < 0) return -1;
    if (dst->n_spools + src->n_spools > TT_RELEASE_MAX_SPOOLS) return -1;
    size_t base = dst->n_slots, spool_base = dst->n_spools;
    for (size_t i = 0; i < src->n_spools; i++) dst->spools[dst->n_spools++] = src->spools[i];
    src->n_spools = 0;
    for (size_t k = 0; k < src->n_slots; k++) {
        size_t end = k + 1 < src->n_slots ? src->slots[k + 1].first_finding : src->n_findings;
        size_t cnt = end - src->slots[k].first_finding;
        if (reserve(dst, cnt) < 0) return -1;
        if (cnt)
            memcpy(dst->findings + dst->n_findings, src->findings + src->slots[k].first_finding,
                   cnt * sizeof *dst->findings);
        tt_release_slot s = src->slots[k];
        s.first_finding = dst->n_findings;
        s.spool += (uint32_t)spool_base;
        dst->slots[dst->n_slots++] = s;
        dst->n_findings += cnt;
    }
    for (size_t i = 0; i < n; i++)
        if (src_reqs[i].events_released) src_reqs[i].consumer_tag += base;
    tt_release_digest_free(src);
    tt_release_digest_init(src);
    return 0;
}
