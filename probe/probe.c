/* probe.c - libtokentap-probe.so: the client vantage without root.
 *
 * Preloaded by `tokentap run`, it wraps the socket calls of the program
 * (and of every process it forks or execs) and copies the bytes each call
 * on a TCP socket moved, stamped with CLOCK_MONOTONIC when the real call
 * returned (a send: when it was entered, the instant of its bytes), into a per-process
 * shared-memory ring (probe_abi.h) that the collector drains; a read
 * returning end of file, and a close, are records too. The program's
 * behaviour never changes: every wrapper calls the real function with the
 * same arguments and returns its result with its errno; recording never
 * blocks and never allocates, and a full ring drops records (counted, and
 * remembered per socket as lost bytes).
 *
 * This file: the process's state, binding the real functions, the fd
 * table, the records and the data hooks; probe_internal.h lists the
 * others. The state is per process by nature (the process's fd table and
 * its ring), so it lives in process globals; nothing in it is per stream. */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe_internal.h"

_Static_assert(sizeof(struct tt_probe_rec) % 8 == 0, "probe record head must stay 8-byte aligned");
_Static_assert(sizeof(struct tt_probe_ring) <= TT_PROBE_HEADER_SIZE, "ring header too large");

struct probe_reals real;
int reals_state;
bool probe_active;
bool ssl_seen;
bool stamp_tsc;
tt_probe_producer producer;
pid_t owner_pid;
size_t ring_map_len;
fd_slot *fd_table;
fd_slot fd_low[FD_LOW];
size_t fd_table_len;
size_t fd_high;
char ring_dir[512];
uint64_t ring_bytes;
bool prefault_ring;

__thread int in_probe __attribute__((tls_model("initial-exec")));
__thread int ssl_depth __attribute__((tls_model("initial-exec")));
__thread int ssl_last_fd __attribute__((tls_model("initial-exec")));
__thread int ssl_saw_eof __attribute__((tls_model("initial-exec")));
__thread int thread_recv_fd1 __attribute__((tls_model("initial-exec")));
__thread int *thread_errno __attribute__((tls_model("initial-exec")));

/* The kernel's vDSO clock_gettime, called directly (found at binding):
 * libc's wrapper around it costs a few ns more per read. */
static int (*vdso_clock_gettime)(clockid_t, struct timespec *);

uint64_t mono_ns(void)
{
    struct timespec ts;
    int (*direct)(clockid_t, struct timespec *) = __atomic_load_n(&vdso_clock_gettime, __ATOMIC_RELAXED);
    if (LIKELY(direct != NULL) && LIKELY(direct(CLOCK_MONOTONIC, &ts) == 0))
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The vDSO's clock_gettime, or NULL (no vDSO: libc's is used). */
static void *find_vdso_clock(void)
{
    void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    void *f = dlsym(h, "__vdso_clock_gettime");
    dlclose(h);
    return f;
}

static void *find_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* Bind every real function once. False while binding is under way (this
 * thread recursing from dlsym, or another thread binding): the caller then
 * uses the raw system call. */
bool bind_reals(void)
{
    int state = __atomic_load_n(&reals_state, __ATOMIC_ACQUIRE);
    if (state == 2) return true;
    if (state == 1 || in_probe) return false;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&reals_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return false;
    in_probe++;
#define BIND(field, name) *(void **)&real.field = find_next(name)
    BIND(read, "read");
    BIND(readv, "readv");
    BIND(recv, "recv");
    BIND(recvfrom, "recvfrom");
    BIND(recvmsg, "recvmsg");
    BIND(recvmmsg, "recvmmsg");
    BIND(write, "write");
    BIND(writev, "writev");
    BIND(send, "send");
    BIND(sendto, "sendto");
    BIND(sendmsg, "sendmsg");
    BIND(sendmmsg, "sendmmsg");
    BIND(close, "close");
    BIND(connect, "connect");
    BIND(accept, "accept");
    BIND(accept4, "accept4");
    BIND(dup, "dup");
    BIND(dup2, "dup2");
    BIND(dup3, "dup3");
    BIND(socket, "socket");
    BIND(fclose, "fclose");
    BIND(close_range, "close_range");
    BIND(closefrom, "closefrom");
    BIND(read_chk, "__read_chk");
    BIND(recv_chk, "__recv_chk");
    BIND(recvfrom_chk, "__recvfrom_chk");
#undef BIND
    __atomic_store_n((void **)&vdso_clock_gettime, find_vdso_clock(), __ATOMIC_RELAXED);
    in_probe--;
    bool complete = real.read && real.readv && real.recv && real.recvfrom && real.recvmsg && real.write &&
                    real.writev && real.send && real.sendto && real.sendmsg && real.close && real.connect &&
                    real.accept && real.accept4 && real.dup && real.dup2 && real.dup3 && real.socket &&
                    real.fclose;
    __atomic_store_n(&reals_state, complete ? 2 : 0, __ATOMIC_RELEASE);
    return complete;
}

