// SPDX-License-Identifier: GPL-2.0
/* socktap.bpf.c - the server and client vantages: the bytes a process
 * writes to and reads from its TCP sockets, stamped where the syscall
 * entered (writes) or returned (reads). CO-RE, syscall tracepoints only.
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

/* Filters, set by userspace before load; 0 means any. */
const volatile __u32 targ_tgid = 0;
const volatile __u16 targ_port = 0;

struct call_args {
    __u64 buf;      /* data buffer, iovec array, or user_msghdr */
    __u64 count;    /* iovec entries (readv, writev) */
    __u64 enter_ns;
    __s32 fd;
    __u32 syscall;
};

struct lost_key {
    __u64 sock_id;
    __u32 dir;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u64); /* pid_tgid */
    __type(value, struct call_args);
} args_by_thread SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, struct lost_key);
    __type(value, __u64);
} lost_bytes SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, TT_SOCKTAP_STAT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} stats SEC(".maps");

struct scratch_rec {
    struct tt_socktap_event ev;
    __u8 data[TT_SOCKTAP_MAX_COPY];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch_rec);
} scratch SEC(".maps");

static __always_inline void stat_add(__u32 idx, __u64 n)
{
    __u64 *v = bpf_map_lookup_elem(&stats, &idx);
    if (v) *v += n;
}

static __always_inline int on_enter(__s32 fd, __u64 buf, __u64 count, __u32 syscall)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (targ_tgid && (__u32)(id >> 32) != targ_tgid) return 0;
    if (fd < 0) return 0;
    struct call_args a = {.buf = buf, .count = count, .enter_ns = bpf_ktime_get_ns(), .fd = fd, .syscall = syscall};
    if (bpf_map_update_elem(&args_by_thread, &id, &a, BPF_ANY) != 0) stat_add(TT_SOCKTAP_STAT_ARGS_FULL, 1);
    return 0;
}

/* The TCP sock behind fd in the current task, or NULL. */
static __always_inline struct sock *tcp_sock_of_fd(__s32 fd)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
    if (!fdt) return NULL;
    unsigned int max_fds = BPF_CORE_READ(fdt, max_fds);
    if ((unsigned int)fd >= max_fds) return NULL;
    struct file **fds = BPF_CORE_READ(fdt, fd);
    struct file *f = NULL;
    if (bpf_core_read(&f, sizeof f, &fds[fd]) != 0 || !f) return NULL;
    umode_t mode = BPF_CORE_READ(f, f_inode, i_mode);
    if ((mode & S_IFMT) != S_IFSOCK) return NULL;
    struct socket *sock = BPF_CORE_READ(f, private_data);
    if (!sock) return NULL;
    struct sock *sk = BPF_CORE_READ(sock, sk);
    if (!sk) return NULL;
    __u16 proto = BPF_CORE_READ(sk, sk_protocol);
    __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
    if (proto != TT_IPPROTO_TCP || (family != AF_INET && family != AF_INET6)) return NULL;
    return sk;
}

