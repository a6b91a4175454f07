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
 * The state here is per process by nature (the process's fd table and its
 * ring), so it lives in process globals; nothing in it is per stream. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "probe_abi.h"
#include "probe_ring.h"

#define HOOK __attribute__((visibility("default")))
/* The path of a recorded read or write, kept together in .text.hot: after
 * each system call the TLB is cold again (no PCID, or page-table isolation
 * flushing it), and each page of code the path runs through costs a walk. */
#define HOT __attribute__((hot))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FD_TABLE_MAX (1u << 20)
/* The longest a thread waits for another to finish making the ring. */
#define RING_MAKING_WAIT_NS (50ull * 1000 * 1000)
/* The most bytes of a ring file prefaulted (ring_prefault): the default
 * ring whole; of a larger one, its start (the rest faults in at records). */
#define PREFAULT_MAX (TT_PROBE_HEADER_SIZE + (size_t)TT_PROBE_DEFAULT_RING)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

_Static_assert(sizeof(struct tt_probe_rec) % 8 == 0, "probe record head must stay 8-byte aligned");
_Static_assert(sizeof(struct tt_probe_ring) <= TT_PROBE_HEADER_SIZE, "ring header too large");

enum { SLOT_UNKNOWN = 0, SLOT_OTHER = 1, SLOT_TCP = 2 };

/* What the probe knows about one fd. */
typedef struct fd_slot {
    uint8_t state; /* SLOT_*, read with acquire, written last with release */
    uint8_t role;  /* enum tt_probe_role, kept across a reclassification */
    uint8_t v6;
    uint8_t pad;
    uint16_t lport, rport;
    uint64_t sock_id;
    uint64_t lost[2]; /* bytes dropped per tt_probe_dir, carried by the next record */
    uint8_t laddr[16], raddr[16];
} fd_slot;

typedef struct ssl_st SSL;

/* The real functions, bound once. */
static struct {
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
    int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    ssize_t (*sendmsg)(int, const struct msghdr *, int);
    int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
    int (*close)(int);
    int (*connect)(int, const struct sockaddr *, socklen_t);
    int (*accept)(int, struct sockaddr *, socklen_t *);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*socket)(int, int, int);
    int (*fclose)(FILE *);
    int (*close_range)(unsigned, unsigned, int);
    void (*closefrom)(int);
    ssize_t (*read_chk)(int, void *, size_t, size_t);
    ssize_t (*recv_chk)(int, void *, size_t, size_t, int);
    ssize_t (*recvfrom_chk)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
} real;

/* The OpenSSL functions, found when first needed (libssl may be loaded late). */
static struct {
    int (*read)(SSL *, void *, int);
    int (*read_ex)(SSL *, void *, size_t, size_t *);
    int (*write)(SSL *, const void *, int);
    int (*write_ex)(SSL *, const void *, size_t, size_t *);
    int (*get_fd)(const SSL *);
    int (*get_error)(const SSL *, int);
} real_ssl;

static int reals_state;          /* 0 unbound, 1 binding, 2 bound */
static bool probe_active;        /* recording: the directory checked, the fd table mapped */
static tt_probe_producer producer; /* this process's ring, made at its first record */
static pid_t owner_pid;          /* the process the ring belongs to */
static size_t ring_map_len;
static fd_slot *fd_table;
static size_t fd_table_len;
static size_t fd_high; /* no slot above this one was ever used */
static char ring_dir[512];
static uint64_t ring_bytes;
static bool prefault_ring; /* TT_PROBE_PREFAULT_ENV is "1" */

/* Set while this thread is inside the probe's own set-up (dlsym, ring
 * creation): a wrapped call made from there goes straight to the kernel. */
static __thread int in_probe __attribute__((tls_model("initial-exec")));

/* Inside SSL_read/SSL_write on this thread: the socket the TLS library
 * used meanwhile (for SSL objects with their own BIO, no SSL_get_fd), and
 * the socket each recent SSL object was last seen on. */
