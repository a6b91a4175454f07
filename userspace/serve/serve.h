/* serve.h - tokentap serve: an epoll server that streams synthetic
 * completions in a chosen real server's framing on a known schedule, and
 * logs the instant of every write (docs/serve.md).
 *
 * One event loop per worker thread (default one), non-blocking sockets, a
 * timerfd armed at the earliest due instant of a min-heap of streams. Every
 * event of a streamed response is one send() (more only when the socket
 * buffer is full, which the log shows). Connections are dealt round-robin to
 * the workers and stay on theirs. */
#ifndef TT_SERVE_H
#define TT_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/serve_log.h"
#include "serve/serve_profile.h"
#include "serve/serve_sched.h"

#define TT_SERVE_MAX_SPLITS 16
#define TT_SERVE_MAX_WORKERS 64

/* Framing faults and controls (docs/serve.md, "Schedule and framing controls"). */
typedef struct tt_serve_faults {
    uint32_t split_at[TT_SERVE_MAX_SPLITS]; /* --split-at: byte offsets inside each event */
    size_t n_split;                         /* 0: events are not split */
    uint64_t split_pause_ns;                /* pause between the parts of a split event */
    uint32_t coalesce;                      /* events per write; 0 or 1: one each */
    uint64_t keepalive_ns;                  /* keep-alive comment period while a stream is open; 0 none */
    int64_t close_after;                    /* close the connection after this many tokens; -1 never */
    int64_t error_after;                    /* error event after this many tokens; -1 never */
    int status;                             /* answer generations with this HTTP error status; 0 none */
} tt_serve_faults;

typedef struct tt_serve_config {
    const tt_serve_profile *profile;
    tt_serve_gen_opts gen;
    tt_dist ttft, itl;   /* first token after ttft from the request's last byte, then every itl */
    uint64_t seed;
    bool nodelay;        /* TCP_NODELAY on accepted sockets */
    size_t max_body;     /* request bodies above this are answered 413 */
    tt_serve_faults faults;
    unsigned workers;    /* event-loop threads; 0 or 1: one (at most TT_SERVE_MAX_WORKERS) */
    const char *tls_cert, *tls_key; /* --tls: HTTPS with this PEM certificate and key (NULL: plain HTTP) */
    bool http2;          /* --http2: h2c with prior knowledge (nghttp2), not with --tls */
} tt_serve_config;

typedef struct tt_server tt_server;

/* Bind and listen on host:port (port 0: the kernel picks one). host is an
 * IPv4/IPv6 literal or a name. `log` (may be inactive) stays the caller's
 * and must outlive the server. NULL with a one-line reason in err. */
tt_server *tt_server_new(const tt_serve_config *cfg, const char *host, uint16_t port,
                         tt_serve_log *log, char *err, size_t errlen);
/* The bound address, "127.0.0.1:PORT" or "[::1]:PORT". */
const char *tt_server_address(const tt_server *s);
/* Serve until stop_fd (-1: none) becomes readable; the calling thread is
 * worker 0 and starts the others. The other workers' log lines are flushed
 * before it returns. 0, or -1 with a reason on stderr (also when any worker
 * failed, which stops them all). */
int tt_server_run(tt_server *s, int stop_fd);
/* Close every connection and the listener; flushes nothing of the caller's log. */
void tt_server_free(tt_server *s);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tt_serve_mono_ns(void);

#endif