/* ---- the ring ---- */

/* Reserve space for a record (see tt_producer_reserve); UINT64_MAX when
 * there is no ring (yet) or no room. */
HOT static uint64_t ring_reserve(uint32_t need, struct tt_probe_rec **out)
{
    if (UNLIKELY(__atomic_load_n(&producer.state, __ATOMIC_ACQUIRE) != TT_PRODUCER_READY) && !ring_ready())
        return UINT64_MAX;
    return tt_producer_reserve(&producer, need, out);
}

static void ring_drop(uint64_t data_bytes) { tt_producer_drop(&producer, data_bytes); }

/* ---- the fd table ---- */

HOT fd_slot *slot_for(int fd)
{
    if (UNLIKELY(fd < 0)) return NULL;
    if (UNLIKELY((size_t)fd >= fd_table_len)) {
        if (!in_probe && __atomic_load_n(&producer.state, __ATOMIC_ACQUIRE) == TT_PRODUCER_READY)
            __atomic_fetch_add(&producer.head->untracked_fds, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return slot_at((size_t)fd);
}

/* fd's slot is about to hold something: loops over the table stop at fd_high. */
void note_high(int fd)
{
    size_t high = __atomic_load_n(&fd_high, __ATOMIC_RELAXED);
    while ((size_t)fd > high &&
           !__atomic_compare_exchange_n(&fd_high, &high, (size_t)fd, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}
}

void slot_reset(int fd, uint8_t role)
{
    if (fd < 0 || (size_t)fd >= fd_table_len) return;
    if (role) note_high(fd);
    fd_slot *s = slot_at((size_t)fd);
    __atomic_store_n(&s->state, SLOT_UNKNOWN, __ATOMIC_RELEASE);
    s->role = role;
    __atomic_store_n(&s->lost[0], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->lost[1], 0, __ATOMIC_RELAXED);
}

static void addr_from(const struct sockaddr_storage *ss, uint8_t out[16], uint16_t *port)
{
    memset(out, 0, 16);
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        memcpy(out, &a->sin6_addr, 16);
        *port = ntohs(a->sin6_port);
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        memcpy(out, &a->sin_addr, 4);
        *port = ntohs(a->sin_port);
    }
}

/* Find out once whether fd is a connected TCP socket, and its endpoints
 * and identity. Returns the slot's state afterwards. */
static int slot_classify(int fd, fd_slot *s)
{
    int proto = 0;
    socklen_t l = sizeof proto;
    note_high(fd);
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) < 0) {
        if (errno == ENOTSOCK) __atomic_store_n(&s->state, SLOT_OTHER, __ATOMIC_RELEASE);
        return errno == ENOTSOCK ? SLOT_OTHER : SLOT_UNKNOWN;
    }
    struct sockaddr_storage la, ra;
    socklen_t ll = sizeof la, rl = sizeof ra;
    if (proto != IPPROTO_TCP || getsockname(fd, (struct sockaddr *)&la, &ll) < 0 ||
        (la.ss_family != AF_INET && la.ss_family != AF_INET6)) {
        __atomic_store_n(&s->state, SLOT_OTHER, __ATOMIC_RELEASE);
        return SLOT_OTHER;
    }
    struct stat st;
    if (getpeername(fd, (struct sockaddr *)&ra, &rl) < 0 || fstat(fd, &st) < 0) return SLOT_UNKNOWN;
    s->v6 = la.ss_family == AF_INET6;
    addr_from(&la, s->laddr, &s->lport);
    addr_from(&ra, s->raddr, &s->rport);
    s->sock_id = (uint64_t)st.st_ino;
    __atomic_store_n(&s->state, SLOT_TCP, __ATOMIC_RELEASE);
    return SLOT_TCP;
}

