// SPDX-License-Identifier: GPL-2.0
/* socktap.bpf.c - the server and client vantages: the bytes a process
 * writes to and reads from its TCP sockets, stamped where the syscall
 * entered (writes) or returned (reads). CO-RE, syscall tracepoints (the
 * data syscalls optionally through tp_btf sys_enter/sys_exit:
 * socktap_raw.bpf.h).
 * Event ABI: socktap.h. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "socktap.h"

#define AF_INET 2
#define AF_INET6 10
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define TT_IPPROTO_TCP 6

char LICENSE[] SEC("license") = "GPL";

/* Records are committed without waking the reader (a wakeup is an
 * interrupt paid inside the traced syscall, several microseconds); the
 * reader polls on a timer instead. Once a CPU has committed wake_bytes
 * since the reader last drained the ring, its next record wakes the reader
 * anyway, so a burst never waits a whole poll period. Userspace sets it
 * before load from the ring size and the CPU count (tt_bpf_wake_bytes). */
const volatile __u32 wake_bytes = 256 << 10;

/* What a syscall's enter leaves for its exit, in the thread's own task
 * storage (no hash update or delete per syscall). */
struct call_args {
    __u64 buf;      /* data buffer, iovec array, user_msghdr or mmsghdr array */
    __u64 count;    /* iovec entries (readv, writev), messages (recvmmsg, sendmmsg) */
    __u64 enter_ns;
    __u64 sk;       /* the TCP sock behind fd, found at enter (0 for accept) */
    __s32 fd;
    __u32 syscall;
    __u32 pending;  /* set at enter, cleared at exit */
    __u32 not_copied; /* count the bytes, do not copy them: one message of a recvmmsg or sendmmsg
                         seen at the socket layer's hook (socktap_state.bpf.h) */
    /* An SSL call in progress on this thread (socktap_tls.bpf.h): its
     * arguments, and the socket the library moved bytes on inside it. */
    __u64 tls_ssl, tls_buf, tls_len_ptr, tls_enter_ns, tls_sk;
    __u64 tls_socket_ns; /* the call's first socket write enter (SSL_write), last socket read exit (SSL_read) */
    __s32 tls_fd;
    __u8 tls_dir, tls_ex, tls_active;
    /* For libraries that move their ciphertext outside the SSL calls
     * (memory BIOs, Node.js): the thread's last socket read, and an SSL
     * object whose plaintext writes wait for the thread's next socket
     * write (with the pending bytes the ring buffer refused). */
    __u64 last_recv_sk, last_recv_exit_ns;
    __s32 last_recv_fd;
    __u8 tls_pending;
    __u64 tls_pending_ssl, tls_pending_lost;
    /* The thread's send as tcp_sendmsg_locked first saw it (socktap_send.bpf.h):
     * its socket, user buffer and length, and the instant; send_ns 0 when
     * there is none, and cleared by the write or sendto exit that takes it. */
    __u64 send_sk, send_buf, send_len, send_ns;
    /* Where the thread's syscall registers are (task_syscall_regs): the top
     * of its kernel stack, fixed for its life; 0 until first looked up. */
    __u64 regs_at;
};

/* One data syscall as exit_data takes it: for a send, what its stamp or
 * enter kept; for a receive, what on_exit_recv read at its exit. */
struct data_call {
    __u64 buf;        /* data buffer, iovec array, user_msghdr or mmsghdr array */
    __u64 count;      /* iovec entries (readv, writev), messages (recvmmsg, sendmmsg) */
    __u64 enter_ns;   /* a send's stamp or enter; a receive's exit */
    __u64 sk;         /* the TCP sock */
    __s32 fd;
    __u32 syscall;
    __u32 not_copied; /* count the bytes, do not copy them (call_args) */
};

static __always_inline int tls_pair_pending(struct call_args *a, struct sock *sk, __s32 fd, __u32 syscall);
#if defined(__TARGET_ARCH_x86)
static __always_inline void announce_accept(struct sock *sk, const struct pt_regs *regs);
#endif

struct lost_key {
    __u64 sock_id;
    __u32 dir;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct call_args);
} args_by_task SEC(".maps");