static __always_inline void fill_tuple(struct tt_socktap_event *ev, struct sock *sk)
{
    __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
    ev->family = family;
    ev->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
    ev->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
    __builtin_memset(ev->laddr, 0, sizeof ev->laddr);
    __builtin_memset(ev->raddr, 0, sizeof ev->raddr);
    if (family == AF_INET6) {
        ev->flags |= TT_SOCKTAP_F_IPV6;
        BPF_CORE_READ_INTO(&ev->laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
        BPF_CORE_READ_INTO(&ev->raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
    } else {
        BPF_CORE_READ_INTO((__u32 *)ev->laddr, sk, __sk_common.skc_rcv_saddr);
        BPF_CORE_READ_INTO((__u32 *)ev->raddr, sk, __sk_common.skc_daddr);
    }
}

/* The common head of a record about sk, stamped by the caller. */
static __always_inline void fill_head(struct tt_socktap_event *ev, struct sock *sk, __u64 id, __s32 fd,
                                      __u32 syscall, __u8 kind)
{
    ev->flags = 0;
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
}

static __always_inline bool port_rejected(const struct tt_socktap_event *ev)
{
    return targ_port && ev->lport != targ_port && ev->rport != targ_port;
}

/* Emit a record without data (close, connect, accept). */
static __always_inline int emit_marker(struct sock *sk, __u64 id, __s32 fd, __u32 syscall, __u8 kind,
                                       __u64 enter_ns, __u64 exit_ns, __u64 ts_ns, long ret)
{
    struct tt_socktap_event ev;
    fill_head(&ev, sk, id, fd, syscall, kind);
    if (port_rejected(&ev)) return 0;
    ev.enter_ns = enter_ns;
    ev.exit_ns = exit_ns;
    ev.ts_ns = ts_ns;
    ev.ret = ret;
    if (bpf_ringbuf_output(&events, &ev, sizeof ev, 0) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        return 0;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    return 0;
}

static __always_inline bool takes_iovec(__u32 syscall)
{
    return syscall == TT_SOCKTAP_SYS_WRITEV || syscall == TT_SOCKTAP_SYS_READV ||
           syscall == TT_SOCKTAP_SYS_SENDMSG || syscall == TT_SOCKTAP_SYS_RECVMSG;
}

struct copy_state {
    __u64 base, left;          /* the current buffer and what is left of it */
    __u64 iov_at, iov_count;   /* the iovec array, when there is one */
    __u64 lost, sock_id;
    __u32 total, done, pieces, iov_next;
    __u8 dir, base_flags, failed, rb_failed;
};

/* One step of the copy: load the next iovec entry, or emit one piece of at
 * most TT_SOCKTAP_MAX_COPY bytes. 1 stops the loop. */
static long copy_step(__u64 index, void *vctx)
{
    struct copy_state *st = vctx;
    if (st->done >= st->total || st->pieces >= TT_SOCKTAP_MAX_PIECES) return 1;
    if (st->left == 0) {
        if (st->iov_next >= st->iov_count || st->iov_next >= TT_SOCKTAP_MAX_IOV) return 1;
        struct iovec iov;
        if (bpf_probe_read_user(&iov, sizeof iov, (const void *)(st->iov_at + (__u64)st->iov_next * sizeof iov)) != 0) {
            st->failed = 1;
            return 1;
        }
        st->iov_next++;
        st->base = (__u64)iov.iov_base;
        st->left = iov.iov_len;
        return 0;
    }
    __u32 zero = 0;
    struct scratch_rec *rec = bpf_map_lookup_elem(&scratch, &zero);
    if (!rec) return 1;
    __u64 len = st->left;
    if (len > st->total - st->done) len = st->total - st->done;
    /* Clamp in the very register the helper gets, for the verifier. */
    asm volatile("if %[len] <= %[max] goto +1\n\t%[len] = %[max]" : [len] "+r"(len) : [max] "i"(TT_SOCKTAP_MAX_COPY));
    if (len == 0) return 1;
    if (bpf_probe_read_user(rec->data, len, (const void *)st->base) != 0) {
        st->failed = 1;
        return 1;
    }
    __u32 n = (__u32)len;
    struct tt_socktap_event *ev = &rec->ev;
    ev->piece_off = st->done;
    ev->copied = n;
    ev->flags = st->base_flags;
    ev->lost_before = st->lost;
    struct lost_key lk = {.sock_id = st->sock_id, .dir = st->dir};
    if (bpf_ringbuf_output(&events, rec, sizeof(struct tt_socktap_event) + len, 0) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        stat_add(TT_SOCKTAP_STAT_RB_FAIL_BYTES, n);
        /* The rest of this syscall's bytes are lost too: counted once here. */
        st->lost += st->total - st->done;
        bpf_map_update_elem(&lost_bytes, &lk, &st->lost, BPF_ANY);
        st->rb_failed = 1;
        return 1;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    if (st->lost) {
        st->lost = 0;
        bpf_map_delete_elem(&lost_bytes, &lk);
    }
    st->base += n;
    st->left -= n;
    st->done += n;
    st->pieces++;
    return 0;
}

/* The exit of a data syscall: copy the ret bytes it moved, from one buffer
 * or from the iovec array (walked up to TT_SOCKTAP_MAX_IOV entries), in
 * pieces of at most TT_SOCKTAP_MAX_COPY bytes. */
static __always_inline int on_exit(long ret, __u8 dir)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct call_args *a = bpf_map_lookup_elem(&args_by_thread, &id);
    if (!a) return 0;
    struct call_args args = *a;
    bpf_map_delete_elem(&args_by_thread, &id);
    if (ret <= 0 || args.syscall >= TT_SOCKTAP_SYS_CLOSE) return 0;
    __u64 exit_ns = bpf_ktime_get_ns();

    struct sock *sk = tcp_sock_of_fd(args.fd);
    if (!sk) return 0;
    __u32 zero = 0;
    struct scratch_rec *rec = bpf_map_lookup_elem(&scratch, &zero);
    if (!rec) return 0;
    struct tt_socktap_event *ev = &rec->ev;
    fill_head(ev, sk, id, args.fd, args.syscall, TT_SOCKTAP_KIND_DATA);
    if (port_rejected(ev)) return 0;

    ev->enter_ns = args.enter_ns;
    ev->exit_ns = exit_ns;
    ev->ts_ns = dir == TT_SOCKTAP_DIR_SEND ? args.enter_ns : exit_ns;
    ev->ret = ret;
    ev->dir = dir;
    __u32 total = ret > 0xffffffffL ? 0xffffffffu : (__u32)ret;
    ev->total_len = total;

    struct lost_key lk = {.sock_id = (__u64)sk, .dir = dir};
    __u64 *lostp = bpf_map_lookup_elem(&lost_bytes, &lk);
    __u64 lost = lostp ? *lostp : 0;
    __u8 base_flags = ev->flags;

    /* Where the bytes are: one buffer, or iov_count iovec entries at iov_at. */
    __u64 base = 0, left = 0, iov_at = 0, iov_count = 0;
    if (args.syscall == TT_SOCKTAP_SYS_SENDMSG || args.syscall == TT_SOCKTAP_SYS_RECVMSG) {
        struct user_msghdr msg;
        if (bpf_probe_read_user(&msg, sizeof msg, (const void *)args.buf) == 0) {
            iov_at = (__u64)msg.msg_iov;
            iov_count = msg.msg_iovlen;
        }
    } else if (takes_iovec(args.syscall)) {
        iov_at = args.buf;
        iov_count = args.count;
    } else {
        base = args.buf;
        left = total;
    }

    struct copy_state st = {
        .base = base, .left = left, .iov_at = iov_at, .iov_count = iov_count, .lost = lost,
        .sock_id = (__u64)sk, .total = total, .dir = dir, .base_flags = base_flags,
    };
    /* bpf_loop: the verifier checks the step once, not once per iteration. */
    bpf_loop(TT_SOCKTAP_MAX_PIECES + TT_SOCKTAP_MAX_IOV, copy_step, &st, 0);
    if (st.rb_failed) return 0;
    lost = st.lost;
    __u32 done = st.done;
    __u8 failed = st.failed;
    if (done >= total) return 0;
    /* Not every byte was copied: a record without data says how many are missing. */
    stat_add(TT_SOCKTAP_STAT_TRUNCATED, 1);
    stat_add(TT_SOCKTAP_STAT_TRUNCATED_BYTES, total - done);
    ev->piece_off = done;
    ev->copied = 0;
    ev->flags = base_flags | TT_SOCKTAP_F_TRUNCATED | (failed ? TT_SOCKTAP_F_COPY_FAILED : 0);
    ev->lost_before = lost;
    if (bpf_ringbuf_output(&events, ev, sizeof *ev, 0) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        lost += total - done;
        bpf_map_update_elem(&lost_bytes, &lk, &lost, BPF_ANY);
        return 0;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    if (lost) bpf_map_delete_elem(&lost_bytes, &lk);
    return 0;
}

/* The exit of connect, accept or accept4: the role of the local end. */
static __always_inline int on_exit_role(long ret)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct call_args *a = bpf_map_lookup_elem(&args_by_thread, &id);
    if (!a) return 0;
    struct call_args args = *a;
    bpf_map_delete_elem(&args_by_thread, &id);
    __s32 fd;
    __u8 kind;
    if (args.syscall == TT_SOCKTAP_SYS_CONNECT) {
        if (ret != 0 && ret != -115 /* EINPROGRESS */) return 0;
        fd = args.fd;
        kind = TT_SOCKTAP_KIND_CONNECT;
    } else if (args.syscall == TT_SOCKTAP_SYS_ACCEPT || args.syscall == TT_SOCKTAP_SYS_ACCEPT4) {
        if (ret < 0 || ret > 0x7fffffff) return 0;
        fd = (__s32)ret;
        kind = TT_SOCKTAP_KIND_ACCEPT;
    } else {
        return 0;
    }
    struct sock *sk = tcp_sock_of_fd(fd);
    if (!sk) return 0;
    __u64 exit_ns = bpf_ktime_get_ns();
    return emit_marker(sk, id, fd, args.syscall, kind, args.enter_ns, exit_ns, exit_ns, ret);
}

SEC("tracepoint/syscalls/sys_enter_write")
int tt_enter_write(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_WRITE);
}

SEC("tracepoint/syscalls/sys_exit_write")
int tt_exit_write(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND); }

SEC("tracepoint/syscalls/sys_enter_sendto")
int tt_enter_sendto(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_SENDTO);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int tt_exit_sendto(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND); }

