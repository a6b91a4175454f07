/* Fuzz the pipeline above reassembly: the input is a script of chunks
 * (direction, kind, length, bytes) for up to two connections, fed to the
 * connection tracker; then metrics for every filed request. Must never
 * crash, leak or read out of bounds; every metric identity must hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "chunk_script.h"
#include "timeline/conn_tracker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_tracker *t = tt_tracker_new(&(tt_tracker_options){.keep_text = size & 1});
    tt_fuzz_feed_chunk_script(t, data, size);
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