/* task's call_args (task: the current task), or NULL while it has none
 * (thread_args makes them). */
static __always_inline struct call_args *task_args(struct task_struct *task)
{
    return bpf_task_storage_get(&args_by_task, task, 0, 0);
}

/* LRU: the entry of a socket that died with bytes owed is evicted, not kept
 * until the map is full. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, struct lost_key);
    __type(value, __u64);
} lost_bytes SEC(".maps");

/* Set once any byte was ever owed in lost_bytes: until then no record
 * looks the map up (the loss-free common case pays no lookup). */
volatile __u32 lost_ever = 0;

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20); /* userspace may change it before load */
} events SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, TT_SOCKTAP_STAT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} stats SEC(".maps");

/* The walk over what one data syscall moved: messages (one, or up to
 * TT_SOCKTAP_MAX_MMSG of an mmsghdr array), each in one buffer or an iovec
 * array, copied in pieces. */
struct copy_state {
    __u64 base, left;          /* the current buffer and what is left of it */
    __u64 iov_at, iov_count;   /* the current message's iovec array, when there is one */
    __u64 mmsg_at;             /* the mmsghdr array (recvmmsg, sendmmsg) */
    __u64 lost, sock_id;       /* bytes owed to this (sock, dir) before the next record */
    __u32 total, done, pieces, iov_next; /* of the current message */
    __u32 msg_next, msg_count; /* mmsghdr entries loaded / to load */
    __u8 dir, base_flags, failed, rb_failed, walked;
};

/* Per CPU: the record being built and the state of the walk. The state
 * lives in a map value rather than on the stack so that the verifier does
 * not track its counters exactly from one bpf_loop step to the next (which
 * multiplies the states it explores). */
struct scratch_rec {
    struct copy_state st;
    struct tt_socktap_event ev;
    __u8 data[TT_SOCKTAP_MAX_COPY + 8 + TT_SOCKTAP_READY_HELD * sizeof(struct tt_socktap_mark)]; /* with the marks */
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch_rec);
} scratch SEC(".maps");

/* Per CPU: the bytes of records this CPU committed since the reader last
 * drained the ring (userspace zeroes it after each drain). Counted here
 * rather than asked of the ring (bpf_ringbuf_query), which reads the
 * consumer's position, a cache line the reader on another CPU writes: that
 * query was 20 to 40 ns of each record's program (bpf_stats). A nested
 * program on the same CPU (softirq) may lose an addition: a wakeup then
 * comes a record later. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} unwoken_bytes SEC(".maps");

/* The commit flags of a record of `size` bytes: no wakeup, unless this CPU
 * has now committed wake_bytes unread. */
static __always_inline __u64 rb_flags(__u64 size)
{
    __u32 zero = 0;
    __u64 *unwoken = bpf_map_lookup_elem(&unwoken_bytes, &zero);
    if (!unwoken) return BPF_RB_NO_WAKEUP;
    __u64 now = *unwoken + size;
    if (now < wake_bytes) {
        *unwoken = now;
        return BPF_RB_NO_WAKEUP;
    }
    *unwoken = 0;
    return BPF_RB_FORCE_WAKEUP;
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
    __u64 *v = bpf_map_lookup_elem(&stats, &idx);
    if (v) *v += n;
}

#include "socktap_filter.bpf.h"

/* The kernel's own view of an address as a read-only typed pointer: the
 * verifier then turns field loads into plain loads guarded by the
 * exception table (a fault reads 0) instead of a bpf_probe_read_kernel
 * call per field. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define AS_KERNEL(type, p) ((type *)bpf_rdonly_cast((const void *)(p), bpf_core_type_id_kernel(type)))

/* Whether sk is a TCP sock of the IPv4 or IPv6 family. */
static __always_inline bool sk_inet_tcp(const struct sock *sk)
{
    __u16 family = sk->__sk_common.skc_family;
    return sk->sk_protocol == TT_IPPROTO_TCP && (family == AF_INET || family == AF_INET6);
}

