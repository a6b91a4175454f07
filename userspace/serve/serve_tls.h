/* serve_tls.h - HTTPS for `tokentap serve --tls CERT KEY` (docs/serve.md):
 * OpenSSL on the worker's nonblocking sockets, ALPN http/1.1 (and h2 first
 * under --http2). The log is
 * unchanged: a write's instant is taken before its SSL_write, as before
 * its send() without TLS, so it is the instant the plaintext was handed to
 * the library (what the TLS vantage's SSL_write entry sees). */
#ifndef TT_SERVE_TLS_H
#define TT_SERVE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct tt_serve_tls tt_serve_tls;
typedef struct tt_serve_tls_conn tt_serve_tls_conn;

/* What a read or write could not do yet (negative returns). */
enum { TT_SERVE_TLS_ERROR = -1, TT_SERVE_TLS_WANT_READ = -2, TT_SERVE_TLS_WANT_WRITE = -3 };

/* The server's context from a PEM certificate (chain) and key; ALPN offers
 * h2 before http/1.1 when offer_h2. NULL with a one-line reason in err. */
tt_serve_tls *tt_serve_tls_new(const char *cert_path, const char *key_path, bool offer_h2, char *err,
                               size_t errlen);
void tt_serve_tls_free(tt_serve_tls *t);

/* The TLS session of an accepted socket (server side; the handshake runs
 * inside the first reads). NULL when out of memory. */
tt_serve_tls_conn *tt_serve_tls_conn_new(tt_serve_tls *t, int fd);
void tt_serve_tls_conn_free(tt_serve_tls_conn *c);

/* Before the socket is closed: a close_notify, when the socket takes it
 * now (best effort: a nonblocking socket is not waited on). */
void tt_serve_tls_close_notify(tt_serve_tls_conn *c);

/* Plaintext read: > 0 bytes, 0 the peer closed, or TT_SERVE_TLS_*. */
ssize_t tt_serve_tls_read(tt_serve_tls_conn *c, void *buf, size_t n);

/* Plaintext write (partial writes allowed): > 0 bytes taken, or
 * TT_SERVE_TLS_*; after WANT_*, call again with the same bytes. */
ssize_t tt_serve_tls_write(tt_serve_tls_conn *c, const void *buf, size_t n);

/* Drive the handshake: 1 when it is complete (at once if it already was),
 * else TT_SERVE_TLS_WANT_READ / _WANT_WRITE (call again when the socket
 * allows) or TT_SERVE_TLS_ERROR. */
int tt_serve_tls_handshake(tt_serve_tls_conn *c);

/* After the handshake: ALPN chose h2. */
bool tt_serve_tls_is_h2(const tt_serve_tls_conn *c);

#endif
