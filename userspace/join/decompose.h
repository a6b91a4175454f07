/* decompose.h - where the time of each request went (docs/metrics.md,
 * "Decomposition"), and where the benchmark and the wire disagree.
 *
 * A latency (TTFT, or E2EL) is split at a chain of instants, outermost
 * first:
 *
 *   reported.start  {client_tls.req_first}  client.req_first
 *   [client_wire.req_first]  wire.req_first  server.req_ready
 *   server.req_first  {server_tls.req_first  server_tls.mark}  server.mark
 *   wire.mark  [client_wire.mark]  client.ready  client.mark
 *   {client_tls.mark}  reported.mark
 *
 * where mark is the first token (TTFT) or the last token (E2EL),
 * reported.mark = reported.start + the benchmark's value, server.req_ready
 * the instant the kernel made the request's first byte readable at the
 * server's socket and client.ready the one it made the mark's last byte
 * readable at the client's. The bracketed instants are the client host's
 * wire, there only when recordings of two hosts each brought a wire
 * (`wire` is then the server host's); with one wire they are not in the
 * chain and the segment between the wires does not exist. The braced
 * instants are the TLS vantages (the plaintext the library was handed or
 * handed out), in the chain only for a request seen above TLS; their
 * socket instants (client.req_first, server.req_first, server.mark,
 * client.mark) then come from the TLS records (the socket syscall that
 * moved each one's ciphertext: docs/metrics.md) where the socket vantage
 * could not read the ciphertext. The nine (or eleven; with TLS four more)
 * segments between neighbours make seven parts (with TLS, eight):
 *
 *   send_lag     = client.req_first - reported.start
 *   uplink       = server.req_ready - client.req_first (client->wire, [wire->wire,] wire->server)
 *   server_queue = server.req_first - server.req_ready
 *   server       = server.mark - server.req_first      (server TTFT or server E2EL)
 *   downlink     = client.ready - server.mark          (server->wire, [wire->wire,] wire->client)
 *   client_queue = client.mark - client.ready
 *   client_lag   = reported.mark - client.mark       (client_tls.mark with TLS)
 *   tls          = (client.req_first - client_tls.req_first) + (server_tls.req_first - server.req_first)
 *                + (server.mark - server_tls.mark) + (client_tls.mark - client.mark)
 *                  the library's own time at both ends: encrypting, decrypting, records it held
 *
 * (with TLS, send_lag ends at client_tls.req_first and server at
 * server_tls.req_first .. server_tls.mark).
 *
 * A vantage that did not see the request drops its two instants, and a
 * ready instant that is not known (the probe, the wire, a kernel without
 * the tracepoint) drops out; the segments on either side then merge into
 * one run. Runs are measured in integer ns and always sum exactly to the
 * total. */
#ifndef TT_DECOMPOSE_H
#define TT_DECOMPOSE_H

#include "join/join.h"

/* The chain's instants; segment k lies between instant k and instant k + 1. */
enum {
    TT_PT_REPORTED_START = 0,
    TT_PT_CLIENT_TLS_REQ,
    TT_PT_CLIENT_REQ,
    TT_PT_CLIENT_WIRE_REQ,
    TT_PT_WIRE_REQ,
    TT_PT_SERVER_READY,
    TT_PT_SERVER_REQ,
    TT_PT_SERVER_TLS_REQ,
    TT_PT_SERVER_TLS_MARK,
    TT_PT_SERVER_MARK,
    TT_PT_WIRE_MARK,
    TT_PT_CLIENT_WIRE_MARK,
    TT_PT_CLIENT_READY,
    TT_PT_CLIENT_MARK,
    TT_PT_CLIENT_TLS_MARK,
    TT_PT_REPORTED_MARK,
    TT_PT_COUNT
};

enum {
    TT_SEG_SEND_LAG = 0,
    TT_SEG_TLS_CLIENT_SEND, /* the client's library: plaintext handed in -> its ciphertext written */
    TT_SEG_UP_CLIENT_WIRE,  /* client -> the first wire */
    TT_SEG_UP_WIRE_WIRE,    /* the client host's wire -> the server host's (two wires only) */
    TT_SEG_UP_WIRE_SERVER,  /* the last wire -> server */
    TT_SEG_SERVER_QUEUE,
    TT_SEG_TLS_SERVER_RECV, /* the server's library: ciphertext read -> its plaintext handed out */
    TT_SEG_SERVER,
    TT_SEG_TLS_SERVER_SEND, /* the server's library: plaintext handed in -> its ciphertext written */
    TT_SEG_DOWN_SERVER_WIRE,
    TT_SEG_DOWN_WIRE_WIRE,
    TT_SEG_DOWN_WIRE_CLIENT,
    TT_SEG_CLIENT_QUEUE,
    TT_SEG_TLS_CLIENT_RECV, /* the client's library: ciphertext read -> its plaintext handed out */
    TT_SEG_CLIENT_LAG,
    TT_SEG_COUNT
};