SEC("tracepoint/syscalls/sys_enter_read")
int tt_enter_read(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_READ);
}

SEC("tracepoint/syscalls/sys_exit_read")
int tt_exit_read(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_RECV); }

SEC("tracepoint/syscalls/sys_enter_recvfrom")
int tt_enter_recvfrom(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_RECVFROM);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int tt_exit_recvfrom(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_RECV); }

SEC("tracepoint/syscalls/sys_enter_writev")
int tt_enter_writev(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], ctx->args[2], TT_SOCKTAP_SYS_WRITEV);
}

SEC("tracepoint/syscalls/sys_exit_writev")
int tt_exit_writev(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND); }

SEC("tracepoint/syscalls/sys_enter_readv")
int tt_enter_readv(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], ctx->args[2], TT_SOCKTAP_SYS_READV);
}

SEC("tracepoint/syscalls/sys_exit_readv")
int tt_exit_readv(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_RECV); }

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int tt_enter_sendmsg(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_SENDMSG);
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int tt_exit_sendmsg(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND); }

SEC("tracepoint/syscalls/sys_enter_recvmsg")
int tt_enter_recvmsg(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_RECVMSG);
}

SEC("tracepoint/syscalls/sys_exit_recvmsg")
int tt_exit_recvmsg(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_RECV); }

