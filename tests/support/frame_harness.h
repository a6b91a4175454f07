/* frame_harness.h - the shared test harness for the body framings (SSE,
 * NDJSON): a trace line per callback, golden files run whole, split at every
 * byte, byte by byte and (small inputs) split in three everywhere, each
 * piece from a guard-page copy; chunk ordinals and instants checked against
 * the split that produced them. Feed i carries instant (i+1)*NS_PER_FEED. */
#ifndef TT_FRAME_HARNESS_H
#define TT_FRAME_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "golden.h"
#include "proto/framer.h"

#define NS_PER_FEED 1000u
#define FINISH_NS 999999u

/* One run: the feeds it used, so that chunk-dependent fields can be checked. */
typedef struct run_ctx {
    tt_strbuf trace;
    const size_t *seg_start; /* body offset where feed i starts; n_seg + 1 entries */
    size_t n_seg;
    int chunk_errors;
    /* last event seen, for the dedicated tests */
    tt_event_frame events[64];
    size_t n_events;
} run_ctx;

/* Callbacks that write the trace into a run_ctx (the ud) and, when
 * seg_start is set, check each event's chunk ordinals and instants. */
extern const tt_frame_callbacks tt_harness_callbacks;

/* Every .golden file under dir (at least min_files): whole, split at every
 * byte, byte by byte, and split in three when short. Fails the cmocka test
 * on any difference. */
void tt_harness_golden_suite(tt_framing kind, const char *dir, size_t min_files);

/* Feed NUL-terminated pieces in order from guard copies, body offsets
 * continuing from *off; piece i at instant (i+1)*NS_PER_FEED. */
void tt_harness_feed_pieces(tt_framer *p, const char *const *pieces, size_t n, uint64_t *off);

/* Take the trace built so far (caller frees); the run's buffer is reset. */
char *tt_harness_trace(run_ctx *c);

#endif
