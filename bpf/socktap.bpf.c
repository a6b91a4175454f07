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
    __u64 buf;
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

static __always_inline int on_enter(__s32 fd, __u64 buf, __u32 syscall)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (targ_tgid && (__u32)(id >> 32) != targ_tgid) return 0;
    if (fd < 0) return 0;
    struct call_args a = {.buf = buf, .enter_ns = bpf_ktime_get_ns(), .fd = fd, .syscall = syscall};
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

static __always_inline int on_exit(long ret, __u8 dir)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct call_args *a = bpf_map_lookup_elem(&args_by_thread, &id);
    if (!a) return 0;
    struct call_args args = *a;
    bpf_map_delete_elem(&args_by_thread, &id);
    if (ret <= 0) return 0;
    __u64 exit_ns = bpf_ktime_get_ns();

    struct sock *sk = tcp_sock_of_fd(args.fd);
    if (!sk) return 0;
    __u32 zero = 0;
    struct scratch_rec *rec = bpf_map_lookup_elem(&scratch, &zero);
    if (!rec) return 0;
    struct tt_socktap_event *ev = &rec->ev;
    ev->flags = 0;
    fill_tuple(ev, sk);
    if (targ_port && ev->lport != targ_port && ev->rport != targ_port) return 0;

    ev->enter_ns = args.enter_ns;
    ev->exit_ns = exit_ns;
    ev->ts_ns = dir == TT_SOCKTAP_DIR_SEND ? args.enter_ns : exit_ns;
    ev->sock_id = (__u64)sk;
    ev->ret = ret;
    ev->tgid = id >> 32;
    ev->tid = (__u32)id;
    ev->fd = args.fd;
    ev->dir = dir;
    ev->syscall = args.syscall;
    ev->pad = 0;
    __u32 total = ret > 0xffffffffL ? 0xffffffffu : (__u32)ret;
    ev->total_len = total;

    struct lost_key lk = {.sock_id = (__u64)sk, .dir = dir};
    __u64 *lostp = bpf_map_lookup_elem(&lost_bytes, &lk);
    __u64 lost = lostp ? *lostp : 0;
    __u8 base_flags = ev->flags;

    for (__u32 i = 0; i < TT_SOCKTAP_MAX_PIECES; i++) {
        __u32 off = i * TT_SOCKTAP_MAX_COPY;
        if (off >= total) break;
        __u32 n = total - off;
        __u8 flags = base_flags;
        if (n > TT_SOCKTAP_MAX_COPY) {
            n = TT_SOCKTAP_MAX_COPY;
            if (i == TT_SOCKTAP_MAX_PIECES - 1) {
                flags |= TT_SOCKTAP_F_TRUNCATED;
                stat_add(TT_SOCKTAP_STAT_TRUNCATED, 1);
                stat_add(TT_SOCKTAP_STAT_TRUNCATED_BYTES, total - off - n);
            }
        }
        /* Clamp again in the very register the helper gets, for the verifier. */
        __u64 len = n;
        asm volatile("if %[len] <= %[max] goto +1\n\t%[len] = %[max]" : [len] "+r"(len) : [max] "i"(TT_SOCKTAP_MAX_COPY));
        n = (__u32)len;
        if (bpf_probe_read_user(rec->data, len, (const void *)(args.buf + off)) != 0) {
            flags |= TT_SOCKTAP_F_COPY_FAILED;
            n = 0;
        }
        ev->piece_off = off;
        ev->copied = n;
        ev->flags = flags;
        ev->lost_before = lost;
        __u64 size = sizeof(struct tt_socktap_event) + n;
        if (size > sizeof(struct scratch_rec)) break;
        if (bpf_ringbuf_output(&events, rec, size, 0) != 0) {
            stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
            stat_add(TT_SOCKTAP_STAT_RB_FAIL_BYTES, n);
            /* The rest of this syscall's bytes are lost too: counted once here. */
            lost += total - off;
            bpf_map_update_elem(&lost_bytes, &lk, &lost, BPF_ANY);
            return 0;
        }
        stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
        if (lost) {
            lost = 0;
            bpf_map_delete_elem(&lost_bytes, &lk);
        }
    }
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_write")
int tt_enter_write(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], TT_SOCKTAP_SYS_WRITE);
}

SEC("tracepoint/syscalls/sys_exit_write")
int tt_exit_write(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND); }

SEC("tracepoint/syscalls/sys_enter_sendto")
int tt_enter_sendto(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], TT_SOCKTAP_SYS_SENDTO);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int tt_exit_sendto(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND); }

SEC("tracepoint/syscalls/sys_enter_read")
int tt_enter_read(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], TT_SOCKTAP_SYS_READ);
}

SEC("tracepoint/syscalls/sys_exit_read")
int tt_exit_read(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_RECV); }

SEC("tracepoint/syscalls/sys_enter_recvfrom")
int tt_enter_recvfrom(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], TT_SOCKTAP_SYS_RECVFROM);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int tt_exit_recvfrom(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_RECV); }
