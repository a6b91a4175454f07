/* live_join.h - a request seen at both socket vantages of one host, paired
 * while watch runs, for the parts of its time that need both ends: the
 * uplink (client's request write to the server's socket having it
 * readable) and the downlink (the server's first-token write to the
 * client's socket having it readable), docs/metrics.md "Decomposition".
 *
 * A request is known at each vantage by its connection (both endpoints)
 * and the TCP sequence number of its first byte, which both ends see the
 * same. Each finished request of the server or client vantage is offered;
 * one whose peer was offered before is paired at once, the others wait,
 * at most `capacity` of them and at most max_wait_ns, the oldest let go
 * first (counted). A waiting request is kept as a copy without its event,
 * text and body arrays, so the tracker may let go of its own. */
#ifndef TT_LIVE_JOIN_H
#define TT_LIVE_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "core/tt_types.h"
#include "timeline/request.h"

typedef struct tt_ljoin tt_ljoin;

/* Called with both sides of a pair (valid during the call only). */
typedef void (*tt_ljoin_pair_fn)(void *ctx, const tt_request *server, const tt_request *client);

/* A joiner holding at most capacity waiting requests for max_wait_ns; NULL
 * when out of memory. */
tt_ljoin *tt_ljoin_new(size_t capacity, uint64_t max_wait_ns, tt_ljoin_pair_fn on_pair, void *ctx);
void tt_ljoin_free(tt_ljoin *j);

/* Offer r, finished at vantage v (only TT_VANTAGE_SERVER and
 * TT_VANTAGE_CLIENT take part; a request whose sequence number is unknown
 * cannot be paired and is ignored) at now_ns. */
void tt_ljoin_offer(tt_ljoin *j, tt_vantage v, const tt_request *r, uint64_t now_ns);

typedef struct tt_ljoin_stats {
    uint64_t paired, expired, waiting;
} tt_ljoin_stats;
void tt_ljoin_stats_get(const tt_ljoin *j, tt_ljoin_stats *st);

/* The parts of a pair's time to the first token, in ns, or -1 where an
 * instant is unknown (no ready instant, no first token) or the order is
 * not causal. */
void tt_ljoin_links(const tt_request *server, const tt_request *client, int64_t *uplink_ns, int64_t *downlink_ns);

#endif
