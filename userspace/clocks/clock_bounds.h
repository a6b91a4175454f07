/* clock_bounds.h - the bounds on two recordings' clock offset that their
 * requests give (docs/clocks.md): a request seen at the client socket in
 * one recording and at the server socket in the other crossed between the
 * hosts twice, its request bytes one way and its token events the other.
 *
 * Requests are matched by x-request-id, else by their connection (client
 * and server endpoints, ordinal on the connection): both ends of a TCP
 * connection see the same 4-tuple when no NAT sits between them. */
#ifndef TT_CLOCK_BOUNDS_H
#define TT_CLOCK_BOUNDS_H

#include <stddef.h>

#include "clocks/clock_align.h"
#include "report/report.h"

typedef struct tt_clock_match {
    size_t by_id, by_connection; /* requests matched, per key */
    size_t bounds;               /* bounds added */
} tt_clock_match;

/* Add to ca (R the reference, S the other) the bounds of every request
 * whose client side one recording saw and whose server side the other
 * did: r_as[] and s_as[] are each recording's analyses (one per vantage).
 * Per request: its first and last request bytes (sent at the client,
 * read at the server) and each token event matched in order (written at
 * the server, read at the client). Returns 0, -1 when out of memory. */
int tt_clock_bounds_add(tt_clock_align *ca, const tt_analysis *const *r_as, size_t r_n,
                        const tt_analysis *const *s_as, size_t s_n, tt_clock_match *m);

#endif