/* The TCP sock behind fd in the current task, or NULL. One helper call
 * (the fd array entry); every other step is a direct load. */
static __always_inline struct sock *tcp_sock_of_fd(__s32 fd)
{
    struct task_struct *task = bpf_get_current_task_btf();
    struct files_struct *files = task->files;
    if (!files) return NULL;
    struct fdtable *fdt = files->fdt;
    if (!fdt || (unsigned int)fd >= fdt->max_fds) return NULL;
    struct file **fds = fdt->fd;
    struct file *fp = NULL;
    if (bpf_probe_read_kernel(&fp, sizeof fp, &fds[fd]) != 0 || !fp) return NULL;
    struct file *f = AS_KERNEL(struct file, fp);
    struct inode *inode = f->f_inode;
    if (!inode || (inode->i_mode & S_IFMT) != S_IFSOCK) return NULL;
    struct socket *sock = AS_KERNEL(struct socket, f->private_data);
    if (!sock) return NULL;
    struct sock *sk = sock->sk;
    return sk && sk_inet_tcp(sk) ? sk : NULL;
}

/* sk when it is an IPv4 or IPv6 TCP sock that a process holds through a
 * file, else NULL: what tcp_sock_of_fd would have found, for the socket
 * layer's hooks that hand the sock over (socktap_sock.bpf.h). A kernel
 * socket (a network filesystem's, read inside a task's read of a file)
 * has no file and is turned away. */
static __always_inline struct sock *tcp_user_sock(struct sock *sk)
{
    if (!sk_inet_tcp(sk)) return NULL;
    struct socket *sock = sk->sk_socket;
    if (!sock || !sock->file) return NULL;
    return sk;
}

/* Whether the port filter turns sk away (neither end on targ_port). */
static __always_inline bool sk_port_rejected(const struct sock *sk)
{
    return targ_port && sk->__sk_common.skc_num != targ_port && bpf_ntohs(sk->__sk_common.skc_dport) != targ_port;
}

static __always_inline void fill_tuple(struct tt_socktap_event *ev, struct sock *sk_addr)
{
    struct sock_common *skc = &AS_KERNEL(struct sock, sk_addr)->__sk_common;
    __u16 family = skc->skc_family;
    ev->family = family;
    ev->lport = skc->skc_num;
    ev->rport = bpf_ntohs(skc->skc_dport);
    /* laddr/raddr are only 2-byte aligned in the record: copied 4 bytes at
     * a time through memcpy, which stores them as halves. */
    __u32 l[4] = {}, r[4] = {};
    if (family == AF_INET6) {
        ev->flags |= TT_SOCKTAP_F_IPV6;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            l[i] = skc->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
            r[i] = skc->skc_v6_daddr.in6_u.u6_addr32[i];
        }
    } else {
        l[0] = skc->skc_rcv_saddr;
        r[0] = skc->skc_daddr;
    }
    __builtin_memcpy(ev->laddr, l, sizeof l);
    __builtin_memcpy(ev->raddr, r, sizeof r);
}

static __always_inline bool is_role_syscall(__u32 syscall)
{
    return syscall == TT_SOCKTAP_SYS_CONNECT || syscall == TT_SOCKTAP_SYS_ACCEPT || syscall == TT_SOCKTAP_SYS_ACCEPT4;
}

static __always_inline bool is_recv_syscall(__u32 syscall)
{
    return syscall == TT_SOCKTAP_SYS_READ || syscall == TT_SOCKTAP_SYS_RECVFROM || syscall == TT_SOCKTAP_SYS_READV ||
           syscall == TT_SOCKTAP_SYS_RECVMSG || syscall == TT_SOCKTAP_SYS_RECVMMSG;
}

/* The current thread's call_args, made on first use; NULL (counted) when
 * task storage is out of memory. */
static __always_inline struct call_args *thread_args(void)
{
    struct call_args *a = bpf_task_storage_get(&args_by_task, bpf_get_current_task_btf(), 0,
                                               BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!a) stat_add(TT_SOCKTAP_STAT_ARGS_FULL, 1);
    return a;
}