#define SSL_FD_CACHE 16
static __thread int ssl_depth __attribute__((tls_model("initial-exec")));
static __thread int ssl_last_fd __attribute__((tls_model("initial-exec")));
static __thread int ssl_saw_eof __attribute__((tls_model("initial-exec"))); /* a socket read returned 0 inside */
/* The TCP socket this thread last read outside SSL calls, plus one (0:
 * none): an SSL object on memory BIOs (asyncio's SSLObject) is fed from it. */
static __thread int thread_recv_fd1 __attribute__((tls_model("initial-exec")));
static __thread struct {
    const void *ssl;
    int fd;
} ssl_fd_cache[SSL_FD_CACHE] __attribute__((tls_model("initial-exec")));

/* This thread's errno, its address found at the thread's first recorded
 * call: the hooks save and restore errno without calling into libc
 * (__errno_location) at every call. */
static __thread int *thread_errno __attribute__((tls_model("initial-exec")));

static inline int *errno_slot(void)
{
    int *p = thread_errno;
    if (UNLIKELY(p == NULL)) thread_errno = p = &errno;
    return p;
}

/* The kernel's vDSO clock_gettime, called directly (found at binding):
 * libc's wrapper around it costs a few ns more per read. */
static int (*vdso_clock_gettime)(clockid_t, struct timespec *);

HOT static uint64_t now_ns(void)
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
static bool bind_reals(void)
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

#define READY() (LIKELY(__atomic_load_n(&reals_state, __ATOMIC_ACQUIRE) == 2) || bind_reals())

/* ---- the ring ---- */

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (n) *p++ = tmp[--n];
    return p;
}

/* Create and map this process's ring file. Only system calls (it runs in a
 * fork child too). Returns true when recording can start. */
static bool ring_create(void)
{
    char path[sizeof ring_dir + 64];
    size_t dl = strlen(ring_dir);
    memcpy(path, ring_dir, dl);
    char *p = path + dl;
    memcpy(p, "/ring.", 6);
    p = put_u64(p + 6, (uint64_t)owner_pid);
    *p++ = '.';
    uint64_t created = now_ns();
    p = put_u64(p, created);
    *p = 0;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    size_t len = TT_PROBE_HEADER_SIZE + ring_bytes;
    void *map = MAP_FAILED;
    if (syscall(SYS_ftruncate, fd, (off_t)len) == 0)
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    syscall(SYS_close, fd);
    if (map == MAP_FAILED) {
        syscall(SYS_unlinkat, AT_FDCWD, path, 0);
        return false;
    }
    struct tt_probe_ring *h = map;
    h->version = TT_PROBE_VERSION;
    h->header_size = TT_PROBE_HEADER_SIZE;
    h->capacity = ring_bytes;
    h->pid = (uint32_t)owner_pid;
    h->ppid = (uint32_t)getppid();
    h->created_mono_ns = created;
    __atomic_store_n(&h->magic, TT_PROBE_MAGIC, __ATOMIC_RELEASE);
    tt_producer_attach(&producer, h, (uint8_t *)map + TT_PROBE_HEADER_SIZE, ring_bytes);
    ring_map_len = len;
    return true;
}

/* With TOKENTAP_PROBE_PREFAULT=1: the ring just made and published gets
 * its pages (up to PREFAULT_MAX bytes of them) allocated and mapped now
 * (MADV_POPULATE_WRITE, Linux 5.14; a kernel without it, or a populate that
 * fails, leaves the faults to the records as without it), and touched, so
 * that records take no page fault and the first lap costs what the later
 * ones do. The calling thread pays for it, once, inside the call that made
 * the ring (the process's first TCP socket(), typically: milliseconds,
 * docs/probe.md); other threads record meanwhile. Off by default: that
 * stall would land on the program's first request. */
