/* release_digest.h - what a report needs of each request's events, taken
 * as the request is filed so that its events can be let go at once: its
 * ITLs pooled into one tt_quantile and its lint findings. With it the text
 * report of a capture holds the events of the requests in flight only, not
 * of the whole capture (docs/performance.md).
 *
 * Give tt_release_on_file and a digest as a tracker's on_file hook; then
 * tt_analysis_fill_released builds the same summary and findings as
 * tt_analysis_fill would have with every event kept. */
#ifndef TT_RELEASE_DIGEST_H
#define TT_RELEASE_DIGEST_H

#include "lint/lint.h"
#include "metrics/quantile.h"
#include "report/report.h"

typedef struct tt_release_digest {
    tt_quantile itl;            /* the ITLs of the released requests */
    tt_lint_finding *findings;  /* their findings, request by request; a released request's
                                   consumer_tag is its slot */
    size_t n_findings, cap_findings;
    size_t *slot_first;         /* slot k's findings: slot_first[k] .. slot_first[k + 1] (or n_findings) */
    size_t n_slots, cap_slots;
    bool failed;                /* out of memory at some point: the digest is incomplete */
} tt_release_digest;

void tt_release_digest_init(tt_release_digest *d);
void tt_release_digest_free(tt_release_digest *d);

/* The tracker's on_file hook (ctx: a tt_release_digest): takes r's ITLs and
 * lint findings into the digest, tags r with its slot and releases its
 * events, text and body. Out of memory: r keeps its events, d->failed set. */
void tt_release_on_file(void *ctx, tt_request *r);

/* Move src's slots into dst, renumbering the consumer_tag of the released
 * requests among src_reqs[0..n) (the requests of src's tracker, before they
 * move to dst's tracker). src is emptied. Returns 0, or -1 when out of memory. */
int tt_release_digest_absorb(tt_release_digest *dst, tt_release_digest *src, tt_request *src_reqs, size_t n);

/* tt_analysis_fill for a tracker whose on_file hook filled d (NULL: as
 * tt_analysis_fill). Returns 0, or -1 when out of memory or d failed. */
int tt_analysis_fill_released(tt_analysis *a, tt_tracker *t, const double *pct, size_t n_pct,
                              const tt_release_digest *d);

#endif
