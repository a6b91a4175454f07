/* tt_types.h - the vocabulary every pipeline stage shares.
 *
 * A source (pcap, eBPF, probe) turns what it sees into tt_chunk records:
 * ordered bytes of one direction of one TCP connection, each stamped with a
 * CLOCK_MONOTONIC-domain instant. Nothing downstream of a chunk knows which
 * source made it. */
#ifndef TT_TYPES_H
#define TT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tt_vantage {
    TT_VANTAGE_WIRE = 0,
    TT_VANTAGE_SERVER,
    TT_VANTAGE_CLIENT,
    /* TLS plaintext (bpf/README.md, "TLS plaintext"; the probe's, in
     * probe/): at the server's end (SSL_read returned the request, SSL_write
     * was handed the response) and at the client's. */
    TT_VANTAGE_SERVER_TLS,
    TT_VANTAGE_CLIENT_TLS,
    /* The client host's wire, when recordings of two hosts each brought a
     * wire (`analyze DIR DIR...`): WIRE is then the server host's. Never
     * a source's vantage. */
    TT_VANTAGE_CLIENT_WIRE,
    TT_VANTAGE_COUNT
} tt_vantage;

/* Direction relative to the TCP client (the side that sent SYN, or the side
 * inferred to be the client when the capture starts mid-connection). */
typedef enum tt_direction { TT_DIR_C2S = 0, TT_DIR_S2C = 1 } tt_direction;

typedef struct tt_endpoint {
    uint8_t family;   /* 4 or 6 */
    uint8_t addr[16]; /* IPv4 uses the first 4 bytes, network order */
    uint16_t port;    /* host order */
} tt_endpoint;

/* One connection instance inside one source. A 4-tuple reused after the
 * previous connection closed gets a new conn_id. The pointer a chunk carries
 * stays valid until the TT_CHUNK_RELEASE chunk for that conn_id returns. */
typedef struct tt_conn_info {
    uint64_t conn_id;
    tt_endpoint client, server;
    bool orientation_guessed; /* no SYN seen: client/server inferred */
    uint64_t first_seen_ns;
    /* The TCP sequence number of each direction's stream offset 0 (per
     * tt_direction), where the vantage knows the real one: the wire, the
     * eBPF socket records, a recording that kept them. Both ends of a
     * connection see the same numbers, so two hosts' views of it can be
     * matched (clocks/clock_bounds.h). Set once, before the first DATA
     * chunk of that direction is delivered. */
    bool seq_known[2];
    uint32_t seq_base[2];
    /* Where the source is in its input when this connection last had a
     * segment (tt_tcp_segment.order; the high bit set while the source
     * ends, tt_reasm_finish): orders what several sharded readers of one
     * capture filed back into one reader's order. 0 when not ordered. */
    uint64_t order_key;
} tt_conn_info;

typedef enum tt_chunk_kind {
    TT_CHUNK_DATA = 0, /* data[0..len) at stream offset `offset` */
    TT_CHUNK_GAP,      /* len bytes at `offset` are missing (lost, not captured) */
    TT_CHUNK_FIN,      /* this direction ended cleanly; len 0 */
    TT_CHUNK_RST,      /* the connection was reset; sent for each direction not already ended */
    TT_CHUNK_END,      /* the source ended with this direction still open */
    TT_CHUNK_RELEASE,  /* last chunk of a connection (dir is C2S); conn freed after */
    TT_CHUNK_READY     /* the kernel made bytes [offset, offset+len) of dir readable at the
                          vantage's socket at mono_ns, before the process read them (socket
                          vantages with kernel support only). A mark, not bytes: it does not
                          advance the stream, usually precedes the DATA of those bytes, and
                          marks of a direction come in increasing offset; a mark whose offset
                          does not meet the previous one's end leaves the bytes between with
                          no known instant */
} tt_chunk_kind;

typedef struct tt_chunk {
    const tt_conn_info *conn;
    tt_vantage vantage;
    tt_direction dir;
    tt_chunk_kind kind;
    uint64_t mono_ns;      /* when the bytes were seen at this vantage */
    uint64_t offset;       /* stream offset (this direction) of data[0] or of the gap */
    const uint8_t *data;   /* only for TT_CHUNK_DATA; valid during the callback */
    size_t len;            /* data bytes, or missing bytes for TT_CHUNK_GAP */
} tt_chunk;

/* Each direction ends exactly once (FIN, RST or END) before RELEASE.
 * A consumer of chunks. Called in stream order per (conn, dir); chunks of
 * different connections interleave in capture order. */
typedef void (*tt_chunk_fn)(void *ctx, const tt_chunk *chunk);

/* Exit codes of the tokentap binary (documented in docs/formats.md). */
enum {
    TT_EXIT_OK = 0,
    TT_EXIT_USAGE = 2,       /* bad command line */
    TT_EXIT_INPUT = 3,       /* input unreadable or not a capture */
    TT_EXIT_NO_HTTP = 4,     /* capture readable but held no HTTP exchange */
    TT_EXIT_DAMAGED = 5,     /* input damaged part way: the report covers what came before */
    TT_EXIT_OUTPUT = 6,      /* the output could not be written */
    TT_EXIT_INTERNAL = 70,
    TT_EXIT_FINDINGS = 1     /* lint: a finding at or above --fail-on */
};

/* Whether a and b are the same address (its family's bytes) and port.
 * Inline, with fixed-size loads: the reassembler asks it for every packet. */
static inline bool tt_endpoint_equal(const tt_endpoint *a, const tt_endpoint *b)
{
    if (a->family != b->family || a->port != b->port) return false;
    uint32_t a4, b4;
    __builtin_memcpy(&a4, a->addr, 4);
    __builtin_memcpy(&b4, b->addr, 4);
    if (a4 != b4) return false;
    if (a->family != 6) return true;
    uint32_t a12[3], b12[3];
    __builtin_memcpy(a12, a->addr + 4, 12);
    __builtin_memcpy(b12, b->addr + 4, 12);
    return a12[0] == b12[0] && a12[1] == b12[1] && a12[2] == b12[2];
}

/* Format an endpoint as "a.b.c.d:port" or "[v6]:port" into buf; returns buf. */
char *tt_endpoint_format(const tt_endpoint *ep, char *buf, size_t buflen);

#endif