static void ring_prefault(void)
{
    size_t len = ring_map_len, prefault = len < PREFAULT_MAX ? len : PREFAULT_MAX;
    uint8_t *map = (uint8_t *)producer.head;
    if (madvise(map, prefault, MADV_POPULATE_WRITE) != 0) return;
    /* One read per page as well: under a hypervisor that builds its page
     * tables lazily (shadow paging) the first access of each page from
     * this process still traps after the populate; elsewhere this is a TLB
     * miss per page. */
    for (size_t off = 0; off < prefault; off += 4096) (void)*(volatile const uint8_t *)(map + off);
}

/* Another thread is making the ring: wait for it, yielding the CPU, up to
 * RING_MAKING_WAIT_NS. Making it is a handful of system calls (tens of
 * microseconds, milliseconds on a loaded machine), and it happens once, at
 * the process's first TCP socket(): threads that open their first
 * connections together (a client pool starting its first requests) would
 * otherwise lose those connections' first records (their requests) to
 * early drops. The thread making the ring never gets here (in_probe).
 * True when the ring was made. */
static bool ring_wait_made(void)
{
    uint64_t deadline = 0;
    for (;;) {
        int state = __atomic_load_n(&producer.state, __ATOMIC_ACQUIRE);
        if (state != TT_PRODUCER_CREATING) return state == TT_PRODUCER_READY;
        uint64_t t = now_ns();
        if (!deadline) deadline = t + RING_MAKING_WAIT_NS;
        else if (t > deadline) return false;
        syscall(SYS_sched_yield);
    }
}

/* This process's ring, made now when it is the first record: a process
 * that never records (a shell that execs, a fork child that execs) makes
 * none. While another thread is making it, waits for that (bounded, see
 * ring_wait_made). False when it could not be made, or took too long. */
