/* chunk_script.h - the chunk script the tracker-level fuzzers share: the
 * input is read as records (op byte: connection bit, direction bit, kind
 * (op >> 2) % 7, instant step op >> 5; length byte; then, for DATA, that
 * many bytes; a READY mark covers the length byte's bytes from up to 32
 * before the direction's offset) for up to two connections, fed to the tracker in order with
 * contiguous offsets, so split and coalesced events, gaps, FIN/RST/END and
 * releases all occur; every connection not released by the script is
 * released at the end. The second connection's start counts as not seen
 * (orientation guessed: HTTP/2 may be joined mid-stream). Header-only,
 * for harnesses. */
#ifndef TT_FUZZ_CHUNK_SCRIPT_H
#define TT_FUZZ_CHUNK_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timeline/conn_tracker.h"

static inline void tt_fuzz_feed_chunk_script(tt_tracker *t, const uint8_t *data, size_t size)
{
    tt_conn_info conns[2] = {{.conn_id = 1}, {.conn_id = 2, .orientation_guessed = true}};
    uint64_t off[2][2] = {{0}}, ns = 1000;
    bool released[2] = {false, false};
    size_t i = 0;
    while (i + 2 <= size) {
        uint8_t op = data[i], len = data[i + 1];
        i += 2;
        int c = op & 1, dir = (op >> 1) & 1, kind = (op >> 2) % 7;
        if (released[c]) continue;
        size_t n = len;
        if (kind == TT_CHUNK_DATA && n > size - i) n = size - i;
        tt_chunk ch = {.conn = &conns[c], .dir = (tt_direction)dir, .kind = (tt_chunk_kind)kind,
                       .mono_ns = ns, .offset = off[c][dir], .data = kind == TT_CHUNK_DATA ? data + i : NULL,
                       .len = kind == TT_CHUNK_DATA || kind == TT_CHUNK_GAP ? n : 0};
        if (kind == TT_CHUNK_READY) {
            uint64_t back = len & 31;
            ch.offset = off[c][dir] > back ? off[c][dir] - back : 0;
            ch.len = n;
        }
        ns += op >> 5;
        if (kind == TT_CHUNK_DATA) i += n;
        if (kind != TT_CHUNK_READY) off[c][dir] += ch.len;
        tt_tracker_chunk(t, &ch);
        if (kind == TT_CHUNK_RELEASE) released[c] = true;
    }
    for (int c = 0; c < 2; c++) {
        if (released[c]) continue;
        tt_chunk ch = {.conn = &conns[c], .kind = TT_CHUNK_RELEASE, .mono_ns = ns};
        tt_tracker_chunk(t, &ch);
    }
}

#endif
