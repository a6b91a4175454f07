/* probe_internal.h - what the files of libtokentap-probe.so share:
 *   probe.c        the process's state, binding the real functions, the fd
 *                  table, the records and the data hooks (the hot path);
 *   probe_setup.c  the ring file, and the process's set-up (the constructor,
 *                  fork and exit);
 *   probe_fds.c    the hooks that make, copy and end fds (socket, connect,
 *                  accept, dup, close and its kin);
 *   probe_tls.c    the OpenSSL hooks (the tls layer).
 * Not an ABI (that is probe_abi.h). The library is built with
 * -fvisibility=hidden: nothing declared here leaves it; only the hooks
 * (HOOK, probe.map) are exported. */
#ifndef TT_PROBE_INTERNAL_H
#define TT_PROBE_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

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

/* The real functions, bound once (bind_reals). */
struct probe_reals {
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
};
extern struct probe_reals real;

/* The process's state (probe.c). The state is per process by nature (the
 * process's fd table and its ring), so it lives in process globals;
 * nothing in it is per stream. */
extern int reals_state;           /* 0 unbound, 1 binding, 2 bound */
extern bool probe_active;         /* recording: the directory checked, the fd table mapped */
extern bool stamp_tsc;            /* records are stamped with the TSC (stamp_now) */
extern bool ssl_seen;             /* the process made an SSL object: note_data tracks sockets for probe_tls.c */
extern tt_probe_producer producer; /* this process's ring, made at its first record */
extern pid_t owner_pid;           /* the process the ring belongs to */
extern size_t ring_map_len;
extern fd_slot *fd_table;
extern size_t fd_table_len; /* at least FD_LOW once the probe is active */
extern size_t fd_high; /* no slot above this one was ever used */
extern char ring_dir[512];
extern uint64_t ring_bytes;
extern bool prefault_ring; /* TT_PROBE_PREFAULT_ENV is "1" */

/* Set while this thread is inside the probe's own set-up (dlsym, ring
 * creation): a wrapped call made from there goes straight to the kernel. */
extern __thread int in_probe __attribute__((tls_model("initial-exec")));
/* Inside SSL_read/SSL_write on this thread (probe_tls.c): the depth, the
 * socket the TLS library used meanwhile, and whether a socket read inside
 * returned 0 (end of file). */
extern __thread int ssl_depth __attribute__((tls_model("initial-exec")));
extern __thread int ssl_last_fd __attribute__((tls_model("initial-exec")));
extern __thread int ssl_saw_eof __attribute__((tls_model("initial-exec")));
/* The TCP socket this thread last read outside SSL calls, plus one (0:
 * none): an SSL object on memory BIOs (asyncio's SSLObject) is fed from it. */
extern __thread int thread_recv_fd1 __attribute__((tls_model("initial-exec")));
/* This thread's errno, its address found at the thread's first recorded
 * call: the hooks save and restore errno without calling into libc
 * (__errno_location) at every call. */
extern __thread int *thread_errno __attribute__((tls_model("initial-exec")));

static inline int *errno_slot(void)
{
    int *p = thread_errno;
    if (UNLIKELY(p == NULL)) thread_errno = p = &errno;
    return p;
}

/* The slots of fds below FD_LOW live in the probe's .bss, on the page of
 * the globals the common path reads (producer, probe_active, ...): one
 * TLB walk for both after a system call instead of two. The rest are in
 * fd_table (mapped at start-up; its low slots unused).
 * tests/e2e/test_probe_layout.sh checks that .bss fits one page. */
#define FD_LOW 40
extern fd_slot fd_low[FD_LOW];

/* fd's slot; fd < fd_table_len. */
static inline fd_slot *slot_at(size_t fd)
{
    return fd < FD_LOW ? &fd_low[fd] : &fd_table[fd];
}

/* Bind every real function once (probe.c). False while binding is under
 * way (this thread recursing from dlsym, or another thread binding): the
 * caller then uses the raw system call. */
bool bind_reals(void);

#define READY() (LIKELY(__atomic_load_n(&reals_state, __ATOMIC_ACQUIRE) == 2) || bind_reals())
#define ACTIVE() LIKELY(__atomic_load_n(&probe_active, __ATOMIC_RELAXED) && !in_probe)
/* ACTIVE without its thread-local read, for the data hooks: note_data
 * leaves the probe's own calls alone where they can reach it (note_data_slow). */
#define RECORDING() LIKELY(__atomic_load_n(&probe_active, __ATOMIC_RELAXED))

/* CLOCK_MONOTONIC in ns, through the vDSO directly (probe.c). */
uint64_t mono_ns(void);

/* A record's instant: the TSC when stamp_tsc (`tokentap run` asked for it,
 * TT_PROBE_CLOCK_ENV; the records say so with TT_PROBE_F_TSC), else
 * mono_ns. The TSC is read in the core, where the vDSO's clock touches
 * three pages, each a TLB walk after a system call here (HOT). */
static inline uint64_t stamp_now(void)
{
#if defined(__x86_64__)
    if (LIKELY(stamp_tsc)) return __builtin_ia32_rdtsc();
#endif
    return mono_ns();
}

/* This process's ring, made now when it is the first record; waits
 * (bounded) while another thread makes it. False when there is none
 * (probe_setup.c). */
bool ring_ready(void);

/* The fd table (probe.c). slot_for: fd's slot, or NULL (out of the table,
 * counted). slot_reset: fd is about to hold something new (role: what is
 * known of it). note_high: fd's slot is about to be used. tcp_slot: fd's
 * slot when fd is a tracked TCP socket, else NULL. */
fd_slot *slot_for(int fd);
void slot_reset(int fd, uint8_t role);
void note_high(int fd);
fd_slot *tcp_slot(int fd);

/* Records (probe.c). record_data: the `total` bytes a call moved on fd,
 * gathered from iov (NULL: not handed to the program); record_control: a
 * record without data (CLOSE, EOF). Both drop (counted) when the ring has
 * no room. */
void record_data(fd_slot *s, int fd, uint8_t dir, uint8_t call, uint8_t layer, uint64_t ts, uint64_t enter,
                 const struct iovec *iov, int iovcnt, uint64_t total, int64_t ret);
void record_control(fd_slot *s, int fd, uint8_t kind, uint8_t dir, uint8_t call, uint8_t layer, uint64_t ts);

/* The fd is going away (close, or replaced by dup2/dup3): a CLOSE record
 * when it was a tracked socket, and the slot forgets it (probe_fds.c). */
void note_fd_gone(int fd, uint8_t call);

#endif
