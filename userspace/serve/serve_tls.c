/* serve_tls.c - OpenSSL for tokentap serve (serve_tls.h), loaded when the
 * first TLS context is made (core/lazy_lib.h): only serve --tls uses it. */
#include "serve/serve_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/lazy_lib.h"
#include "core/util.h"

/* Every OpenSSL function this file calls, each through ossl.NAME (macros
 * such as SSL_CTX_set_mode are spelled out as the function they wrap). */
#define OSSL_FUNCTIONS(X)                                                                                              \
    X(ERR_clear_error) X(ERR_error_string_n) X(ERR_get_error) X(SSL_CTX_check_private_key) X(SSL_CTX_ctrl)             \
    X(SSL_CTX_free) X(SSL_CTX_new) X(SSL_CTX_set_alpn_select_cb) X(SSL_CTX_use_PrivateKey_file)                        \
    X(SSL_CTX_use_certificate_chain_file) X(SSL_do_handshake) X(SSL_free) X(SSL_get0_alpn_selected) X(SSL_get_error)   \
    X(SSL_is_init_finished) X(SSL_new) X(SSL_read) X(SSL_select_next_proto) X(SSL_set_accept_state) X(SSL_set_fd)      \
    X(SSL_shutdown) X(SSL_write) X(TLS_server_method)

#define OSSL_SLOT(name) __typeof__(name) *name;
static struct {
    OSSL_FUNCTIONS(OSSL_SLOT)
} ossl;
#define OSSL_SYM(name) {#name, (void **)&ossl.name},
static const tt_lazy_sym ossl_syms[] = {OSSL_FUNCTIONS(OSSL_SYM)};
static const char *const ossl_names[] = {"libssl.so." TT_STR(OPENSSL_VERSION_MAJOR), "libssl.so", NULL};
static tt_lazy_lib ossl_lib = {ossl_names, "serve --tls", ossl_syms, sizeof ossl_syms / sizeof ossl_syms[0], 0, ""};

struct tt_serve_tls {
    SSL_CTX *ctx;
    bool offer_h2;
};

struct tt_serve_tls_conn {
    SSL *ssl;
};

/* ALPN, in the server's order of preference: h2 (with --http2) then
 * http/1.1, whatever the client offers beside them; none in common: no ALPN
 * (the connection is then HTTP/1.1). */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
    (void)ssl;
    static const unsigned char both[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    const tt_serve_tls *t = arg;
    const unsigned char *ours = t->offer_h2 ? both : both + 3;
    unsigned ours_len = t->offer_h2 ? sizeof both : sizeof both - 3;
    unsigned char *sel = NULL;
    if (ossl.SSL_select_next_proto(&sel, outlen, ours, ours_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

tt_serve_tls *tt_serve_tls_new(const char *cert_path, const char *key_path, bool offer_h2, char *err,
                               size_t errlen)
{
    if (tt_lazy_load(&ossl_lib, err, errlen) < 0) return NULL;
    tt_serve_tls *t = calloc(1, sizeof *t);
    if (t) t->offer_h2 = offer_h2;
    if (!t || !(t->ctx = ossl.SSL_CTX_new(ossl.TLS_server_method()))) {
        snprintf(err, errlen, "cannot set up TLS: out of memory");
        free(t);
        return NULL;
    }
    const char *what = NULL;
    if (ossl.SSL_CTX_use_certificate_chain_file(t->ctx, cert_path) != 1) what = cert_path;
    else if (ossl.SSL_CTX_use_PrivateKey_file(t->ctx, key_path, SSL_FILETYPE_PEM) != 1) what = key_path;
    else if (ossl.SSL_CTX_check_private_key(t->ctx) != 1) what = "the key does not match the certificate";
    if (what) {
        char why[160];
        ossl.ERR_error_string_n(ossl.ERR_get_error(), why, sizeof why);
        snprintf(err, errlen, "--tls: %s: %s", what, why);
        tt_serve_tls_free(t);
        return NULL;
    }
    ossl.SSL_CTX_ctrl(t->ctx, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
    ossl.SSL_CTX_set_alpn_select_cb(t->ctx, select_alpn, t);
    return t;
}

void tt_serve_tls_free(tt_serve_tls *t)
{
    if (!t) return;
    ossl.SSL_CTX_free(t->ctx);
    free(t);
}

tt_serve_tls_conn *tt_serve_tls_conn_new(tt_serve_tls *t, int fd)
{
    tt_serve_tls_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ssl = ossl.SSL_new(t->ctx);
    if (!c->ssl || ossl.SSL_set_fd(c->ssl, fd) != 1) {
        ossl.SSL_free(c->ssl);
        free(c);
        return NULL;
    }
    ossl.SSL_set_accept_state(c->ssl);
    return c;
}

void tt_serve_tls_conn_free(tt_serve_tls_conn *c)
{
    if (!c) return;
    ossl.SSL_free(c->ssl);
    free(c);
}

void tt_serve_tls_close_notify(tt_serve_tls_conn *c)
{
    if (c && ossl.SSL_is_init_finished(c->ssl) && ossl.SSL_shutdown(c->ssl) < 0) ossl.ERR_clear_error();
}

/* What a failed SSL call of result r means for the caller. */
static ssize_t failure(tt_serve_tls_conn *c, int r)
{
    switch (ossl.SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_WANT_READ: return TT_SERVE_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return TT_SERVE_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: ossl.ERR_clear_error(); return TT_SERVE_TLS_ERROR;
    }
}

ssize_t tt_serve_tls_read(tt_serve_tls_conn *c, void *buf, size_t n)
{
    int r = ossl.SSL_read(c->ssl, buf, n > 0x7fffffff ? 0x7fffffff : (int)n);
    return r > 0 ? r : failure(c, r);
}

ssize_t tt_serve_tls_write(tt_serve_tls_conn *c, const void *buf, size_t n)
{
    int r = ossl.SSL_write(c->ssl, buf, n > 0x7fffffff ? 0x7fffffff : (int)n);
    return r > 0 ? r : failure(c, r);
}

int tt_serve_tls_handshake(tt_serve_tls_conn *c)
{
    if (ossl.SSL_is_init_finished(c->ssl)) return 1;
    int r = ossl.SSL_do_handshake(c->ssl);
    if (r == 1) return 1;
    ssize_t f = failure(c, r);
    return f == 0 ? TT_SERVE_TLS_ERROR : (int)f;
}

bool tt_serve_tls_is_h2(const tt_serve_tls_conn *c)
{
    const unsigned char *p = NULL;
    unsigned n = 0;
    ossl.SSL_get0_alpn_selected(c->ssl, &p, &n);
    return n == 2 && p[0] == 'h' && p[1] == '2';
}