static bool ring_ready(void)
{
    int state = __atomic_load_n(&producer.state, __ATOMIC_ACQUIRE);
    if (LIKELY(state == TT_PRODUCER_READY)) return true;
    if (state == TT_PRODUCER_CREATING) return ring_wait_made();
    if (state != TT_PRODUCER_NONE) return false;
    if (!__atomic_compare_exchange_n(&producer.state, &state, TT_PRODUCER_CREATING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    in_probe++;
    bool ok = ring_create();
    if (ok) tt_producer_publish(&producer);
    else __atomic_store_n(&producer.state, TT_PRODUCER_FAILED, __ATOMIC_RELEASE);
    if (ok && prefault_ring) ring_prefault();
    in_probe--;
    return ok;
}

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

HOT static fd_slot *slot_for(int fd)
{
    if (UNLIKELY(fd < 0)) return NULL;
    if (UNLIKELY((size_t)fd >= fd_table_len)) {
        if (__atomic_load_n(&producer.state, __ATOMIC_ACQUIRE) == TT_PRODUCER_READY)
            __atomic_fetch_add(&producer.head->untracked_fds, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return &fd_table[fd];
}

/* fd's slot is about to hold something: loops over the table stop at fd_high. */
static void note_high(int fd)
{
    size_t high = __atomic_load_n(&fd_high, __ATOMIC_RELAXED);
    while ((size_t)fd > high &&
           !__atomic_compare_exchange_n(&fd_high, &high, (size_t)fd, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}
}

static void slot_reset(int fd, uint8_t role)
{
    if (fd < 0 || (size_t)fd >= fd_table_len) return;
    if (role) note_high(fd);
    fd_slot *s = &fd_table[fd];
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
static fd_slot *tcp_slot(int fd)
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
    r->flags = s->v6 ? TT_PROBE_F_IPV6 : 0;
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
HOT static void record_data(fd_slot *s, int fd, uint8_t dir, uint8_t call, uint8_t layer, uint64_t ts, uint64_t enter,
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
    tt_producer_commit(r, pos);
    tt_producer_prefetch(&producer, pos + need);
}

/* A record without data (CLOSE; EOF, dir RECV, at either layer). */
static void record_control(fd_slot *s, int fd, uint8_t kind, uint8_t dir, uint8_t call, uint8_t layer, uint64_t ts)
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
    tt_producer_commit(r, pos);
}

/* Bytes moved on fd by a call that returned `moved` > 0 (or a sum of
 * them); enter is the entry instant for sends, 0 otherwise. A send's record
 * is stamped with its entry instant only (ts_ns = enter_ns): the instant of
 * its bytes, and one clock read per call instead of two (docs/probe.md). */
HOT static void note_data(int fd, uint8_t dir, uint8_t call, const struct iovec *iov, int iovcnt, uint64_t moved,
                      uint64_t enter, int64_t ret)
{
    fd_slot *s = slot_for(fd);
    if (!s || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_OTHER) return;
    uint64_t ts = enter ? enter : now_ns();
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_TCP && slot_classify(fd, s) != SLOT_TCP) return;
    if (UNLIKELY(ssl_depth)) ssl_last_fd = fd;
    else if (dir == TT_PROBE_DIR_RECV) thread_recv_fd1 = fd + 1;
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
    record_control(s, fd, TT_PROBE_KIND_EOF, TT_PROBE_DIR_RECV, call, TT_PROBE_LAYER_SOCKET, now_ns());
}

static uint64_t iov_bytes(const struct iovec *iov, int iovcnt)
{
    uint64_t n = 0;
    for (int i = 0; iov && i < iovcnt; i++) n += iov[i].iov_len;
    return n;
}

static bool slot_in_use(const fd_slot *s)
{
    return s && (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_UNKNOWN || s->role != 0);
}

/* The fd is going away (close, or replaced by dup2/dup3): a CLOSE record
 * when it was a tracked socket, and the slot forgets it. A vfork child
 * (sharing the parent's memory) leaves the parent's table alone. */
static void note_fd_gone(int fd, uint8_t call)
{
    fd_slot *s = slot_for(fd);
    if (!slot_in_use(s)) return;
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_TCP) {
        if (getpid() != owner_pid) return;
        record_control(s, fd, TT_PROBE_KIND_CLOSE, 0, call, TT_PROBE_LAYER_SOCKET, now_ns());
    }
    slot_reset(fd, TT_PROBE_ROLE_UNKNOWN);
}

/* ---- set-up ---- */

static void on_fork_child(void)
{
    if (!probe_active) return;
    /* Not READY first: a signal handler running meanwhile must not touch
     * the parent's ring while it is unmapped. in_probe keeps such a handler
     * from recording at all (it would wait on itself in ring_wait_made). */
    in_probe++;
    int state = __atomic_exchange_n(&producer.state, TT_PRODUCER_CREATING, __ATOMIC_SEQ_CST);
    __atomic_store_n(&producer.early_drop_records, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&producer.early_drop_bytes, 0, __ATOMIC_SEQ_CST);
    if (state == TT_PRODUCER_READY) munmap(producer.head, ring_map_len);
    producer.head = NULL;
    producer.data = NULL;
    producer.seen_consumed = 0;
    owner_pid = getpid();
    size_t high = fd_high < fd_table_len ? fd_high + 1 : fd_table_len;
    for (size_t i = 0; i < high; i++) {
        if (fd_table[i].lost[0] | fd_table[i].lost[1]) {
            fd_table[i].lost[0] = 0;
            fd_table[i].lost[1] = 0;
        }
    }
    __atomic_store_n(&producer.state, TT_PRODUCER_NONE, __ATOMIC_RELEASE);
    in_probe--;
}

static void on_exit_mark(void)
{
    if (__atomic_load_n(&producer.state, __ATOMIC_ACQUIRE) == TT_PRODUCER_READY && getpid() == owner_pid)
        __atomic_store_n(&producer.head->exited, 1, __ATOMIC_RELEASE);
}

/* Active only when TOKENTAP_PROBE_DIR names a directory `tokentap run`
 * made: owned by this user, mode 0700, with the marker file in it. */
__attribute__((constructor)) static void probe_init(void)
{
    bind_reals();
    const char *dir = getenv(TT_PROBE_DIR_ENV);
    if (!dir || !*dir || strlen(dir) >= sizeof ring_dir) return;
    in_probe++;
    struct stat st;
    char marker[sizeof ring_dir + sizeof TT_PROBE_MARKER + 2];
    snprintf(marker, sizeof marker, "%s/%s", dir, TT_PROBE_MARKER);
    bool ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 0777) == 0700 &&
              stat(marker, &st) == 0 && S_ISREG(st.st_mode);
    if (ok) {
        strcpy(ring_dir, dir);
        uint64_t bytes = TT_PROBE_DEFAULT_RING;
        const char *kb = getenv(TT_PROBE_RING_ENV);
        if (kb && *kb) {
            char *end;
            unsigned long long v = strtoull(kb, &end, 10);
            if (!*end && v) bytes = (uint64_t)v << 10;
        }
        if (bytes < TT_PROBE_MIN_RING) bytes = TT_PROBE_MIN_RING;
        if (bytes > TT_PROBE_MAX_RING) bytes = TT_PROBE_MAX_RING;
        uint64_t pow2 = TT_PROBE_MIN_RING;
        while (pow2 < bytes) pow2 <<= 1;
        ring_bytes = pow2;
        const char *pf = getenv(TT_PROBE_PREFAULT_ENV);
        prefault_ring = pf && strcmp(pf, "1") == 0;
        struct rlimit rl;
        size_t n = 65536;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > n) n = rl.rlim_cur;
        if (n > FD_TABLE_MAX) n = FD_TABLE_MAX;
        void *t = mmap(NULL, n * sizeof(fd_slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t != MAP_FAILED) {
            fd_table = t;
            fd_table_len = n;
            owner_pid = getpid();
            pthread_atfork(NULL, NULL, on_fork_child);
            atexit(on_exit_mark);
            __atomic_store_n(&probe_active, true, __ATOMIC_RELEASE);
        }
    }
    in_probe--;
}

#define ACTIVE() LIKELY(__atomic_load_n(&probe_active, __ATOMIC_RELAXED) && !in_probe)

/* ---- the hooks ---- */

HOOK HOT ssize_t read(int fd, void *buf, size_t n)
{
    if (!READY()) return syscall(SYS_read, fd, buf, n);
    ssize_t r = real.read(fd, buf, n);
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_RECV, TT_PROBE_CALL_READ, &v, 1, (uint64_t)r, 0, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_RECV, TT_PROBE_CALL_READ, &v, 1, (uint64_t)r, 0, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_data(fd, TT_PROBE_DIR_RECV, TT_PROBE_CALL_READV, iov, iovcnt, (uint64_t)r, 0, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECV, flags, &v, 1, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECV, flags, &v, 1, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECVFROM, flags, &v, 1, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {buf, (size_t)r};
        note_recv(fd, TT_PROBE_CALL_RECVFROM, flags, &v, 1, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_recv(fd, TT_PROBE_CALL_RECVMSG, flags, msg->msg_iov, (int)msg->msg_iovlen, r);
        *errno_p = e;
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        for (int i = 0; i < r; i++)
            if (vec[i].msg_len)
                note_recv(fd, TT_PROBE_CALL_RECVMMSG, flags, vec[i].msg_hdr.msg_iov, (int)vec[i].msg_hdr.msg_iovlen,
                          (ssize_t)vec[i].msg_len);
        *errno_p = e;
    }
    return r;
}

/* The entry instant of a send on fd: the instant of the bytes it moves
 * (docs/probe.md). Not taken (0) when fd is known not to be a TCP socket,
 * so writes to files and pipes pay no clock read. */
HOT static uint64_t send_enter(int fd)
{
    if (!ACTIVE() || fd < 0 || (size_t)fd >= fd_table_len ||
        __atomic_load_n(&fd_table[fd].state, __ATOMIC_RELAXED) == SLOT_OTHER)
        return 0;
    return now_ns();
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
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {(void *)buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_WRITE, &v, 1, (uint64_t)r, enter, r);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (!READY()) return syscall(SYS_writev, fd, iov, iovcnt);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.writev(fd, iov, iovcnt);
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_WRITEV, iov, iovcnt, (uint64_t)r, enter, r);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    if (!READY()) return syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.send(fd, buf, n, flags);
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        struct iovec v = {(void *)buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SEND, &v, 1, (uint64_t)r, enter, r);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen)
{
    if (!READY()) return syscall(SYS_sendto, fd, buf, n, flags, addr, alen);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.sendto(fd, buf, n, flags, addr, alen);
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_fastopen(fd, flags);
        struct iovec v = {(void *)buf, (size_t)r};
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SENDTO, &v, 1, (uint64_t)r, enter, r);
        *errno_p = e;
    }
    return r;
}

