/* Fuzz lint over whatever the tracker files: the input is a script of
 * chunks (op byte: connection, direction, kind, instant step; length byte;
 * bytes) for up to two connections, so split and coalesced events, gaps and
 * resets all occur. The tracker keeps bodies; every finding is checked
 * (count >= 1, a known id, an excerpt inside the kept body) and written in
 * both forms. Must never crash, leak or read out of bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint/lint.h"
#include "chunk_script.h"
#include "timeline/conn_tracker.h"

static void check(const tt_lint_result *res, const tt_request *reqs, size_t n)
{
    uint32_t by_severity = 0;
    for (int s = TT_LINT_INFO; s <= TT_LINT_ERROR; s++) by_severity += res->by_severity[s];
    if (by_severity != res->n) __builtin_trap();
    for (size_t i = 0; i < res->n; i++) {
        const tt_lint_finding *f = &res->findings[i];
        if (f->request >= n || f->count == 0 || !tt_lint_entry_of(f->id)) __builtin_trap();
        if (f->event >= 0 && (uint32_t)f->event >= reqs[f->request].n_events) __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_tracker *t = tt_tracker_new(&(tt_tracker_options){.keep_body = true, .keep_text = size & 1});
    tt_fuzz_feed_chunk_script(t, data, size);
    tt_tracker_sort(t);
    size_t n;
    tt_request *reqs = tt_tracker_requests(t, &n);
    tt_lint_result res;
    if (tt_lint_run(reqs, n, &res) == 0) check(&res, reqs, n);
    FILE *out = fopen("/dev/null", "w");
    if (out) {
        tt_lint_view v = {.reqs = reqs, .with_text = size & 2, .detailed = true, .vantage = "wire"};
        tt_lint_write_text(out, &res, &v);
        tt_jw w;
        tt_jw_init(&w, out, false);
        tt_jw_object_begin(&w, NULL);
        tt_lint_write_json(&w, "findings", &res, &v);
        tt_lint_write_json_summary(&w, "summary", &res);
        tt_jw_object_end(&w);
        tt_jw_end(&w);
        fclose(out);
    }
    tt_lint_result_free(&res);
    tt_tracker_free(t);
    return 0;
}
