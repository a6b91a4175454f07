/* join.h - one request across vantages, and each request to the
 * benchmark's own record of it (DESIGN.md "join", docs/formats.md).
 *
 * Across vantages a request is matched by its x-request-id, else by its
 * connection (client and server endpoints) and the TCP sequence number of
 * its first byte where both vantages know the real one (tt_request.req_seq:
 * right even when one recording started late on a keep-alive connection),
 * else by its connection and ordinal on it, else by the response id its
 * events carried. Each key is counted per
 * vantage in request order, so the k-th request with a key at one vantage
 * meets the k-th with that key at another (a reused id or 4-tuple stays
 * apart).
 *
 * To the benchmark file: by request id (the record's own id, or the index
 * the tool wrote into x-request-id as <prefix><index>, unless the file says
 * its indices do not number what was sent: ids_not_indices), else by order and
 * start time (the nearest unmatched request starting within a tolerance of
 * the record's start), else by order alone. Every match says how it was
 * made. */
#ifndef TT_JOIN_H
#define TT_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "import/bench_import.h"
#include "report/report.h"

#define TT_JOIN_ABSENT SIZE_MAX

/* How a match was made, most certain first. */
typedef enum tt_join_key {
    TT_JOIN_NONE = 0,    /* not matched (or the first vantage of its group) */
    TT_JOIN_ID,          /* "id": x-request-id (or the benchmark's request id) */
    TT_JOIN_SEQUENCE,    /* "sequence": endpoints and the TCP sequence number of the request's first byte */
    TT_JOIN_CONNECTION,  /* "connection": endpoints and ordinal on the connection */
    TT_JOIN_RESPONSE_ID, /* "response-id": the id the response events carried */
    TT_JOIN_ORDER_START, /* "order+start": benchmark order and nearest start time */
    TT_JOIN_ORDER,       /* "order": benchmark order alone */
    TT_JOIN_KEY_COUNT
} tt_join_key;

/* One request as every vantage (and the benchmark) saw it. */
typedef struct tt_joined {
    size_t at[TT_VANTAGE_COUNT];          /* index into that vantage's reqs[], or TT_JOIN_ABSENT */
    tt_join_key how[TT_VANTAGE_COUNT];    /* how that vantage joined the group (TT_JOIN_NONE for the first) */
    size_t bench;                         /* index into the benchmark's reqs[], or TT_JOIN_ABSENT */
    tt_join_key bench_how;
    int64_t bench_start_delta_ns;         /* start_ns minus the record's start; TT_BENCH_NONE when unknown */
    uint64_t start_ns;                    /* first byte of the request at the earliest vantage that saw it */
} tt_joined;

typedef struct tt_join_options {
    /* Converting the benchmark's start instants into the analysis clock. */
    bool clock_is_mono;         /* the analyses' instants are CLOCK_MONOTONIC (else wall clock) */
    bool has_wall_to_mono;      /* offset below is known */
    int64_t wall_to_mono_ns;    /* wall - mono */
    int64_t start_tolerance_ns; /* order+start: how far a request may start from its record (0: 1 s) */
    /* the benchmark ran on a host whose recording was put on the reference's
     * clock (docs/clocks.md): its monotonic instants get the same map */
    bool has_clock_map;
    double map_d0_ns, map_skew;
    int64_t map_t0_ns;
} tt_join_options;

typedef struct tt_join {
    const tt_analysis *by_vantage[TT_VANTAGE_COUNT]; /* NULL where the vantage is absent */
    tt_join_options opt;
    tt_joined *reqs;            /* ordered by start_ns */
    size_t n;
    size_t by_key[TT_JOIN_KEY_COUNT];   /* vantage joins per key (groups x joined vantages) */
    size_t multi_vantage;               /* groups seen at two vantages or more */
    const tt_bench_result *bench;       /* NULL when no benchmark file */
    size_t bench_by_key[TT_JOIN_KEY_COUNT];
    size_t bench_unmatched;             /* records that met no request */
    bool bench_starts_usable;           /* every record's start could be put on the analysis clock */
    const char *bench_note;             /* why some records could not be matched well (or, failing that,
                                           the file's id_note: why they carry no id), or NULL */
} tt_join;

/* Join the n analyses as[] (at most one per vantage; each filled by
 * tt_analysis_fill and left alive while j is used) and, when bench is not
 * NULL, the benchmark's records (opt says how to read their clock; NULL:
 * monotonic, no offset). Returns 0, or -1 when out of memory or two
 * analyses share a vantage (j left empty). Free with tt_join_free. */
int tt_join_build(tt_join *j, const tt_analysis *const *as, size_t n, const tt_bench_result *bench,
                  const tt_join_options *opt);
void tt_join_free(tt_join *j);

/* The request of group g at vantage v, or NULL when v did not see it. */
const tt_request *tt_join_request(const tt_join *j, const tt_joined *g, tt_vantage v);
const tt_req_metrics *tt_join_metrics(const tt_join *j, const tt_joined *g, tt_vantage v);

/* The record of group g in the benchmark file, or NULL. */
const tt_bench_request *tt_join_bench(const tt_join *j, const tt_joined *g);

/* The record's start on the analysis clock; false when it has none usable. */
bool tt_join_bench_start(const tt_join *j, const tt_bench_request *b, int64_t *start_ns);

/* "id", "connection", "response-id", "order+start", "order" (NULL for TT_JOIN_NONE). */
const char *tt_join_key_name(tt_join_key k);

#endif