/* The segments of a chain: with two wires every one but the TLS ones, with
 * one wire all but those and the two between the wires; a request seen
 * above TLS adds TT_SEGS_TLS. */
#define TT_SEGS_TLS                                                                                          \
    ((uint16_t)((1u << TT_SEG_TLS_CLIENT_SEND) | (1u << TT_SEG_TLS_SERVER_RECV) | (1u << TT_SEG_TLS_SERVER_SEND) | \
                (1u << TT_SEG_TLS_CLIENT_RECV)))
#define TT_SEGS_TWO_WIRES ((uint16_t)(((1u << TT_SEG_COUNT) - 1) & ~TT_SEGS_TLS))
#define TT_SEGS_ONE_WIRE \
    ((uint16_t)(TT_SEGS_TWO_WIRES & ~((1u << TT_SEG_UP_WIRE_WIRE) | (1u << TT_SEG_DOWN_WIRE_WIRE))))

typedef enum tt_part {
    TT_PART_SEND_LAG = 0,
    TT_PART_UPLINK,
    TT_PART_SERVER_QUEUE,
    TT_PART_SERVER,
    TT_PART_DOWNLINK,
    TT_PART_CLIENT_QUEUE,
    TT_PART_CLIENT_LAG,
    TT_PART_TLS, /* the TLS libraries at both ends (TT_SEGS_TLS) */
    TT_PART_COUNT
} tt_part;

/* Whose total a split explains. */
typedef enum tt_reference {
    TT_REF_NONE = 0, /* nothing to split */
    TT_REF_REPORTED, /* the benchmark's value */
    TT_REF_CLIENT,   /* the client socket's (no benchmark record) */
    TT_REF_WIRE,     /* the wire's (no client either) */
    TT_REF_SERVER,   /* the server's alone: one part (with TLS: the library's two on either side) */
    TT_REF_CLIENT_TLS, /* the client's plaintext (no benchmark record; the client above TLS) */
    TT_REF_SERVER_TLS, /* the server's plaintext alone: one part */
    TT_REF_COUNT
} tt_reference;

#define TT_DECOMP_NONE INT64_MIN /* an instant not seen */

/* One stretch between two seen instants: the segments it covers (bit k =
 * segment k) and its length. */
typedef struct tt_run {
    uint16_t segs;
    int64_t ns;
    int64_t from_ns;  /* the instant it starts, TT_DECOMP_NONE when not placed (send and client lag together) */
} tt_run;

typedef struct tt_split {
    tt_reference reference;
    int64_t total_ns;
    uint16_t chain;                   /* the chain's segments (TT_SEGS_ONE_WIRE or TT_SEGS_TWO_WIRES, | TT_SEGS_TLS) */
    uint16_t scope;                   /* segments of it the reference covers */
    uint16_t seen;                    /* bit k: chain point k was seen and used */
    bool has_part[TT_PART_COUNT];     /* the part was measured on its own */
    int64_t part_ns[TT_PART_COUNT];
    bool has_seg[TT_SEG_COUNT];       /* the segment was measured on its own */
    int64_t seg_ns[TT_SEG_COUNT];
    tt_run runs[TT_SEG_COUNT];        /* in chain order; their ns sum to total_ns */
    size_t n_runs;
} tt_split;

/* Split total_ns over the chain. points[k] is instant k or TT_DECOMP_NONE;
 * vantage instants come in pairs (req and mark both, or neither; the ready
 * points may be absent on their own). For
 * TT_REF_REPORTED, total_ns is the benchmark's value and the two reported
 * points are both given (then total_ns must equal their difference) or both
 * absent (the stretch outside the innermost seen pair becomes one run: send
 * lag and client lag together). For the other references total_ns is that
 * vantage's mark - req and only the segments between them are split.
 * s->reference is TT_REF_NONE when nothing could be split. The chain of one
 * wire: the client wire's points are ignored. */
void tt_split_compute(tt_split *s, tt_reference ref, int64_t total_ns, const int64_t points[TT_PT_COUNT]);

/* The same over the chain whose segments are chain_segs: TT_SEGS_ONE_WIRE
 * (the client wire's points are ignored, and the stretch from the client
 * to the one wire is uplink.client_to_wire) or TT_SEGS_TWO_WIRES, either
 * with TT_SEGS_TLS (without it the TLS vantages' points are ignored). */
void tt_split_compute_chain(tt_split *s, tt_reference ref, int64_t total_ns, const int64_t points[TT_PT_COUNT],
                            uint16_t chain_segs);

/* Names: "send_lag", "uplink", "server_queue", "server_ttft"|"server_e2el", "downlink",
 * "client_queue", "client_lag", "tls";
 * segments "send_lag", "uplink.client_to_wire", ...; "reported", "client", ... */