/* The slot of fd when fd is a tracked TCP socket, else NULL. */
fd_slot *tcp_slot(int fd)
{
    fd_slot *s = slot_for(fd);
    if (!s) return NULL;
    int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    if (LIKELY(state == SLOT_TCP)) return s;
    if (state == SLOT_OTHER) return NULL;
    return slot_classify(fd, s) == SLOT_TCP ? s : NULL;
}

/* ---- records ---- */

static void rec_fill(struct tt_probe_rec *r, const fd_slot *s, int fd, uint8_t kind, uint8_t dir, uint8_t call,
                     uint64_t ts, uint64_t enter, int64_t ret)
{
    r->kind = kind;
    r->dir = dir;
    r->call = call;
    r->flags = (uint8_t)((s->v6 ? TT_PROBE_F_IPV6 : 0) | (stamp_tsc ? TT_PROBE_F_TSC : 0));
    r->ts_ns = ts;
    r->enter_ns = enter;
    r->sock_id = s->sock_id;
    r->ret = ret;
    r->fd = fd;
    r->layer = TT_PROBE_LAYER_SOCKET;
    r->role = s->role;
    r->lport = s->lport;
    r->rport = s->rport;
    memcpy(r->laddr, s->laddr, 16);
    memcpy(r->raddr, s->raddr, 16);
}

static uint64_t take_lost(fd_slot *s, int d)
{
    if (LIKELY(__atomic_load_n(&s->lost[d], __ATOMIC_RELAXED) == 0)) return 0;
    return __atomic_exchange_n(&s->lost[d], 0, __ATOMIC_ACQ_REL);
}

/* memcpy, inline for the few bytes most calls move: no call into libc's
 * code (a page more for the TLB to find after every system call). */
static inline void copy_bytes(uint8_t *dst, const void *src, size_t n)
{
    if (n > 256) {
        memcpy(dst, src, n);
        return;
    }
    const uint8_t *from = src;
    for (; n >= 8; n -= 8, dst += 8, from += 8) __builtin_memcpy(dst, from, 8);
    for (; n; n--) *dst++ = *from++;
}

/* One data record: the `total` bytes the call moved, gathered from iov
 * (NULL when the bytes were not handed to the program: MSG_TRUNC). */
HOT void record_data(fd_slot *s, int fd, uint8_t dir, uint8_t call, uint8_t layer, uint64_t ts, uint64_t enter,
                     const struct iovec *iov, int iovcnt, uint64_t total, int64_t ret)
{
    uint64_t copy = iov ? total : 0;
    uint64_t max_copy = ring_bytes / 2 - TT_PROBE_REC_MIN;
    if (max_copy > TT_PROBE_MAX_COPY) max_copy = TT_PROBE_MAX_COPY;
    if (copy > max_copy) copy = max_copy;
    uint32_t need = (uint32_t)((TT_PROBE_REC_MIN + copy + 7) & ~7ull);
    uint64_t lost[2] = {take_lost(s, 0), take_lost(s, 1)};
    struct tt_probe_rec *r;
    uint64_t pos = ring_reserve(need, &r);
    if (UNLIKELY(pos == UINT64_MAX)) {
        lost[dir] += total;
        for (int d = 0; d < 2; d++)
            if (lost[d]) __atomic_fetch_add(&s->lost[d], lost[d], __ATOMIC_RELAXED);
        ring_drop(total);
        return;
    }
    r->size = need;
    rec_fill(r, s, fd, TT_PROBE_KIND_DATA, dir, call, ts, enter, ret);
    r->layer = layer;
    r->lost[0] = lost[0];
    r->lost[1] = lost[1];
    r->len = (uint32_t)copy;
    r->total_len = (uint32_t)(total > UINT32_MAX ? UINT32_MAX : total);
    if (copy < total) r->flags |= TT_PROBE_F_TRUNCATED;
    uint8_t *dst = (uint8_t *)(r + 1);
    uint64_t left = copy;
    for (int i = 0; i < iovcnt && left; i++) {
        size_t n = iov[i].iov_len < left ? iov[i].iov_len : (size_t)left;
        copy_bytes(dst, iov[i].iov_base, n);
        dst += n;
        left -= n;
    }
    tt_producer_commit(&producer, r, pos);
    tt_producer_prefetch(&producer, pos + need);
}

