/* fuzz_http1.c - libFuzzer harness for the HTTP/1.1 parser.
 * Byte 0: bit 0 role (response), bits 1-2 eof (none/clean/reset), bit 3 a
 * gap, bits 4-7 queued responses (HEAD / with body / CONNECT).
 * Byte 1: seed for the cut points (and gap position/length).
 * The rest is the stream. The run cut into pieces must trace exactly like
 * the whole run. */
#include <stddef.h>
#include <stdint.h>

#include "http1_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    uint8_t flags = data[0], seed = data[1];
    const uint8_t *in = data + 2;
    size_t n = size - 2;

    fz_run r = { 0 };
    r.role = (flags & 1) ? TT_HTTP_RESPONSE : TT_HTTP_REQUEST;
    r.eof = (flags >> 1) & 3;
    if (r.eof == 3) r.eof = 1;
    r.gap_at = SIZE_MAX;
    if (flags & 8) {
        r.gap_at = n ? (size_t)(seed * 131u) % (n + 1) : 0;
        r.gap_len = 1 + (seed % 7) * (seed % 3 ? 1 : 1000);
    }
    char expect[5] = { 0 };
    static const char kinds[] = "hbcb";
    for (int i = 0; i < 4; i++) expect[i] = kinds[((flags >> 4) + i) & 3];
    expect[(flags >> 4) & 3] = 0;
    r.expect = expect;

    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    size_t ncuts = fz_make_cuts((uint32_t)seed * 2246822519u + (uint32_t)n, n, cuts, n + 1);
    fz_text whole, cut;
    fz_run_trace(&r, in, n, NULL, 0, &whole, NULL, NULL);
    fz_run_trace(&r, in, n, cuts, ncuts, &cut, NULL, NULL);
    fz_compare(&whole, &cut);
    free(whole.s);
    free(cut.s);
    free(cuts);
    return 0;
}