SEC("tracepoint/syscalls/sys_enter_connect")
int tt_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, 0, TT_SOCKTAP_SYS_CONNECT);
}

SEC("tracepoint/syscalls/sys_exit_connect")
int tt_exit_connect(struct trace_event_raw_sys_exit *ctx) { return on_exit_role(ctx->ret); }

SEC("tracepoint/syscalls/sys_enter_accept")
int tt_enter_accept(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, 0, TT_SOCKTAP_SYS_ACCEPT);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int tt_exit_accept(struct trace_event_raw_sys_exit *ctx) { return on_exit_role(ctx->ret); }

SEC("tracepoint/syscalls/sys_enter_accept4")
int tt_enter_accept4(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, 0, TT_SOCKTAP_SYS_ACCEPT4);
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int tt_exit_accept4(struct trace_event_raw_sys_exit *ctx) { return on_exit_role(ctx->ret); }

/* close: reported at enter, while fd still names the socket. */
SEC("tracepoint/syscalls/sys_enter_close")
int tt_enter_close(struct trace_event_raw_sys_enter *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (targ_tgid && (__u32)(id >> 32) != targ_tgid) return 0;
    __s32 fd = (__s32)ctx->args[0];
    if (fd < 0) return 0;
    struct sock *sk = tcp_sock_of_fd(fd);
    if (!sk) return 0;
    __u64 now = bpf_ktime_get_ns();
    return emit_marker(sk, id, fd, TT_SOCKTAP_SYS_CLOSE, TT_SOCKTAP_KIND_CLOSE, now, 0, now, 0);
}