HOOK HOT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (!READY()) return syscall(SYS_sendmsg, fd, msg, flags);
    uint64_t enter = send_enter(fd);
    ssize_t r = real.sendmsg(fd, msg, flags);
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_fastopen(fd, flags);
        note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SENDMSG, msg->msg_iov, (int)msg->msg_iovlen, (uint64_t)r,
                  enter, r);
        *errno_p = e;
    }
    return r;
}

HOOK int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
    if (!READY() || !real.sendmmsg) return (int)syscall(SYS_sendmmsg, fd, vec, vlen, flags);
    uint64_t enter = send_enter(fd);
    int r = real.sendmmsg(fd, vec, vlen, flags);
    if (r > 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        for (int i = 0; i < r; i++)
            if (vec[i].msg_len)
                note_data(fd, TT_PROBE_DIR_SEND, TT_PROBE_CALL_SENDMMSG, vec[i].msg_hdr.msg_iov,
                          (int)vec[i].msg_hdr.msg_iovlen, vec[i].msg_len, enter, (int64_t)vec[i].msg_len);
        *errno_p = e;
    }
    return r;
}

HOOK int close(int fd)
{
    if (!READY()) return (int)syscall(SYS_close, fd);
    if (ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_fd_gone(fd, TT_PROBE_CALL_CLOSE);
        *errno_p = e;
    }
    return real.close(fd);
}