/* A traced send of this thread on sk (fd), handed to the socket at send_ns,
 * for the TLS call it may be part of: inside an SSL call, the call's socket
 * and the instant its ciphertext was handed over; after an SSL write that
 * made no socket syscall (memory BIOs), the pairing of its held plaintext
 * with this socket. */
static __always_inline void tls_note_send(struct call_args *a, struct sock *sk, __s32 fd, __u32 syscall,
                                          __u64 send_ns)
{
    if (a->tls_active) {
        if (!a->tls_sk) {
            a->tls_sk = (__u64)sk;
            a->tls_fd = fd;
        }
        if (a->tls_dir == TT_SOCKTAP_DIR_SEND && !a->tls_socket_ns && a->tls_sk == (__u64)sk)
            a->tls_socket_ns = send_ns;
    } else if (a->tls_pending) {
        tls_pair_pending(a, sk, fd, syscall);
    }
}

#define TT_MSG_PEEK 2

/* The common head of a record about sk, stamped by the caller. */
static __always_inline void fill_head(struct tt_socktap_event *ev, struct sock *sk, __u64 id, __s32 fd,
                                      __u32 syscall, __u8 kind)
{
    ev->flags = 0;
    ev->socket_ns = 0;
    fill_tuple(ev, sk);
    ev->sock_id = (__u64)sk;
    ev->tgid = id >> 32;
    ev->tid = (__u32)id;
    ev->fd = fd;
    ev->syscall = syscall;
    ev->kind = kind;
    ev->dir = 0;
    ev->lost_before = 0;
    ev->total_len = 0;
    ev->piece_off = 0;
    ev->copied = 0;
    ev->seq = 0;
    ev->marks = 0;
}

/* Emit a record without data (close, connect, accept, end of file); the
 * caller has applied the port filter (sk_port_rejected). */
