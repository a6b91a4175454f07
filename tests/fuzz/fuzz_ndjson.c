/* fuzz_ndjson.c - libFuzzer harness for the NDJSON parser (frame_fuzz.h). */
#include "frame_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return frame_fuzz_one(TT_FRAMING_NDJSON, data, size);
}
