/* probe_tls.c - part of libtokentap-probe.so (probe_internal.h): the
 * OpenSSL hooks, the tls layer of the client vantage. The plaintext an
 * SSL call moved is recorded against the TCP socket under the SSL object
 * (ssl_socket says how that socket is found). */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "probe_internal.h"

typedef struct ssl_st SSL;

/* The socket each recent SSL object was last seen on (ssl_socket). */
#define SSL_FD_CACHE 16
static __thread struct {
    const void *ssl;
    int fd;
} ssl_fd_cache[SSL_FD_CACHE] __attribute__((tls_model("initial-exec")));

/* The OpenSSL functions, found when first needed (libssl may be loaded late). */
static struct {
    int (*read)(SSL *, void *, int);
    int (*read_ex)(SSL *, void *, size_t, size_t *);
    int (*write)(SSL *, const void *, int);
    int (*write_ex)(SSL *, const void *, size_t, size_t *);
    int (*get_fd)(const SSL *);
    int (*get_error)(const SSL *, int);
    SSL *(*new_)(void *);
} real_ssl;

static void *find_ssl(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    static const char *const libs[] = {"libssl.so.3", "libssl.so.1.1", "libssl.so"};
    for (size_t i = 0; !f && i < sizeof libs / sizeof libs[0]; i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = dlsym(h, name);
            dlclose(h);
        }
    }
    return f;
}

#define SSL_REAL(field, name)                                                                     \
    (__atomic_load_n(&real_ssl.field, __ATOMIC_ACQUIRE)                                           \
         ? real_ssl.field                                                                         \
         : (in_probe++, __atomic_store_n((void **)&real_ssl.field, find_ssl(name), __ATOMIC_RELEASE), \
            in_probe--, real_ssl.field))

/* Around the real SSL call: note which socket it used. */
static void ssl_enter(void)
{
    if (UNLIKELY(!__atomic_load_n(&ssl_seen, __ATOMIC_RELAXED))) __atomic_store_n(&ssl_seen, true, __ATOMIC_RELAXED);
    if (ssl_depth++ == 0) {
        ssl_last_fd = -1;
        ssl_saw_eof = 0;
    }
}

static void ssl_leave(void) { ssl_depth--; }

/* The socket under ssl: SSL_get_fd, else the one the TLS library just read
 * or wrote (a custom BIO, e.g. curl's), else the one ssl was last seen on,
 * else (memory BIOs, no socket touched inside the call: asyncio's
 * SSLObject) the TCP socket this thread last read, which fed the BIO. */
static int ssl_socket(SSL *ssl)
{
    int (*get_fd)(const SSL *) = SSL_REAL(get_fd, "SSL_get_fd");
    int fd = get_fd ? get_fd(ssl) : -1;
    if (fd < 0) fd = ssl_last_fd;
    unsigned slot = (unsigned)(((uintptr_t)ssl >> 4) % SSL_FD_CACHE);
    if (fd < 0 && ssl_fd_cache[slot].ssl == ssl) return ssl_fd_cache[slot].fd;
    if (fd < 0) fd = thread_recv_fd1 - 1;
    if (fd >= 0) {
        ssl_fd_cache[slot].ssl = ssl;
        ssl_fd_cache[slot].fd = fd;
    }
    return fd;
}

/* Plaintext moved through an SSL object: keyed by the socket under it. */
static void note_tls(SSL *ssl, uint8_t dir, uint8_t call, const void *buf, uint64_t n, uint64_t enter)
{
    uint64_t ts = enter ? enter : stamp_now();
    int fd = ssl_socket(ssl);
    fd_slot *s = tcp_slot(fd);
    if (!s) return;
    struct iovec v = {(void *)buf, (size_t)n};
    record_data(s, fd, dir, call, TT_PROBE_LAYER_TLS, ts, enter, &v, 1, n, (int64_t)n);
}

/* SSL_read/SSL_read_ex failed with ret: when the peer's close_notify came
 * (SSL_ERROR_ZERO_RETURN) or the socket's end of file was read meanwhile,
 * the plaintext ended: an EOF record at the TLS layer. */
static void note_tls_failure(SSL *ssl, int ret)
{
    int (*get_error)(const SSL *, int) = SSL_REAL(get_error, "SSL_get_error");
    bool eof = ssl_saw_eof || (get_error && get_error(ssl, ret) == 6 /* SSL_ERROR_ZERO_RETURN */);
    if (!eof) return;
    int fd = ssl_socket(ssl);
    fd_slot *s = tcp_slot(fd);
    if (s) record_control(s, fd, TT_PROBE_KIND_EOF, TT_PROBE_DIR_RECV, TT_PROBE_CALL_SSL_READ, TT_PROBE_LAYER_TLS,
                          stamp_now());
}

/* The process makes an SSL object: from now on the socket calls note which
 * socket each thread used (note_data: note_ssl_socket), so that ssl_socket
 * finds the one under an object on memory BIOs, whose handshake reads come
 * before any SSL_read or SSL_write. */
HOOK SSL *SSL_new(void *ctx)
{
    __atomic_store_n(&ssl_seen, true, __ATOMIC_RELAXED);
    SSL *(*f)(void *) = SSL_REAL(new_, "SSL_new");
    if (!f) {
        errno = ENOSYS;
        return NULL;
    }
    return f(ctx);
}

HOOK int SSL_read(SSL *ssl, void *buf, int num)
{
    int (*f)(SSL *, void *, int) = SSL_REAL(read, "SSL_read");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    ssl_enter();
    int r = f(ssl, buf, num);
    ssl_leave();
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_tls(ssl, TT_PROBE_DIR_RECV, TT_PROBE_CALL_SSL_READ, buf, (uint64_t)r, 0);
        *errno_p = e;
    } else if (r <= 0 && num > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_tls_failure(ssl, r);
        *errno_p = e;
    }
    return r;
}

HOOK int SSL_read_ex(SSL *ssl, void *buf, size_t num, size_t *got)
{
    int (*f)(SSL *, void *, size_t, size_t *) = SSL_REAL(read_ex, "SSL_read_ex");
    if (!f) {
        errno = ENOSYS;
        return 0;
    }
    ssl_enter();
    int r = f(ssl, buf, num, got);
    ssl_leave();
    if (r == 1 && got && *got && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_tls(ssl, TT_PROBE_DIR_RECV, TT_PROBE_CALL_SSL_READ, buf, *got, 0);
        *errno_p = e;
    } else if (r <= 0 && num > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_tls_failure(ssl, r);
        *errno_p = e;
    }
    return r;
}

HOOK int SSL_write(SSL *ssl, const void *buf, int num)
{
    int (*f)(SSL *, const void *, int) = SSL_REAL(write, "SSL_write");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    uint64_t enter = ACTIVE() ? stamp_now() : 0;
    ssl_enter();
    int r = f(ssl, buf, num);
    ssl_leave();
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_tls(ssl, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SSL_WRITE, buf, (uint64_t)r, enter);
        *errno_p = e;
    }
    return r;
}

HOOK int SSL_write_ex(SSL *ssl, const void *buf, size_t num, size_t *put)
{
    int (*f)(SSL *, const void *, size_t, size_t *) = SSL_REAL(write_ex, "SSL_write_ex");
    if (!f) {
        errno = ENOSYS;
        return 0;
    }
    uint64_t enter = ACTIVE() ? stamp_now() : 0;
    ssl_enter();
    int r = f(ssl, buf, num, put);
    ssl_leave();
    if (r == 1 && put && *put && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_tls(ssl, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SSL_WRITE, buf, *put, enter);
        *errno_p = e;
    }
    return r;
}
