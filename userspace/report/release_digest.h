/* release_digest.h - what a report needs of each request's events, taken
 * as the request is filed so that its events can be let go at once: its
 * ITLs pooled into one tt_quantile, its lint findings, and for --json its
 * object of the document, spooled to a temporary file. With it the text
 * report and the JSON document of a capture hold the events of the requests
 * in flight only, not of the whole capture (docs/performance.md).
 *
 * Give tt_release_on_file and a digest as a tracker's on_file hook; then
 * tt_analysis_fill_released builds the same summary and findings as
 * tt_analysis_fill would have with every event kept. */
#ifndef TT_RELEASE_DIGEST_H
#define TT_RELEASE_DIGEST_H

#include "lint/lint.h"
#include "metrics/quantile.h"
#include "report/report.h"

/* What was kept of one released request. */
typedef struct tt_release_slot {
    size_t first_finding;       /* its findings: first_finding .. the next slot's (or n_findings) */
    uint32_t spool;             /* JSON: the spool holding its object, */
    uint64_t json_off, json_len; /* and where */
} tt_release_slot;

#define TT_RELEASE_MAX_SPOOLS 64

typedef struct tt_release_digest {
    tt_quantile itl;            /* the ITLs of the released requests */
    tt_lint_finding *findings;  /* their findings, request by request; a released request's
                                   consumer_tag is its slot */
    size_t n_findings, cap_findings;
    tt_release_slot *slots;
    size_t n_slots, cap_slots;
    /* JSON (tt_release_digest_spool_json): each released request's object
     * of the document, written to a temporary file as the request is filed */
    FILE *spools[TT_RELEASE_MAX_SPOOLS]; /* owned; [0] this digest's own, more after an absorb */
    size_t n_spools;
    tt_vantage vantage;         /* the objects' vantage block */
    bool with_text;             /* their "text" */
    bool failed;                /* out of memory at some point: the digest is incomplete */
    bool spool_broken;          /* the spool could not be written: requests filed since keep their events */
    bool read_failed;           /* a spooled object could not be read back into the document */
} tt_release_digest;

void tt_release_digest_init(tt_release_digest *d);
void tt_release_digest_free(tt_release_digest *d);

/* Also keep each released request's object of the JSON document
 * (tt_report_json) in a temporary file, for the vantage and text choice
 * given. Returns 0, or -1 when no temporary file could be made. */
int tt_release_digest_spool_json(tt_release_digest *d, tt_vantage vantage, bool with_text);

/* Write the JSON object of the released request of slot k into w, as
 * tt_report_json would have written it there. Returns 0, or -1 with
 * d->read_failed set when the spool could not be read back. */
int tt_release_digest_copy_json(tt_release_digest *d, size_t k, tt_jw *w);

/* The tracker's on_file hook (ctx: a tt_release_digest): takes r's ITLs and
 * lint findings (and JSON object) into the digest, tags r with its slot and
 * releases its events, text and body. Out of memory: r keeps its events,
 * d->failed set. The spool not written: r and later requests keep theirs. */
void tt_release_on_file(void *ctx, tt_request *r);

/* What tt_release_on_file does, with r's metrics already computed (m, which
 * stays the caller's): for a consumer that takes each filed request later
 * than its filing (watch, once per poll). A request already released is
 * left as it is. */
void tt_release_take(tt_release_digest *d, tt_request *r, const tt_req_metrics *m);

/* Move src's slots (and spools) into dst, renumbering the consumer_tag of the released
 * requests among src_reqs[0..n) (the requests of src's tracker, before they
 * move to dst's tracker). src is emptied. Returns 0, or -1 when out of memory. */
int tt_release_digest_absorb(tt_release_digest *dst, tt_release_digest *src, tt_request *src_reqs, size_t n);

/* tt_analysis_fill for a tracker whose on_file hook filled d (NULL: as
 * tt_analysis_fill). Returns 0, or -1 when out of memory or d failed. */
int tt_analysis_fill_released(tt_analysis *a, tt_tracker *t, const double *pct, size_t n_pct,
                              tt_release_digest *d);

#endif
