/* tcp_reasm.h - TCP reassembly: segments in capture order in, ordered
 * per-direction chunks (tt_types.h) out.
 *
 * Per connection two half-streams with wrap-safe sequence arithmetic;
 * out-of-order segments are held sorted until the hole fills; retransmitted
 * and overlapping bytes are delivered once (first copy wins). A hole that
 * never fills (lost bytes, or the per-flow hold limit reached) is delivered
 * as a TT_CHUNK_GAP. A capture that starts mid-connection (no SYN) is
 * followed from the first segment seen in each direction, with the
 * client/server orientation inferred (an HTTP request line or the higher,
 * ephemeral port marks the client). All state lives in the tt_reasm. */
#ifndef TT_TCP_REASM_H
#define TT_TCP_REASM_H

#include "../core/tt_types.h"

typedef struct tt_tcp_segment {
    tt_endpoint src, dst;
    uint32_t seq, ack;
    uint8_t flags;            /* TCP flag bits: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10 */
    const uint8_t *payload;   /* captured payload bytes */
    size_t payload_len;       /* captured payload bytes present */
    size_t missing_len;       /* payload bytes on the wire but not captured (snaplen) */
    uint64_t ts_ns;           /* instant the packet was seen */
} tt_tcp_segment;

typedef struct tt_reasm_limits {
    size_t max_held_bytes_per_dir;   /* out-of-order bytes held per direction before a gap is declared (default 4 MiB) */
    size_t max_connections;          /* live connections before the oldest idle one is flushed (default 65536) */
} tt_reasm_limits;

typedef struct tt_reasm_stats {
    uint64_t segments, connections, retransmitted_bytes, overlap_bytes, gap_bytes, gaps;
    uint64_t out_of_order_segments, flushed_for_limit;
} tt_reasm_stats;

typedef struct tt_reasm tt_reasm;

/* limits may be NULL for defaults. Chunks are tagged with `vantage`. */
tt_reasm *tt_reasm_new(const tt_reasm_limits *limits, tt_vantage vantage, tt_chunk_fn emit, void *ctx);

/* Take one segment; may emit chunks synchronously. */
void tt_reasm_segment(tt_reasm *r, const tt_tcp_segment *seg);

/* The source ended at end_ns: flush held data (holes become gaps), emit
 * TT_CHUNK_END for open directions and TT_CHUNK_RELEASE for every connection. */
void tt_reasm_finish(tt_reasm *r, uint64_t end_ns);

const tt_reasm_stats *tt_reasm_get_stats(const tt_reasm *r);
void tt_reasm_free(tt_reasm *r);

#endif
