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

/* TCP flag bits as they appear in the header's flags byte. */
enum {
    TT_TCP_FIN = 0x01,
    TT_TCP_SYN = 0x02,
    TT_TCP_RST = 0x04,
    TT_TCP_PSH = 0x08,
    TT_TCP_ACK = 0x10
};

/* How a socket-vantage recording carries a readable-instant mark
 * (docs/formats.md): a TCP segment without payload whose only option is the
 * experimental option 253 (RFC 6994) with this ExID, 8 bytes: kind, length,
 * ExID, then the 32-bit count of bytes, ending at the segment's sequence
 * number, that became readable at its instant. */
#define TT_TCP_OPT_EXPERIMENT 253
#define TT_TCP_READY_EXID 0x5454 /* "TT" */
/* A sequence mark, the same option with this ExID: its 32-bit value is the
 * kernel's TCP sequence number of the byte at the segment's (synthesized)
 * sequence number, so the real numbers survive a socket-vantage recording
 * (tt_conn_info.seq_base). */
#define TT_TCP_SEQ_EXID 0x5453 /* "TS" */

typedef struct tt_tcp_segment {
    tt_endpoint src, dst;
    uint32_t seq, ack;
    uint8_t flags;            /* TCP flag bits: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10 */
    const uint8_t *payload;   /* captured payload bytes */
    size_t payload_len;       /* captured payload bytes present */
    size_t missing_len;       /* payload bytes on the wire but not captured (snaplen) */
    uint64_t ts_ns;           /* instant the packet was seen */
    /* A readable-instant mark of a socket-vantage recording (pcap_synth.h):
     * not a segment, but "the ready_len bytes ending at seq became readable
     * at ts_ns", delivered as TT_CHUNK_READY. */
    bool ready_mark;
    uint32_t ready_len;
    /* A sequence mark: the byte at seq has the kernel sequence number
     * kernel_seq. Not a segment either. */
    bool seq_mark;
    uint32_t kernel_seq;
    /* 0, or the segment's 1-based position in its input (a packet index),
     * for a reader that sees only part of the connections of a capture
     * (analyze --jobs): a connection this segment starts takes it as its
     * conn_id, and tt_conn_info.order_key follows it, so that ids and
     * order agree across readers of the same capture. */
    uint64_t order;
} tt_tcp_segment;

typedef struct tt_reasm_limits {
    size_t max_held_bytes_per_dir;   /* out-of-order bytes held per direction before a gap is declared (default 4 MiB) */
    size_t max_connections;          /* live connections before the oldest idle one is flushed (default 65536) */
} tt_reasm_limits;

typedef struct tt_reasm_stats {
    uint64_t segments, connections, retransmitted_bytes, overlap_bytes, gap_bytes, gaps;
    uint64_t ready_marks, ready_unplaced; /* marks delivered; marks of no known stream (or at the wire) */
    uint64_t out_of_order_segments, flushed_for_limit;
    /* Added: segments that started nothing and belonged to nothing (a pure
     * ACK/FIN/RST of an unknown 4-tuple, e.g. the last ACK after a close),
     * data after a direction's FIN, and segments too far ahead (> 1 GiB) of
     * the expected sequence number. */
    uint64_t ignored_segments;
    uint64_t live_connections; /* connections currently followed */
} tt_reasm_stats;

typedef struct tt_reasm tt_reasm;

/* limits may be NULL for defaults (a zero field also means its default).
 * Chunks are tagged with `vantage`. Returns NULL only when out of memory.
 *
 * Behaviour worth knowing (see tcp_reasm.c for the full story):
 * - A connection starts on a SYN (its sender is the client; a SYN-ACK marks
 *   its sender as the server), or on the first segment carrying payload of
 *   an unknown 4-tuple (orientation_guessed: a request line marks the client,
 *   "HTTP/" the server, else the higher port is the client). Payload-less
 *   segments of unknown tuples are ignored, so the last ACK after a close
 *   does not start a phantom connection.
 * - Instants never go backwards within a direction: every chunk is stamped
 *   max(its own capture instant, the last instant stamped in that
 *   direction). Held out-of-order bytes are stamped with their own capture
 *   instant under that rule, not with the instant of the segment that
 *   filled the hole. A GAP is stamped with the instant of the bytes that
 *   follow it when those were held, else with the instant that declared it.
 * - A hole becomes a GAP when the held bytes pass max_held_bytes_per_dir
 *   (or a direction holds more than 4096 separate out-of-order pieces),
 *   when the peer acknowledges bytes past the hole while data or a FIN waits
 *   behind it (the receiver has them, so they will never be resent), on RST,
 *   at eviction and at tt_reasm_finish.
 * - Bytes of a snapped segment that were not captured (missing_len) become
 *   a GAP right after the captured part.
 * - A SYN (without ACK) on a live 4-tuple with a new ISN ends the old
 *   connection (END for open directions, RELEASE) and starts a new one.
 * - Each direction ends exactly once, with FIN, RST or END, before the
 *   connection's RELEASE: a RST is sent for every direction that has not
 *   already ended with its FIN. */
tt_reasm *tt_reasm_new(const tt_reasm_limits *limits, tt_vantage vantage, tt_chunk_fn emit, void *ctx);

/* Take one segment (or readable-instant mark, seg->ready_mark: delivered
 * as TT_CHUNK_READY on a known direction of a connection, ignored at the
 * wire vantage; or sequence mark, seg->seq_mark: sets the direction's
 * tt_conn_info.seq_base, ignored at the wire, whose own sequence numbers
 * are the real ones); may emit chunks synchronously. The callback must not
 * call back into r. seg and its payload are only read during the call. */
void tt_reasm_segment(tt_reasm *r, const tt_tcp_segment *seg);

/* The source ended at end_ns: flush held data (holes become gaps), emit
 * TT_CHUNK_END for open directions and TT_CHUNK_RELEASE for every connection. */
void tt_reasm_finish(tt_reasm *r, uint64_t end_ns);

const tt_reasm_stats *tt_reasm_get_stats(const tt_reasm *r);

/* Add b's counters to a (the stats of several readers of one capture, each
 * following its share of the connections). */
void tt_reasm_stats_add(tt_reasm_stats *a, const tt_reasm_stats *b);

/* Free r and every connection it still holds, emitting nothing. */
void tt_reasm_free(tt_reasm *r);

#endif
