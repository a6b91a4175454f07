/* Fuzz the pipeline above reassembly: the input is a script of chunks
 * (direction, kind, length, bytes) for up to two connections, fed to the
 * connection tracker; then metrics for every filed request. Must never
 * crash, leak or read out of bounds; every metric identity must hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "timeline/conn_tracker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_tracker *t = tt_tracker_new(&(tt_tracker_options){.keep_text = size & 1});
    tt_conn_info conns[2] = {{.conn_id = 1}, {.conn_id = 2}};
    uint64_t off[2][2] = {{0}}, ns = 1000;
    bool released[2] = {false, false};
    size_t i = 0;
    while (i + 2 <= size) {
        uint8_t op = data[i], len = data[i + 1];
        i += 2;
        int c = op & 1, dir = (op >> 1) & 1, kind = (op >> 2) % 6;
        if (released[c]) continue;
        size_t n = len;
        if (kind == TT_CHUNK_DATA && n > size - i) n = size - i;
        tt_chunk ch = {.conn = &conns[c], .dir = (tt_direction)dir, .kind = (tt_chunk_kind)kind,
                       .mono_ns = ns, .offset = off[c][dir], .data = kind == TT_CHUNK_DATA ? data + i : NULL,
                       .len = kind == TT_CHUNK_DATA || kind == TT_CHUNK_GAP ? n : 0};
        ns += op >> 5;
        if (kind == TT_CHUNK_DATA) i += n;
        off[c][dir] += ch.len;
        tt_tracker_chunk(t, &ch);
        if (kind == TT_CHUNK_RELEASE) released[c] = true;
    }
    for (int c = 0; c < 2; c++) {
        if (released[c]) continue;
        tt_chunk ch = {.conn = &conns[c], .kind = TT_CHUNK_RELEASE, .mono_ns = ns};
        tt_tracker_chunk(t, &ch);
    }
    tt_tracker_sort(t);
    size_t n;
    tt_request *reqs = tt_tracker_requests(t, &n);
    for (size_t k = 0; k < n; k++) {
        tt_req_metrics m;
        tt_req_metrics_compute(&reqs[k], &m);
        if (m.has_e2el) {
            int64_t sum = 0;
            for (uint32_t j = 0; j < m.n_itl; j++) sum += m.itl_ns[j];
            if (sum != m.e2el_ns - m.ttft_ns) __builtin_trap();
        }
        tt_req_metrics_free(&m);
    }
    tt_tracker_free(t);
    return 0;
}
