/* chunk_conn.h - one socket connection's events -> tt_chunk records: the
 * machinery the eBPF and probe sources share. A source embeds a
 * tt_chunk_conn in its own connection struct and a tt_chunk_sinks in its
 * own state; these functions fill the chunks, count them, call the
 * vantage's callback and keep each direction's stream offset. */
#ifndef TT_CHUNK_CONN_H
#define TT_CHUNK_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tt_types.h"

/* The callbacks chosen per vantage, and what was delivered through them. */
typedef struct tt_chunk_sinks {
    tt_chunk_fn fn[TT_VANTAGE_COUNT]; /* NULL: that vantage's chunks are counted, not delivered */
    void *ctx[TT_VANTAGE_COUNT];
    uint64_t conn_ids_given;          /* the last conn_id handed out (0: none yet) */
    uint64_t data_bytes;              /* bytes in TT_CHUNK_DATA chunks */
    uint64_t gaps, gap_bytes;         /* TT_CHUNK_GAP chunks and their missing bytes */
    uint64_t ready_marks;             /* TT_CHUNK_READY chunks */
    uint64_t vantage_gaps[TT_VANTAGE_COUNT], vantage_gap_bytes[TT_VANTAGE_COUNT];
} tt_chunk_sinks;

/* Chunks of vantage v go to fn(ctx, chunk); fn NULL: they are dropped. */
void tt_chunk_sinks_route(tt_chunk_sinks *sinks, tt_vantage v, tt_chunk_fn fn, void *ctx);

/* A new connection's conn_id: 1, 2, 3... in the order asked. */
uint64_t tt_chunk_sinks_next_conn_id(tt_chunk_sinks *sinks);

/* The part of a connection that chunks are made from. */
typedef struct tt_chunk_conn {
    tt_conn_info info;
    bool local_is_server; /* the local end answers: its chunks go to the server vantage */
    bool tls;             /* bytes seen above TLS: its chunks go to the server's or client's TLS vantage */
    uint64_t last_ns;     /* latest instant seen on the connection */
    uint64_t offset[2];   /* next stream offset per tt_direction */
    bool ended[2];        /* FIN already delivered, per tt_direction */
} tt_chunk_conn;

/* ep <- a socket address as the kernel and probe report it: 16 address
 * bytes (IPv4 in the first 4, or IPv6, where a v4-mapped one counts as
 * IPv4) and a host-order port. */
void tt_chunk_endpoint_from(tt_endpoint *ep, const uint8_t addr[16], uint16_t port, bool ipv6);

/* Sets which end is the server: local_is_server, info.client/server from
 * the local and remote endpoints, and info.orientation_guessed. */
void tt_chunk_conn_orient(tt_chunk_conn *c, const tt_endpoint *local, const tt_endpoint *remote,
                          bool local_is_server, bool guessed);

/* The vantage whose callback receives c's chunks. */
tt_vantage tt_chunk_conn_vantage(const tt_chunk_conn *c);

/* The direction c's local end sends in, and the one it receives in. */
tt_direction tt_chunk_conn_send_dir(const tt_chunk_conn *c);
tt_direction tt_chunk_conn_recv_dir(const tt_chunk_conn *c);

/* Counts one chunk of kind on dir of c in sinks, delivers it (when the
 * vantage has a callback) at the direction's current offset, then advances
 * that offset by len for DATA and GAP. data is used only for DATA. */
void tt_chunk_conn_emit(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, tt_chunk_kind kind,
                        uint64_t ns, const uint8_t *data, size_t len);

/* A READY mark (tt_types.h): bytes [from_off, end_off) of dir became
 * readable at ns, counted in sinks->ready_marks. Does not move the stream
 * offset. tt_chunk_conn_mark: the same mark, not counted (a TLS stream's
 * socket instants, bpf_tls_stream.c). */
void tt_chunk_conn_ready(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, uint64_t ns, uint64_t from_off,
                         uint64_t end_off);
void tt_chunk_conn_mark(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, uint64_t ns, uint64_t from_off,
                        uint64_t end_off);

/* FIN on dir at ns, once: nothing when dir already ended. */
void tt_chunk_conn_fin(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, uint64_t ns);

/* The connection is over: END at ns on each direction no FIN ended, then
 * RELEASE (on C2S). The caller frees the connection after this returns. */
void tt_chunk_conn_end(tt_chunk_sinks *sinks, tt_chunk_conn *c, uint64_t ns);

#endif
