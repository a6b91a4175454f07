/* fuzz_sse.c - libFuzzer harness for the SSE parser (frame_fuzz.h). */
#include "frame_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return frame_fuzz_one(TT_FRAMING_SSE, data, size);
}
