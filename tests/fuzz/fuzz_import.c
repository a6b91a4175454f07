/* fuzz_import.c - libFuzzer harness for the benchmark result importers.
 * The last input byte chooses the format (auto or one tool) and where the
 * input is cut; the rest is the file (so a seed file, whose last byte is a
 * newline, stays a valid file). Checks: no crash or overrun, a
 * failure leaves the result empty with a one-line reason, loading is
 * deterministic, an auto-detected load equals the load as that format, and
 * a cut-off copy is just another input (split at the chosen byte). */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/bench_import.h"

static void same(const tt_bench_result *a, const tt_bench_result *b)
{
    assert(a->n_reqs == b->n_reqs);
    for (size_t i = 0; i < a->n_reqs; i++) {
        const tt_bench_request *x = &a->reqs[i], *y = &b->reqs[i];
        assert(x->index == i && y->index == i);
        assert(x->start_ns == y->start_ns && x->ttft_ns == y->ttft_ns && x->e2el_ns == y->e2el_ns);
        assert(x->start_clock == y->start_clock && x->success == y->success);
        assert(x->n_itl == y->n_itl && x->text_len == y->text_len && x->text_hash == y->text_hash);
        assert(x->output_tokens == y->output_tokens && x->input_tokens == y->input_tokens);
        assert((x->request_id == NULL) == (y->request_id == NULL));
        if (x->request_id) assert(strcmp(x->request_id, y->request_id) == 0);
        for (size_t k = 0; k < x->n_itl; k++) assert(x->itl_ns[k] == y->itl_ns[k] && x->itl_ns[k] >= 0);
        if (x->ttft_ns != TT_BENCH_NONE) assert(x->ttft_ns >= 0);
        if (x->e2el_ns != TT_BENCH_NONE) assert(x->e2el_ns >= 0);
    }
}

static void load_checked(const char *text, size_t len, tt_bench_format fmt)
{
    char err[256];
    tt_bench_result a, b;
    int rc = tt_bench_load_mem(text, len, fmt, &a, err, sizeof err);
    if (rc != 0) {
        assert(rc == -1 && a.n_reqs == 0 && a.reqs == NULL && err[0] && !strchr(err, '\n'));
        return;
    }
    assert(a.format != TT_BENCH_AUTO && (fmt == TT_BENCH_AUTO || a.format == fmt));
    assert(tt_bench_load_mem(text, len, a.format, &b, err, sizeof err) == 0);
    same(&a, &b);
    tt_bench_result_free(&b);
    if (tt_bench_set_id_prefix(&a, "p-") == 0 && a.n_reqs) assert(strncmp(a.reqs[0].request_id, "p-", 2) == 0);
    tt_bench_result_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t control = data[size - 1];
    tt_bench_format fmt = (tt_bench_format)(control % TT_BENCH_FORMAT_COUNT);
    const char *text = (const char *)data;
    size_t len = size - 1;
    /* an exact-size copy so that any read past the end is caught */
    char *copy = malloc(len ? len : 1);
    if (!copy) return 0;
    memcpy(copy, text, len);
    load_checked(copy, len, fmt);
    size_t cut = len ? (size_t)(control >> 3) * len / 32 : 0;
    load_checked(copy, cut, fmt);
    load_checked(copy + cut, len - cut, TT_BENCH_AUTO);
    free(copy);
    return 0;
}