/* A record without data (CLOSE; EOF, dir RECV, at either layer). */
void record_control(fd_slot *s, int fd, uint8_t kind, uint8_t dir, uint8_t call, uint8_t layer, uint64_t ts)
{
    struct tt_probe_rec *r;
    uint64_t lost[2] = {take_lost(s, 0), take_lost(s, 1)};
    uint64_t pos = ring_reserve(TT_PROBE_REC_MIN, &r);
    if (pos == UINT64_MAX) {
        ring_drop(0);
        return;
    }
    r->size = TT_PROBE_REC_MIN;
    rec_fill(r, s, fd, kind, dir, call, ts, 0, 0);
    r->layer = layer;
    r->lost[0] = lost[0];
    r->lost[1] = lost[1];
    r->len = 0;
    r->total_len = 0;
    tt_producer_commit(&producer, r, pos);
}

/* Which socket a TLS library inside an SSL call on this thread used, and
 * which one this thread last read outside them (probe_tls.c: ssl_socket).
 * Thread-local, so only once the process has made an SSL object: a
 * program without TLS touches no thread-local page after its calls. */
static inline void note_ssl_socket(int fd, uint8_t dir)
{
    if (LIKELY(!__atomic_load_n(&ssl_seen, __ATOMIC_RELAXED))) return;
    if (ssl_depth) ssl_last_fd = fd;
    else if (dir == TT_PROBE_DIR_RECV) thread_recv_fd1 = fd + 1;
}

/* note_data when the fd is not yet known to be a TCP socket, or the ring
 * is not ready: the probe's own calls are left alone (in_probe: making
 * the ring, a fork child's set-up, or a signal handler interrupting
 * them), and errno is kept across the classification and the ring's
 * making, the only steps that can change it. */
static void note_data_slow(fd_slot *s, int state, int fd, uint8_t dir, uint8_t call, const struct iovec *iov,
                           int iovcnt, uint64_t moved, uint64_t ts, uint64_t enter, int64_t ret)
{
    if (in_probe) return;
    int *errno_p = errno_slot(), e = *errno_p;
    if (state == SLOT_TCP || slot_classify(fd, s) == SLOT_TCP) {
        note_ssl_socket(fd, dir);
        record_data(s, fd, dir, call, TT_PROBE_LAYER_SOCKET, ts, enter, iov, iovcnt, moved, ret);
    }
    *errno_p = e;
}

/* Bytes moved on fd by a call that returned `moved` > 0 (or a sum of
 * them); enter is the entry instant for sends, 0 otherwise. A send's record
 * is stamped with its entry instant only (ts_ns = enter_ns): the instant of
 * its bytes, and one clock read per call instead of two (docs/probe.md).
 * Leaves errno as it was. Its common path (a known TCP socket, the ring
 * made) reads no thread-local variable: each page touched after a system
 * call costs a TLB walk here (probe_internal.h: HOT). */
HOT static void note_data(int fd, uint8_t dir, uint8_t call, const struct iovec *iov, int iovcnt, uint64_t moved,
                          uint64_t enter, int64_t ret)
{
    fd_slot *s = slot_for(fd);
    if (!s) return;
    int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    if (state == SLOT_OTHER) return;
    uint64_t ts = enter ? enter : stamp_now();
    if (UNLIKELY(state != SLOT_TCP ||
                 __atomic_load_n(&producer.state, __ATOMIC_ACQUIRE) != TT_PRODUCER_READY)) {
        note_data_slow(s, state, fd, dir, call, iov, iovcnt, moved, ts, enter, ret);
        return;
    }
    note_ssl_socket(fd, dir);
    record_data(s, fd, dir, call, TT_PROBE_LAYER_SOCKET, ts, enter, iov, iovcnt, moved, ret);
}

/* A read of n > 0 bytes on fd returned 0: end of the peer's bytes when fd
 * is a TCP socket. Inside SSL_read the TLS layer ends with it (ssl_saw_eof). */