HOOK int fclose(FILE *f)
{
    if (!READY()) {
        int (*direct)(FILE *) = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
        return direct ? direct(f) : EOF;
    }
    if (f && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_fd_gone(fileno(f), TT_PROBE_CALL_CLOSE);
        *errno_p = e;
    }
    return real.fclose(f);
}

/* Every fd in [first, last] forgotten (close_range, closefrom). */
static void note_range_gone(unsigned first, unsigned last)
{
    size_t high = __atomic_load_n(&fd_high, __ATOMIC_ACQUIRE);
    for (size_t fd = first; fd <= high && fd < fd_table_len && fd <= last; fd++)
        if (slot_in_use(&fd_table[fd])) note_fd_gone((int)fd, TT_PROBE_CALL_CLOSE);
}

HOOK int close_range(unsigned first, unsigned last, int flags)
{
    if (!READY() || !real.close_range) return (int)syscall(SYS_close_range, first, last, flags);
    int r = real.close_range(first, last, flags);
    if (r == 0 && ACTIVE() && !(flags & CLOSE_RANGE_CLOEXEC)) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_range_gone(first, last);
        *errno_p = e;
    }
    return r;
}

HOOK void closefrom(int lowfd)
{
    if (!READY() || !real.closefrom) {
        syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0);
        return;
    }
    if (ACTIVE() && lowfd >= 0) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_range_gone((unsigned)lowfd, ~0u);
        *errno_p = e;
    }
    real.closefrom(lowfd);
}

HOOK int connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
    if (!READY()) return (int)syscall(SYS_connect, fd, addr, alen);
    int r = real.connect(fd, addr, alen);
    if (ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        if (r == 0 || e == EINPROGRESS) slot_reset(fd, TT_PROBE_ROLE_CLIENT);
        *errno_p = e;
    }
    return r;
}

