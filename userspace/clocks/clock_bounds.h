/* clock_bounds.h - the bounds on two recordings' clock offset that their
 * requests give (docs/clocks.md): a request seen on the client's side in
 * one recording and on the server's side in the other crossed between the
 * hosts twice, its request bytes one way and its token events the other.
 *
 * A recording's client side is its client vantage and, when it holds no
 * server vantage, its wire (the client host's); its server side likewise.
 * Each pair of a client-side vantage in one recording and a server-side
 * vantage in the other is matched request by request: by x-request-id;
 * else by connection (client and server endpoints: both ends of a TCP
 * connection see the same 4-tuple when no NAT sits between them) and the
 * TCP sequence number of the request's first byte, where both sides know
 * the real one (the same at both ends, whatever else the recordings
 * missed); else by connection and ordinal. */
#ifndef TT_CLOCK_BOUNDS_H
#define TT_CLOCK_BOUNDS_H

#include <stddef.h>

#include "clocks/clock_align.h"
#include "report/report.h"

#define TT_CLOCK_MAX_PAIRS 4

/* The requests one pair of vantages matched, per key, and the bounds they gave. */
typedef struct tt_clock_pair {
    tt_vantage client_side, server_side;
    bool client_in_s;  /* the client side is in S (the recording placed), else in R */
    size_t by_id, by_sequence, by_connection;
    size_t bounds;
} tt_clock_pair;

typedef struct tt_clock_match {
    tt_clock_pair pairs[TT_CLOCK_MAX_PAIRS];
    size_t n_pairs;
    size_t best;       /* the pair that matched the most requests (pairs[best], when n_pairs) */
    size_t requests;   /* how many it matched */
    size_t bounds;     /* bounds added, all pairs */
} tt_clock_match;

/* Add to ca (R the reference, S the other) the bounds of every request
 * whose client side one recording saw and whose server side the other did:
 * r_as[] and s_as[] are each recording's analyses (one per vantage). Per
 * request: its first and last request bytes (sent on the client's side,
 * taken on the server's) and each token event matched in order (written
 * on the server's side, read on the client's). Returns 0, -1 when out of
 * memory. */
int tt_clock_bounds_add(tt_clock_align *ca, const tt_analysis *const *r_as, size_t r_n,
                        const tt_analysis *const *s_as, size_t s_n, tt_clock_match *m);

#endif