static void note_eof(int fd, uint8_t call)
{
    fd_slot *s = tcp_slot(fd);
    if (!s) return;
    if (UNLIKELY(ssl_depth)) {
        ssl_last_fd = fd;
        ssl_saw_eof = 1;
    }
    record_control(s, fd, TT_PROBE_KIND_EOF, TT_PROBE_DIR_RECV, call, TT_PROBE_LAYER_SOCKET, stamp_now());
}

static uint64_t iov_bytes(const struct iovec *iov, int iovcnt)
{
    uint64_t n = 0;
    for (int i = 0; iov && i < iovcnt; i++) n += iov[i].iov_len;
    return n;
}

/* ---- the hooks ---- */

HOOK HOT ssize_t read(int fd, void *buf, size_t n)
{
    if (!READY()) return syscall(SYS_read, fd, buf, n);
    ssize_t r = real.read(fd, buf, n);
    if (r > 0 && RECORDING()) {
        struct iovec v = {buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_RECV, TT_PROBE_CALL_READ, &v, 1, (uint64_t)r, 0, r);
    } else if (r == 0 && n && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_READ);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (!READY() || !real.read_chk) return n > buflen ? (errno = EFAULT, -1) : syscall(SYS_read, fd, buf, n);
    ssize_t r = real.read_chk(fd, buf, n, buflen);
    if (r > 0 && RECORDING()) {
        struct iovec v = {buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_RECV, TT_PROBE_CALL_READ, &v, 1, (uint64_t)r, 0, r);
    } else if (r == 0 && n && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_READ);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    if (!READY()) return syscall(SYS_readv, fd, iov, iovcnt);
    ssize_t r = real.readv(fd, iov, iovcnt);
    if (r > 0 && RECORDING()) {
        note_data(fd, TT_PROBE_DIR_RECV, TT_PROBE_CALL_READV, iov, iovcnt, (uint64_t)r, 0, r);
    } else if (r == 0 && iov_bytes(iov, iovcnt) && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_READV);
        *errno_p = e;
    }
    return r;
}

/* A receive of `r` bytes with flags: peeked bytes were not delivered and
 * are not counted; MSG_TRUNC bytes were delivered but not copied (a gap). */
HOT static void note_recv(int fd, uint8_t call, int flags, const struct iovec *iov, int iovcnt, ssize_t r)
{
    if (flags & MSG_PEEK) return;
    note_data(fd, TT_PROBE_DIR_RECV, call, (flags & MSG_TRUNC) ? NULL : iov, iovcnt, (uint64_t)r, 0, r);
}

HOOK HOT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    if (!READY()) return syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
    ssize_t r = real.recv(fd, buf, n, flags);
    if (r > 0 && RECORDING()) {
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECV, flags, &v, 1, r);
    } else if (r == 0 && n && !(flags & MSG_PEEK) && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_RECV);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    if (!READY() || !real.recv_chk)
        return n > buflen ? (errno = EFAULT, -1) : syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
    ssize_t r = real.recv_chk(fd, buf, n, buflen, flags);
    if (r > 0 && RECORDING()) {
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECV, flags, &v, 1, r);
    } else if (r == 0 && n && !(flags & MSG_PEEK) && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_RECV);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
    if (!READY()) return syscall(SYS_recvfrom, fd, buf, n, flags, addr, alen);
    ssize_t r = real.recvfrom(fd, buf, n, flags, addr, alen);
    if (r > 0 && RECORDING()) {
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECVFROM, flags, &v, 1, r);
    } else if (r == 0 && n && !(flags & MSG_PEEK) && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_RECVFROM);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
                            socklen_t *alen)
{
    if (!READY() || !real.recvfrom_chk)
        return n > buflen ? (errno = EFAULT, -1) : syscall(SYS_recvfrom, fd, buf, n, flags, addr, alen);
    ssize_t r = real.recvfrom_chk(fd, buf, n, buflen, flags, addr, alen);
    if (r > 0 && RECORDING()) {
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECVFROM, flags, &v, 1, r);
    } else if (r == 0 && n && !(flags & MSG_PEEK) && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_RECVFROM);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    if (!READY()) return syscall(SYS_recvmsg, fd, msg, flags);
    ssize_t r = real.recvmsg(fd, msg, flags);
    if (r > 0 && RECORDING()) {
        note_recv(fd, TT_PROBE_CALL_RECVMSG, flags, msg->msg_iov, (int)msg->msg_iovlen, r);
    } else if (r == 0 && !(flags & MSG_PEEK) && iov_bytes(msg->msg_iov, (int)msg->msg_iovlen) && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_eof(fd, TT_PROBE_CALL_RECVMSG);
        *errno_p = e;
    }
    return r;
}

