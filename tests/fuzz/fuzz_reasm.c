/* fuzz_reasm - the input is a script of TCP segments over four 4-tuples
 * (one IPv6); the reassembler's chunks must keep the chunk contract
 * (chunk_check.h) whatever the order, overlap, flags or sequence numbers.
 *
 * Byte 0: limits (hold limit, connection limit); byte 1: ISNs near 2^32 or
 * not. Then 6-byte records:
 *   [0] bit0 direction, bits1-2 tuple, bits3-7 TCP flags (FIN SYN RST PSH ACK)
 *   [1..2] signed sequence delta from the direction's cursor (little endian)
 *   [3] captured payload length
 *   [4] bits0-3 missing bytes / 7, bits4-6 instant step, bit7 step backwards
 *   [5] signed ack delta from the peer's cursor
 * Payload bytes come from a fixed pattern indexed by sequence number, so a
 * retransmission carries the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_check.h"
#include "stream/tcp_reasm.h"

static void make_endpoints(unsigned tuple, tt_endpoint *client, tt_endpoint *server)
{
    memset(client, 0, sizeof *client);
    memset(server, 0, sizeof *server);
    if (tuple == 3) {
        client->family = server->family = 6;
        client->addr[0] = server->addr[0] = 0xfd;
        client->addr[15] = 1;
        server->addr[15] = 2;
    } else {
        client->family = server->family = 4;
        client->addr[0] = server->addr[0] = 10;
        client->addr[3] = 1;
        server->addr[3] = 2;
    }
    client->port = (uint16_t)(40000 + tuple);
    server->port = tuple == 2 ? 40002 : 8000; /* tuple 2: equal ports */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    static uint8_t pattern[512];
    if (!pattern[1])
        for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (uint8_t)("GET HTTP/1.1 data: x\n"[i % 21] + i / 21);

    tt_reasm_limits lim = {.max_held_bytes_per_dir = 1 + (size_t)(data[0] & 0x3f) * 16,
                           .max_connections = 1 + (size_t)(data[0] >> 6)};
    uint32_t base = (data[1] & 1) ? 0xffffff00u : 1000u;
    chunk_check cc = {0};
    tt_reasm *r = tt_reasm_new(&lim, TT_VANTAGE_WIRE, chunk_check_fn, &cc);
    if (!r) return 0;

    uint32_t cursor[4][2];
    for (unsigned t = 0; t < 4; t++)
        for (unsigned d = 0; d < 2; d++) cursor[t][d] = base + t * 7919u + d * 100000u;
    uint64_t ts = 1000;
    for (size_t i = 2; i + 6 <= size; i += 6) {
        const uint8_t *rec = data + i;
        unsigned dir = rec[0] & 1, tuple = (rec[0] >> 1) & 3;
        tt_endpoint client, server;
        make_endpoints(tuple, &client, &server);
        int16_t delta = (int16_t)(uint16_t)(rec[1] | rec[2] << 8);
        size_t len = rec[3];
        uint64_t step = (rec[4] >> 4) & 7;
        if (rec[4] & 0x80) ts = ts > step * 10 ? ts - step * 10 : 0;
        else ts += step;

        tt_tcp_segment seg;
        memset(&seg, 0, sizeof seg);
        seg.src = dir ? server : client;
        seg.dst = dir ? client : server;
        seg.flags = rec[0] >> 3;
        seg.seq = cursor[tuple][dir] + (uint32_t)(int32_t)delta;
        seg.ack = cursor[tuple][!dir] + (uint32_t)(int32_t)(int8_t)rec[5];
        seg.missing_len = (size_t)(rec[4] & 0x0f) * 7;
        seg.ts_ns = ts;
        uint8_t *payload = len ? malloc(len) : NULL;
        if (payload) memcpy(payload, pattern + (seg.seq & 255), len);
        seg.payload = payload;
        seg.payload_len = payload ? len : 0;
        tt_reasm_segment(r, &seg);
        free(payload);
        if (delta >= 0) cursor[tuple][dir] = seg.seq + (uint32_t)(len + seg.missing_len);
    }
    tt_reasm_finish(r, ts);
    chunk_check_done(&cc);
    tt_reasm_free(r);
    return 0;
}
