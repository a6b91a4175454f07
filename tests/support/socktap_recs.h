/* socktap_recs.h - socktap records (bpf/socktap.h) as the kernel side
 * writes them, and the chunks a reader makes of them collected, for the
 * tests of source/bpf_source.c without the kernel. */
#ifndef TT_SOCKTAP_RECS_H
#define TT_SOCKTAP_RECS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/tcp_reasm.h"

/* One chunk as collected. */
typedef struct seen {
    tt_vantage vantage;
    tt_direction dir;
    tt_chunk_kind kind;
    uint64_t conn_id, mono_ns, offset;
    size_t len;
    char data[64];
    uint16_t client_port, server_port;
    bool guessed;
    bool seq_known;    /* the connection's, for this chunk's direction */
    uint32_t seq_base;
} seen;

typedef struct log_ctx {
    seen items[64];
    size_t n;
} log_ctx;

/* A chunk sink (ctx: a log_ctx) keeping up to 64 chunks. */
void collect(void *ctx, const tt_chunk *ch);

/* A data record for a socket of local port 8000, remote 40000, on fd:
 * `data` copied, total the call's bytes (0: data's), piece_off its place
 * in them, flags TT_SOCKTAP_F_*, lost bytes lost before it. Returns its size. */
size_t socktap_rec(uint8_t *buf, uint8_t dir, int32_t fd, uint64_t sock, uint64_t ns, const char *data,
                   uint32_t total, uint32_t piece_off, uint8_t flags, uint64_t lost);

/* A record of kind (connect, accept, close, ...) and no data, on socktap_rec's socket. */
size_t socktap_marker(uint8_t *buf, uint8_t kind, int32_t fd, uint64_t sock, uint64_t ns);

#endif
