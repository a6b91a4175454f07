/* ready_bridge.h - the kernel's ready instants (TT_CHUNK_READY, from the
 * eBPF source) put on the connections of another source that saw the same
 * sockets from inside the process: `tokentap run`'s probe, which reads the
 * client's bytes where libc returns them but cannot see when the kernel
 * made them readable.
 *
 * The two sources number their connections independently; a connection is
 * the same one when its client and server endpoints are. Both follow it
 * from connect(), so their stream offsets agree. The bridge learns the
 * target source's connections from its chunks (forgetting each at its
 * RELEASE, when its tt_conn_info stops being valid) and forwards each READY
 * chunk of the eBPF source to the target with the target's connection.
 * A mark of a connection the target does not know yet is held (the probe's
 * collector finds a new process's ring at its next look, up to 20 ms
 * later, and the kernel's mark of the first response bytes can come
 * first): forwarded once the target shows that connection, if it does
 * within a second, and was first seen at most 100 ms after the mark (else
 * the mark was an earlier connection's on a 4-tuple used again). Marks of
 * a connection it does not know any more, or never will, are dropped at
 * last, counted: their bytes' ready instants stay unknown. */
#ifndef TT_READY_BRIDGE_H
#define TT_READY_BRIDGE_H

#include <stdint.h>

#include "core/tt_types.h"

typedef struct tt_ready_bridge tt_ready_bridge;

/* Marks go to fn(ctx, chunk), fn being the target vantage's consumer. NULL
 * when out of memory. */
tt_ready_bridge *tt_ready_bridge_new(tt_chunk_fn fn, void *ctx);

/* A chunk of the target source, seen before it is consumed: its connection
 * is learned (RELEASE: forgotten). Nothing is forwarded. */
void tt_ready_bridge_learn(tt_ready_bridge *b, const tt_chunk *c);

/* A tt_chunk_fn for the eBPF source (ctx: the bridge): READY chunks of a
 * known connection are forwarded; everything else is ignored. */
void tt_ready_bridge_chunk(void *ctx, const tt_chunk *c);

/* Forward the held marks whose connection the target now knows (a
 * connection was learned since the last call: else nothing to do). Call
 * after the target consumed the chunk learned from, so that a mark never
 * reaches it before its connection's first chunk. */
void tt_ready_bridge_release_held(tt_ready_bridge *b);

/* Marks forwarded, and marks dropped (or still held) for want of a connection. */
void tt_ready_bridge_counts(const tt_ready_bridge *b, uint64_t *forwarded, uint64_t *dropped);

void tt_ready_bridge_free(tt_ready_bridge *b);

#endif