const char *tt_part_name(tt_part p, bool e2el);
const char *tt_seg_name(int seg, bool e2el);
const char *tt_reference_name(tt_reference r);
/* The JSON name of disagreement bit k (TT_DIS_*): "output-tokens", ... */
const char *tt_disagreement_name(int k);

/* The names of what run covers, in chain order, into names[]: a part it
 * covers whole by its part name, a part it covers in part by the segment
 * names. Returns how many. */
size_t tt_run_names(const tt_split *s, const tt_run *run, bool e2el, const char *names[TT_SEG_COUNT]);

/* Where the benchmark and the capture disagree about one request (bits). */
enum {
    TT_DIS_TOKENS = 1u << 0,              /* reported tokens, usage, token events differ */
    TT_DIS_TTFT_NON_TOKEN = 1u << 1,      /* the reported first token came before the first token event */
    TT_DIS_FAILED_BUT_COMPLETED = 1u << 2,/* counted failed, completed on the wire */
    TT_DIS_COMPLETED_BUT_FAILED = 1u << 3,/* counted successful, failed or cut on the wire */
    TT_DIS_TEXT_LENGTH = 1u << 4,         /* generated text length differs */
    TT_DIS_COUNT_BITS = 5
};

typedef struct tt_disagreement {
    uint32_t mask;
    tt_vantage vantage;         /* the vantage compared with */
    int64_t reported_tokens;    /* -1 when unknown */
    int64_t usage_tokens;       /* -1 when no usage */
    int64_t token_events;
    int ttft_event_kind;        /* kind of the last event before the reported first token, -1 unknown */
    int64_t ttft_early_ns;      /* how long before the first token event the benchmark stamped it */
    int64_t reported_text_len, text_bytes;
} tt_disagreement;

/* ITL at two vantages of one request, token event by token event. */
typedef struct tt_itl_split {
    bool valid;
    tt_vantage near, far;           /* near: the client (else wire, else client_tls); far: the server (else wire,
                                       else server_tls) */
    uint32_t n;                     /* gaps compared */
    int64_t *near_minus_far_ns;     /* n of them (owned) */
    uint32_t reads;                 /* reads (chunks) at `near` that completed token events */
    uint32_t shared_read_events;    /* token events completed by a read that completed another */
    uint32_t max_events_per_read;
} tt_itl_split;

typedef struct tt_request_breakdown {
    tt_split ttft, e2el;
    tt_itl_split itl;
    tt_disagreement dis;
    bool has_reported;              /* a benchmark record was matched */
    int64_t reported_start_ns;      /* on the analysis clock, TT_DECOMP_NONE when unknown */
} tt_request_breakdown;

typedef struct tt_overhead_stat {
    size_t n;
    double mean, median, p99;
} tt_overhead_stat;

typedef struct tt_breakdown {
    tt_join join;
    tt_request_breakdown *per;      /* per[i] belongs to join.reqs[i] */
    size_t n_pct;
    double pct_at[TT_MAX_PERCENTILES];
    /* over requests, each part where it was measured on its own */
    tt_overhead_stat ttft_part[TT_PART_COUNT], e2el_part[TT_PART_COUNT];
    tt_overhead_stat ttft_seg[TT_SEG_COUNT], e2el_seg[TT_SEG_COUNT];
    size_t ttft_merged, e2el_merged; /* requests where some parts could not be separated */
    tt_reference reference;         /* the reference most requests used */
    /* the benchmark's own numbers over its successful records (vllm's summary) */
    bool has_reported;
    size_t reported_ok, reported_failed;
    uint64_t reported_output_tokens;
    tt_distribution reported_ttft, reported_tpot, reported_itl, reported_e2el;
    /* ITL distortion over requests with a benchmark record and a `far` vantage:
     * the benchmark's pooled ITL against the far vantage's pooled ITL */
    tt_vantage itl_far;
    tt_distribution itl_reported_matched, itl_far_matched, itl_near_minus_far;
    uint64_t itl_token_events, itl_shared_read_events;
    size_t dis_count[TT_DIS_COUNT_BITS];
    /* several recordings on one timeline (analyze DIR DIR...): their clocks,
     * set by the caller after tt_breakdown_build; NULL for one recording */
    const struct tt_clock_set *clocks;
} tt_breakdown;

/* Join the analyses (and the benchmark's records, bench may be NULL) and
 * decompose every request. as[] and bench must outlive b. Percentiles come
 * from as[0]'s summary. Returns 0, or -1 when out of memory (b left empty).
 * Free with tt_breakdown_free. */
int tt_breakdown_build(tt_breakdown *b, const tt_analysis *const *as, size_t n, const tt_bench_result *bench,
                       const tt_join_options *opt);
void tt_breakdown_free(tt_breakdown *b);

/* Fill d from v[0..n) (sorted in place) at the percentiles pct. */
void tt_distribution_of(double *v, size_t n, const double *pct, size_t n_pct, tt_distribution *d);

#endif