static __always_inline int emit_marker(struct sock *sk, __u64 id, __s32 fd, __u32 syscall, __u8 kind,
                                       __u64 enter_ns, __u64 exit_ns, __u64 ts_ns, long ret, __u8 flags)
{
    struct tt_socktap_event ev;
    fill_head(&ev, sk, id, fd, syscall, kind);
    ev.flags |= flags;
    if (kind == TT_SOCKTAP_KIND_EOF) ev.dir = TT_SOCKTAP_DIR_RECV;
    ev.enter_ns = enter_ns;
    ev.exit_ns = exit_ns;
    ev.ts_ns = ts_ns;
    ev.ret = ret;
    if (bpf_ringbuf_output(&events, &ev, sizeof ev, rb_flags(sizeof ev)) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        return 0;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    return 0;
}

#include "socktap_ready.bpf.h"

static __always_inline bool is_data_syscall(__u32 syscall)
{
    return syscall <= TT_SOCKTAP_SYS_RECVMSG || syscall == TT_SOCKTAP_SYS_RECVMMSG ||
           syscall == TT_SOCKTAP_SYS_SENDMMSG || syscall == TT_SOCKTAP_SYS_SENDFILE;
}

static __always_inline bool takes_iovec(__u32 syscall)
{
    return syscall == TT_SOCKTAP_SYS_WRITEV || syscall == TT_SOCKTAP_SYS_READV;
}

#include "socktap_copy.bpf.h"
#include "socktap_tls.bpf.h"

/* A data syscall that returned: copy the ret bytes it moved, from one
 * buffer, from the iovec array (walked up to TT_SOCKTAP_MAX_IOV entries),
 * or from each message of an mmsghdr array, in pieces of at most
 * TT_SOCKTAP_MAX_COPY bytes. sendfile's bytes are counted, not copied.
 * args: the call (for a send, what its enter stored; for a receive, what
 * on_exit_recv read at its exit); live: the thread's call_args; id: the
 * current pid_tgid, which the caller read already. The
 * caller has applied the filters, the port's included (sk_port_rejected). */
static __always_inline int exit_data(const struct data_call *call, struct call_args *live, long ret, __u8 dir,
                                     __u64 id)
{
    struct data_call args = *call;
    if (ret == 0 && dir == TT_SOCKTAP_DIR_RECV && args.syscall != TT_SOCKTAP_SYS_RECVMMSG &&
        (args.count > 0 || args.syscall == TT_SOCKTAP_SYS_READV || args.syscall == TT_SOCKTAP_SYS_RECVMSG)) {
        /* end of file: the peer's FIN was read */
        __u64 at = args.enter_ns;
        return emit_marker((struct sock *)args.sk, id, args.fd, args.syscall, TT_SOCKTAP_KIND_EOF, at, at, at, 0, 0);
    }
    if (ret <= 0 || !is_data_syscall(args.syscall)) return 0;
    /* No clock is read here: a receive's caller (on_exit_recv) read its
     * exit instant into enter_ns, and a send is stamped at its enter (its
     * exit is not read: a paravirtual clock read is about 25 ns). */
    __u64 exit_ns = dir == TT_SOCKTAP_DIR_RECV ? args.enter_ns : 0;

    struct sock *sk = (struct sock *)args.sk;
    if (!sk) return 0;
    if (dir == TT_SOCKTAP_DIR_RECV) {
        /* for a TLS library: which socket it read its ciphertext from, and when */
        live->last_recv_sk = (__u64)sk;
        live->last_recv_fd = args.fd;
        live->last_recv_exit_ns = exit_ns;
        if (live->tls_active && live->tls_dir == TT_SOCKTAP_DIR_RECV) {
            if (!live->tls_sk) {
                live->tls_sk = (__u64)sk;
                live->tls_fd = args.fd;
            }
            if (live->tls_sk == (__u64)sk) live->tls_socket_ns = exit_ns;
        }
    }
    __u32 zero = 0;
    struct scratch_rec *rec = bpf_map_lookup_elem(&scratch, &zero);
    if (!rec) return 0;
    struct tt_socktap_event *ev = &rec->ev;
    fill_head(ev, sk, id, args.fd, args.syscall, TT_SOCKTAP_KIND_DATA);

    ev->enter_ns = args.enter_ns ? args.enter_ns : exit_ns;
    ev->exit_ns = exit_ns;
    ev->ts_ns = dir == TT_SOCKTAP_DIR_SEND ? args.enter_ns : exit_ns;
    ev->ret = ret;
    ev->dir = dir;
    __u32 total = ret > 0xffffffffL ? 0xffffffffu : (__u32)ret;
    bool mmsg = (args.syscall == TT_SOCKTAP_SYS_RECVMMSG || args.syscall == TT_SOCKTAP_SYS_SENDMMSG) && !args.not_copied;
    if (!mmsg) {
        /* The socket's sequence just past what this call moved, less its
         * length: the sequence number of its first byte. */
        struct tcp_sock *tp = AS_KERNEL(struct tcp_sock, sk);
        ev->seq = (dir == TT_SOCKTAP_DIR_RECV ? tp->copied_seq : tp->write_seq) - total;
        ev->flags |= TT_SOCKTAP_F_SEQ;
    }
    struct ready_state *ready = ready_follow(sk, false);

    struct lost_key lk = {.sock_id = (__u64)sk, .dir = dir};
    __u64 *lostp = lost_ever ? bpf_map_lookup_elem(&lost_bytes, &lk) : NULL;
    __u64 lost_in = lostp ? *lostp : 0;

    if (!lost_in && total <= TT_SOCKTAP_MAX_COPY && args.syscall <= TT_SOCKTAP_SYS_RECVFROM) {
        /* The common case, one buffer that fits one record: copied without
         * the walk. A faulting read falls through to the walk, which
         * reports it. */
        __u64 len = total;
        asm volatile("if %[len] <= %[max] goto +1\n\t%[len] = %[max]" : [len] "+r"(len) : [max] "i"(TT_SOCKTAP_MAX_COPY));
        /* the marks the socket holds go after the data, from its next
         * 8-byte boundary (zeroed first: the copy fills only its start) */
        __u64 marks_at = (len + 7) & ~7ull;
        if (ready) *(__u64 *)(rec->data + (len & ~7ull)) = 0;
        if (len > 0 && bpf_probe_read_user(rec->data, len, (const void *)args.buf) == 0) {
            ev->total_len = total;
            ev->piece_off = 0;
            ev->copied = (__u32)len;
            __u64 rec_bytes = sizeof(struct tt_socktap_event) + len;
            if (ready) {
                __u32 n = ready_take_held(ready, (struct tt_socktap_mark *)(rec->data + marks_at));
                if (n) {
                    ev->marks = n;
                    rec_bytes = sizeof(struct tt_socktap_event) + marks_at + n * sizeof(struct tt_socktap_mark);
                    asm volatile("if %[b] <= %[max] goto +1\n\t%[b] = %[max]"
                                 : [b] "+r"(rec_bytes)
                                 : [max] "i"(sizeof(struct tt_socktap_event) + sizeof rec->data));
                }
            }
            if (bpf_ringbuf_output(&events, ev, rec_bytes, rb_flags(rec_bytes)) == 0) {
                stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
                return 0;
            }
            stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
            stat_add(TT_SOCKTAP_STAT_RB_FAIL_BYTES, len);
            __u64 owed = total;
            lost_ever = 1;
            bpf_map_update_elem(&lost_bytes, &lk, &owed, BPF_ANY);
            return 0;
        }
    }

    /* copied in pieces: what the socket holds goes out before them */
    if (ready) ready_send_held(sk, ready, NULL);
    struct copy_state *st = &rec->st;
    __builtin_memset(st, 0, sizeof *st);
    st->lost = lost_in;
    st->sock_id = (__u64)sk;
    st->total = total;
    st->dir = dir;
    st->base_flags = ev->flags;
    if (args.syscall == TT_SOCKTAP_SYS_SENDFILE || args.not_copied) {
        finish_message(st, ev, TT_SOCKTAP_F_NOT_COPIED);
    } else {
        if (mmsg) {
            st->mmsg_at = args.buf;
            st->msg_count = total < args.count ? total : (__u32)args.count;
            st->total = 0; /* the first step loads message 0 */
        } else if (args.syscall == TT_SOCKTAP_SYS_SENDMSG || args.syscall == TT_SOCKTAP_SYS_RECVMSG) {
            struct user_msghdr msg;
            if (bpf_probe_read_user(&msg, sizeof msg, (const void *)args.buf) == 0) {
                st->iov_at = (__u64)msg.msg_iov;
                st->iov_count = msg.msg_iovlen;
            }
        } else if (takes_iovec(args.syscall)) {
            st->iov_at = args.buf;
            st->iov_count = args.count;
        } else {
            st->base = args.buf;
            st->left = total;
        }
        /* bpf_loop: the verifier checks the step once, not once per iteration. */
        bpf_loop((TT_SOCKTAP_MAX_PIECES + TT_SOCKTAP_MAX_IOV + 2) * TT_SOCKTAP_MAX_MMSG, copy_step, NULL, 0);
        if (!st->walked) finish_message(st, ev, TT_SOCKTAP_F_TRUNCATED);
        if (mmsg && st->msg_next < st->msg_count) {
            /* Messages past the bound (or past an unreadable entry): their
             * lengths summed, one record for all their bytes. */
            struct sum_state ss = {
                .at = st->mmsg_at + (__u64)st->msg_next * sizeof(struct mmsghdr) + offsetof(struct mmsghdr, msg_len),
                .n = st->msg_count - st->msg_next,
            };
            bpf_loop(TT_SOCKTAP_MAX_MMSG_SUM, sum_step, &ss, 0);
            if (ss.sum) {
                st->total = ss.sum;
                st->done = 0;
                st->failed = ss.failed;
                finish_message(st, ev, TT_SOCKTAP_F_TRUNCATED);
            }
        }
    }
    __u64 lost_out = st->lost;
    if (lost_out) {
        lost_ever = 1;
        bpf_map_update_elem(&lost_bytes, &lk, &lost_out, BPF_ANY);
    }
    else if (lost_in) bpf_map_delete_elem(&lost_bytes, &lk);
    return 0;
}

/* The registers the current task entered its syscall with. */
static __always_inline const struct pt_regs *syscall_regs(void)
{
    return AS_KERNEL(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
}

/* The registers task (the current task) entered its syscall with, from
 * where its call_args (live, or NULL) keep them after the first lookup:
 * a helper call saved per program (about 13 ns each here: bpf/README.md,
 * "What a program's steps cost"). */
static __always_inline const struct pt_regs *task_syscall_regs(struct task_struct *task, struct call_args *live)
{
    if (live && live->regs_at) return AS_KERNEL(struct pt_regs, live->regs_at);
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
    if (live) live->regs_at = (__u64)regs;
    return AS_KERNEL(struct pt_regs, regs);
}

/* The exit of a receive (read, recvfrom, readv, recvmsg, recvmmsg). A
 * receive has no enter program, which saves a program run (and, for the
 * classic tracepoints, the perf record of its arguments) per read: its
 * arguments are read here from the registers the syscall was entered with,
 * which the task's pt_regs still hold at its exit, and its socket is found
 * from fd now. The record's enter_ns is then its exit instant (a receive
 * is stamped at its return either way: ts_ns). What this gives up: a read
 * blocked while another thread closed its fd and a new socket took the
 * number would be attributed to the new socket. regs: the syscall's
 * registers where the caller has them (tp_btf), else NULL (found here,
 * once the process filters passed). hook_sk: the sock the socket layer's
 * hook handed over (socktap_sock.bpf.h), else NULL (found from fd). task:
 * the current task, which the caller has passed through process_passes
 * (the cgroup filter is asked here); live: its call_args where the caller
 * looked them up, else NULL (made here once the filters passed). */
static __always_inline int on_exit_recv(long ret, __u32 syscall, const struct pt_regs *regs, struct sock *hook_sk,
                                        struct task_struct *task, struct call_args *live)
{
    if (ret < 0) return 0;
    __u64 id = task_pid_tgid(task);
    if (!cgroup_passes()) return 0; /* the callers asked process_passes */
    if (!regs) regs = task_syscall_regs(task, live);
    __s32 fd = (__s32)PT_REGS_PARM1_SYSCALL(regs);
    if (fd < 0) return 0;
    /* the third argument: a length, an iovec or message count, or (recvmsg) the flags */
    __u64 count = PT_REGS_PARM3_SYSCALL(regs), flags = 0;
    if (syscall == TT_SOCKTAP_SYS_RECVMSG) {
        flags = count;
        count = 0;
    } else if (syscall == TT_SOCKTAP_SYS_RECVFROM || syscall == TT_SOCKTAP_SYS_RECVMMSG) {
        flags = PT_REGS_PARM4_SYSCALL(regs);
    }
    /* MSG_PEEK consumed nothing: the next read returns the same bytes */
    if (flags & TT_MSG_PEEK) return 0;
    struct sock *sk = hook_sk ? tcp_user_sock(hook_sk) : tcp_sock_of_fd(fd);
    if (!sk) return 0;
    if (sk_port_rejected(sk)) return 0;
    /* the exit instant before anything that may take long: ACCEPT's
     * record, the thread's storage (its first allocation in a process took
     * 20 to 60 us here) */
    __u64 exit_ns = bpf_ktime_get_ns();
#if defined(__TARGET_ARCH_x86)
    if (hook_sk) announce_accept(hook_sk, regs); /* an accepted socket's first hook: ACCEPT before the data */
#endif
    if (!live) live = thread_args();
    if (!live) return 0;
    struct data_call args = {
        .buf = PT_REGS_PARM2_SYSCALL(regs),
        .count = count,
        .enter_ns = exit_ns, /* a receive has no enter: its exit instant (exit_data) */
        .sk = (__u64)sk,
        .fd = fd,
        .syscall = syscall,
        .not_copied = hook_sk && syscall == TT_SOCKTAP_SYS_RECVMMSG, /* one message of the array */
    };
    return exit_data(&args, live, ret, TT_SOCKTAP_DIR_RECV, id);
}

/* The exit of a receive at a syscall tracepoint (classic or raw): a
 * process the cheap filters turn away looks nothing up; the thread's
 * call_args looked up here only with the pid filter (as before it had
 * the bits, on_exit_recv makes them otherwise). */
static __always_inline int on_exit_recv_sys(long ret, __u32 syscall, const struct pt_regs *regs)
{
    struct task_struct *task = bpf_get_current_task_btf();
    if (!process_passes(task->tgid)) return 0;
    return on_exit_recv(ret, syscall, regs, NULL, task, filter_tgids ? task_args(task) : NULL);
}

/* Bytes of (sk, dir) the ring buffer refused and no later record carried:
 * a DATA record without data, total_len 0, lost_before set. */
static __always_inline void flush_lost(struct sock *sk, __u64 id, __s32 fd, __u8 dir, __u64 now)
{
    struct lost_key lk = {.sock_id = (__u64)sk, .dir = dir};
    if (!lost_ever) return;
    __u64 *lostp = bpf_map_lookup_elem(&lost_bytes, &lk);
    if (!lostp) return;
    struct tt_socktap_event ev;
    fill_head(&ev, sk, id, fd, TT_SOCKTAP_SYS_CLOSE, TT_SOCKTAP_KIND_DATA);
    ev.dir = dir;
    ev.lost_before = *lostp;
    ev.enter_ns = now;
    ev.exit_ns = 0;
    ev.ts_ns = now;
    ev.ret = 0;
    if (bpf_ringbuf_output(&events, &ev, sizeof ev, rb_flags(sizeof ev)) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        return;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    bpf_map_delete_elem(&lost_bytes, &lk);
}

/* A traced process forked: its child is traced too. Thread creation fires
 * this as well (child_pid is then a thread id): the stray entry is removed
 * when that thread exits. */
SEC("tracepoint/sched/sched_process_fork")
int tt_fork(struct trace_event_raw_sched_process_fork *ctx)
{
    if (!filter_tgids) return 0;
    __u32 parent = bpf_get_current_pid_tgid() >> 32;
    if (!id_marked(parent)) return 0;
    __u32 child = (__u32)ctx->child_pid;
    __u8 one = 1;
    if (bpf_map_update_elem(&traced_tgids, &child, &one, BPF_NOEXIST) == 0) {
        id_mark(child);
        stat_add(TT_SOCKTAP_STAT_CHILDREN, 1);
    } else if (!bpf_map_lookup_elem(&traced_tgids, &child)) {
        stat_add(TT_SOCKTAP_STAT_TGIDS_FULL, 1);
    } else {
        id_mark(child); /* already there (a thread id put back): its bit too */
    }
    if (tls_wanted) {
        /* the TLS uprobes are attached per traced process: the child needs its own */
        struct tt_socktap_event ev;
        __builtin_memset(&ev, 0, sizeof ev);
        ev.tgid = child;
        ev.tid = child;
        ev.fd = -1;
        ev.kind = TT_SOCKTAP_KIND_EXEC;
        ev.ts_ns = ev.enter_ns = ev.exit_ns = bpf_ktime_get_ns();
        if (bpf_ringbuf_output(&events, &ev, sizeof ev, BPF_RB_FORCE_WAKEUP) == 0) stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
        else stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
    }
    return 0;
}

/* A thread exits (its task storage, the pending arguments, goes with it):
 * when it is a thread's own entry or the whole process is gone, its traced
 * entry goes too. */
SEC("tracepoint/sched/sched_process_exit")
int tt_exit_task(struct trace_event_raw_sched_process_exit *ctx)
{
    if (!filter_tgids) return 0;
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id, tgid = id >> 32;
    if (tid != tgid) {
        id_unmark(tid);
        bpf_map_delete_elem(&traced_tgids, &tid);
    }
    if (ctx->group_dead) {
        id_unmark(tgid);
        bpf_map_delete_elem(&traced_tgids, &tgid);
    }
    return 0;
}

#include "socktap_syscalls.bpf.h"
#include "socktap_send.bpf.h"
#include "socktap_raw.bpf.h"
#include "socktap_state.bpf.h"
#include "socktap_sock.bpf.h"