HOOK int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *timeout)
{
    if (!READY() || !real.recvmmsg) return (int)syscall(SYS_recvmmsg, fd, vec, vlen, flags, timeout);
    int r = real.recvmmsg(fd, vec, vlen, flags, timeout);
    if (r > 0 && RECORDING()) {
        for (int i = 0; i < r; i++)
            if (vec[i].msg_len)
                note_recv(fd, TT_PROBE_CALL_RECVMMSG, flags, vec[i].msg_hdr.msg_iov, (int)vec[i].msg_hdr.msg_iovlen,
                          (ssize_t)vec[i].msg_len);
    }
    return r;
}

/* The entry instant of a send on fd: the instant of the bytes it moves
 * (docs/probe.md). Not taken (0) when fd is known not to be a TCP socket,
 * so writes to files and pipes pay no clock read. */
HOT static uint64_t send_enter(int fd)
{
    if (!RECORDING() || fd < 0 || (size_t)fd >= fd_table_len ||
        __atomic_load_n(&slot_at((size_t)fd)->state, __ATOMIC_RELAXED) == SLOT_OTHER)
        return 0;
    return stamp_now();
}

/* A send with MSG_FASTOPEN connects an unconnected socket: the client end. */
static void note_fastopen(int fd, int flags)
{
    if (!(flags & MSG_FASTOPEN)) return;
    fd_slot *s = slot_for(fd);
    if (s && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_UNKNOWN) s->role = TT_PROBE_ROLE_CLIENT;
}

HOOK HOT ssize_t write(int fd, const void *buf, size_t n)
{
    if (!READY()) return syscall(SYS_write, fd, buf, n);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.write(fd, buf, n);
    if (r > 0 && RECORDING()) {
        struct iovec v = {(void *)buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_WRITE, &v, 1, (uint64_t)r, enter, r);
    }
    return r;
}

HOOK HOT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (!READY()) return syscall(SYS_writev, fd, iov, iovcnt);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.writev(fd, iov, iovcnt);
    if (r > 0 && RECORDING()) {
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_WRITEV, iov, iovcnt, (uint64_t)r, enter, r);
    }
    return r;
}

HOOK HOT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    if (!READY()) return syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.send(fd, buf, n, flags);
    if (r > 0 && RECORDING()) {
        struct iovec v = {(void *)buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SEND, &v, 1, (uint64_t)r, enter, r);
    }
    return r;
}

HOOK HOT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen)
{
    if (!READY()) return syscall(SYS_sendto, fd, buf, n, flags, addr, alen);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.sendto(fd, buf, n, flags, addr, alen);
    if (r > 0 && RECORDING()) {
        note_fastopen(fd, flags);
        struct iovec v = {(void *)buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SENDTO, &v, 1, (uint64_t)r, enter, r);
    }
    return r;
}

HOOK HOT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (!READY()) return syscall(SYS_sendmsg, fd, msg, flags);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.sendmsg(fd, msg, flags);
    if (r > 0 && RECORDING()) {
        note_fastopen(fd, flags);
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SENDMSG, msg->msg_iov, (int)msg->msg_iovlen, (uint64_t)r,
                  enter, r);
    }
    return r;
}

HOOK int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
    if (!READY() || !real.sendmmsg) return (int)syscall(SYS_sendmmsg, fd, vec, vlen, flags);
    uint64_t enter = send_enter(fd);
    int r = real.sendmmsg(fd, vec, vlen, flags);
    if (r > 0 && RECORDING()) {
        for (int i = 0; i < r; i++)
            if (vec[i].msg_len)
                note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SENDMMSG, vec[i].msg_hdr.msg_iov,
                          (int)vec[i].msg_hdr.msg_iovlen, vec[i].msg_len, enter, (int64_t)vec[i].msg_len);
    }
    return r;
}
