/* seg_lane.h - TCP segments handed from the thread that reads a capture to
 * a thread that reassembles some of its connections (analyze --jobs): the
 * reader parses every packet once and deals each segment to the lane of
 * the thread that owns its connection; that thread feeds them, in the
 * reader's order, to its own reassembler.
 *
 * One producer and one consumer per lane. Segments travel in batches (one
 * lock per batch, not per segment); a lane holds a bounded number of
 * batches, and the producer waits when the consumer is that far behind.
 * The payload pointers must stay valid until the consumer is done (the
 * reader's mapping of the file outlives the threads). */
#ifndef TT_SEG_LANE_H
#define TT_SEG_LANE_H

#include "stream/tcp_reasm.h"

typedef struct tt_seg_lane tt_seg_lane;

/* A new, open lane; NULL when out of memory. */
tt_seg_lane *tt_seg_lane_new(void);

/* Producer: queue a copy of seg (may wait for the consumer). */
void tt_seg_lane_push(tt_seg_lane *l, const tt_tcp_segment *seg);

/* Producer: hand over what is queued and close the lane; the consumer
 * finishes its reassembler at end_ns (the capture's last instant). */
void tt_seg_lane_close(tt_seg_lane *l, uint64_t end_ns);

/* Consumer: feed every segment of the lane to r in order until it is
 * closed, then tt_reasm_finish(r, end_ns). */
void tt_seg_lane_drain(tt_seg_lane *l, tt_reasm *r);

/* Free a lane whose consumer has returned (or never started). */
void tt_seg_lane_free(tt_seg_lane *l);

#endif