HOOK int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
    if (!READY()) return (int)syscall(SYS_accept4, fd, addr, alen, 0);
    int r = real.accept(fd, addr, alen);
    if (r >= 0 && ACTIVE()) slot_reset(r, TT_PROBE_ROLE_SERVER);
    return r;
}

HOOK int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    if (!READY()) return (int)syscall(SYS_accept4, fd, addr, alen, flags);
    int r = real.accept4(fd, addr, alen, flags);
    if (r >= 0 && ACTIVE()) slot_reset(r, TT_PROBE_ROLE_SERVER);
    return r;
}

/* A process making a TCP socket makes its ring now, before it can have
 * threads racing to record on it: a record made while another thread is
 * still making the ring is dropped (counted), never waited for. */
HOOK int socket(int domain, int type, int protocol)
{
    if (!READY()) return (int)syscall(SYS_socket, domain, type, protocol);
    int r = real.socket(domain, type, protocol);
    if (r >= 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        slot_reset(r, TT_PROBE_ROLE_UNKNOWN);
        if ((domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM) ring_ready();
        *errno_p = e;
    }
    return r;
}

/* newfd now names what oldfd names: its slot becomes a copy. */
static void slot_copy(int oldfd, int newfd)
{
    fd_slot *from = slot_for(oldfd), *to = slot_for(newfd);
    if (!to) return;
    note_high(newfd);
    if (!from) {
        slot_reset(newfd, TT_PROBE_ROLE_UNKNOWN);
        return;
    }
    uint8_t state = __atomic_load_n(&from->state, __ATOMIC_ACQUIRE);
    __atomic_store_n(&to->state, SLOT_UNKNOWN, __ATOMIC_RELEASE);
    to->role = from->role;
    to->v6 = from->v6;
    to->lport = from->lport;
    to->rport = from->rport;
    to->sock_id = from->sock_id;
    memcpy(to->laddr, from->laddr, 16);
    memcpy(to->raddr, from->raddr, 16);
    __atomic_store_n(&to->lost[0], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&to->lost[1], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&to->state, state, __ATOMIC_RELEASE);
}

HOOK int dup(int fd)
{
    if (!READY()) return (int)syscall(SYS_dup, fd);
    int r = real.dup(fd);
    if (r >= 0 && ACTIVE()) slot_copy(fd, r);
    return r;
}

HOOK int dup2(int oldfd, int newfd)
{
    if (!READY()) return (int)syscall(SYS_dup3, oldfd, newfd, 0);
    if (oldfd != newfd && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        if (slot_in_use(slot_for(newfd)) && fcntl(oldfd, F_GETFD) >= 0) note_fd_gone(newfd, TT_PROBE_CALL_DUP2);
        *errno_p = e;
    }
    int r = real.dup2(oldfd, newfd);
    if (r >= 0 && oldfd != newfd && ACTIVE()) slot_copy(oldfd, newfd);
    return r;
}

HOOK int dup3(int oldfd, int newfd, int flags)
{
    if (!READY()) return (int)syscall(SYS_dup3, oldfd, newfd, flags);
    if (oldfd != newfd && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        if (slot_in_use(slot_for(newfd)) && fcntl(oldfd, F_GETFD) >= 0) note_fd_gone(newfd, TT_PROBE_CALL_DUP2);
        *errno_p = e;
    }
    int r = real.dup3(oldfd, newfd, flags);
    if (r >= 0 && ACTIVE()) slot_copy(oldfd, newfd);
    return r;
}

/* ---- OpenSSL: the tls vantage ---- */

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
    uint64_t ts = enter ? enter : now_ns();
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
                          now_ns());
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
    uint64_t enter = ACTIVE() ? now_ns() : 0;
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
    uint64_t enter = ACTIVE() ? now_ns() : 0;
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
