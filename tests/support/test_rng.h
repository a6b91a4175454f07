/* test_rng.h - the deterministic generator the tests and tools draw from:
 * Marsaglia's xorshift64 (13, 7, 17), the same sequence from the same seed
 * everywhere. Not for anything but test data. */
#ifndef TT_TEST_RNG_H
#define TT_TEST_RNG_H

#include <stdint.h>

/* The next value of the sequence in *state (which must not be 0). */
static inline uint64_t tt_xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif
