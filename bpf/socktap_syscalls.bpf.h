// SPDX-License-Identifier: GPL-2.0
/* socktap_syscalls.bpf.h - part of socktap.bpf.c (included there, one
 * object): the programs on the classic syscall tracepoints, which the
 * tp_btf hooks replace where the kernel has them (socktap_sock.bpf.h for
 * the data, socktap_send.bpf.h for a send's stamp, socktap_state.bpf.h for
 * connect, accept and close): an enter that keeps a send's, connect's or
 * accept's arguments in the thread's call_args (on_enter), the exit that
 * takes them (take_args), and the exits of the receives (on_exit_recv_sys,
 * no enter). Userspace loads them where a hook is missing or switched off
 * (TOKENTAP_NO_SOCK_HOOKS, TOKENTAP_NO_SEND_STAMP, TOKENTAP_NO_SOCK_STATE);
 * the raw-tracepoint pair (socktap_raw.bpf.h) calls on_enter and on_exit
 * too. While any of them is attached, every syscall of every task takes
 * the kernel's slow path (bpf/README.md). */

/* The enter of a traced syscall other than a receive (receives have no
 * enter program: on_exit_recv): everything that can be rejected is
 * rejected here, before anything is stored (the process filters, an fd
 * that is not a TCP socket, the port filter where the ports are known). */
static __always_inline int on_enter(__s32 fd, __u64 buf, __u64 count, __u32 syscall)
{
    struct call_args *a;
    struct task_struct *task = bpf_get_current_task_btf();
    if (fd < 0 || !task_traced_args(task, task_pid_tgid(task), &a)) return 0;
    struct sock *sk = tcp_sock_of_fd(fd);
    if (!sk) return 0;
    if (!is_role_syscall(syscall) && sk_port_rejected(sk)) return 0;
    if (!a) a = thread_args();
    if (!a) return 0;
    a->buf = buf;
    a->count = count;
    a->sk = syscall == TT_SOCKTAP_SYS_ACCEPT || syscall == TT_SOCKTAP_SYS_ACCEPT4 ? 0 : (__u64)sk;
    a->fd = fd;
    a->syscall = syscall;
    a->enter_ns = bpf_ktime_get_ns();
    a->pending = 1;
    if (is_role_syscall(syscall) || syscall == TT_SOCKTAP_SYS_CLOSE) return 0;
    tls_note_send(a, sk, fd, syscall, a->enter_ns);
    return 0;
}

/* The arguments the enter of `syscall` left for this thread, taken (the
 * call in *out): the thread's live call_args, or NULL. */
static __always_inline struct call_args *take_args(__u32 syscall, struct data_call *out)
{
    struct call_args *a = task_args(bpf_get_current_task_btf());
    if (!a || !a->pending) return NULL;
    a->pending = 0;
    if (a->syscall != syscall) return NULL; /* a stale enter (attached between an enter and its exit) */
    out->buf = a->buf;
    out->count = a->count;
    out->enter_ns = a->enter_ns;
    out->sk = a->sk;
    out->fd = a->fd;
    out->syscall = a->syscall;
    out->not_copied = 0;
    return a;
}

/* The exit of a send: the arguments its enter left for this thread. */
static __always_inline int on_exit(long ret, __u8 dir, __u32 syscall)
{
    struct data_call args;
    struct call_args *live = take_args(syscall, &args);
    if (!live) return 0;
    return exit_data(&args, live, ret, dir, bpf_get_current_pid_tgid());
}

/* The exit of connect, accept or accept4: the role of the local end. */
static __always_inline int on_exit_role(long ret, __u32 syscall)
{
    struct data_call args;
    if (!take_args(syscall, &args)) return 0;
    __u64 id = bpf_get_current_pid_tgid();
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
    struct sock *sk = kind == TT_SOCKTAP_KIND_CONNECT ? (struct sock *)args.sk : tcp_sock_of_fd(fd);
    if (!sk) return 0;
    if (sk_port_rejected(AS_KERNEL(struct sock, sk))) return 0; /* connect's sk is a number kept from its enter */
    if (kind == TT_SOCKTAP_KIND_CONNECT) {
        ready_follow(sk, true);
    } else {
        ready_follow_accepted(sk);
    }
    __u64 exit_ns = bpf_ktime_get_ns();
    return emit_marker(sk, id, fd, args.syscall, kind, args.enter_ns, exit_ns, exit_ns, ret, 0);
}

SEC("tracepoint/syscalls/sys_enter_write")
int tt_enter_write(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_WRITE);
}

SEC("tracepoint/syscalls/sys_exit_write")
int tt_exit_write(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND, TT_SOCKTAP_SYS_WRITE); }

SEC("tracepoint/syscalls/sys_enter_sendto")
int tt_enter_sendto(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_SENDTO);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int tt_exit_sendto(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND, TT_SOCKTAP_SYS_SENDTO); }

SEC("tracepoint/syscalls/sys_exit_read")
int tt_exit_read(struct trace_event_raw_sys_exit *ctx) { return on_exit_recv_sys(ctx->ret, TT_SOCKTAP_SYS_READ, NULL); }

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int tt_exit_recvfrom(struct trace_event_raw_sys_exit *ctx) { return on_exit_recv_sys(ctx->ret, TT_SOCKTAP_SYS_RECVFROM, NULL); }

SEC("tracepoint/syscalls/sys_enter_writev")
int tt_enter_writev(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], ctx->args[2], TT_SOCKTAP_SYS_WRITEV);
}

SEC("tracepoint/syscalls/sys_exit_writev")
int tt_exit_writev(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND, TT_SOCKTAP_SYS_WRITEV); }

SEC("tracepoint/syscalls/sys_exit_readv")
int tt_exit_readv(struct trace_event_raw_sys_exit *ctx) { return on_exit_recv_sys(ctx->ret, TT_SOCKTAP_SYS_READV, NULL); }

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int tt_enter_sendmsg(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], 0, TT_SOCKTAP_SYS_SENDMSG);
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int tt_exit_sendmsg(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND, TT_SOCKTAP_SYS_SENDMSG); }

SEC("tracepoint/syscalls/sys_exit_recvmsg")
int tt_exit_recvmsg(struct trace_event_raw_sys_exit *ctx) { return on_exit_recv_sys(ctx->ret, TT_SOCKTAP_SYS_RECVMSG, NULL); }

SEC("tracepoint/syscalls/sys_enter_connect")
int tt_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, 0, TT_SOCKTAP_SYS_CONNECT);
}

SEC("tracepoint/syscalls/sys_exit_connect")
int tt_exit_connect(struct trace_event_raw_sys_exit *ctx) { return on_exit_role(ctx->ret, TT_SOCKTAP_SYS_CONNECT); }

SEC("tracepoint/syscalls/sys_enter_accept")
int tt_enter_accept(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, 0, TT_SOCKTAP_SYS_ACCEPT);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int tt_exit_accept(struct trace_event_raw_sys_exit *ctx) { return on_exit_role(ctx->ret, TT_SOCKTAP_SYS_ACCEPT); }

SEC("tracepoint/syscalls/sys_enter_accept4")
int tt_enter_accept4(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, 0, TT_SOCKTAP_SYS_ACCEPT4);
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int tt_exit_accept4(struct trace_event_raw_sys_exit *ctx) { return on_exit_role(ctx->ret, TT_SOCKTAP_SYS_ACCEPT4); }

/* close: reported at enter, while fd still names the socket; bytes still
 * owed to it go out first. */
SEC("tracepoint/syscalls/sys_enter_close")
int tt_enter_close(struct trace_event_raw_sys_enter *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __s32 fd = (__s32)ctx->args[0];
    if (fd < 0 || !task_traced(id)) return 0;
    struct sock *sk = tcp_sock_of_fd(fd);
    if (!sk) return 0;
    if (sk_port_rejected(sk)) return 0;
    __u64 now = bpf_ktime_get_ns();
    flush_lost(sk, id, fd, TT_SOCKTAP_DIR_SEND, now);
    flush_lost(sk, id, fd, TT_SOCKTAP_DIR_RECV, now);
    ready_forget(sk);
    return emit_marker(sk, id, fd, TT_SOCKTAP_SYS_CLOSE, TT_SOCKTAP_KIND_CLOSE, now, 0, now, 0, 0);
}

SEC("tracepoint/syscalls/sys_exit_recvmmsg")
int tt_exit_recvmmsg(struct trace_event_raw_sys_exit *ctx) { return on_exit_recv_sys(ctx->ret, TT_SOCKTAP_SYS_RECVMMSG, NULL); }

SEC("tracepoint/syscalls/sys_enter_sendmmsg")
int tt_enter_sendmmsg(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], ctx->args[1], ctx->args[2], TT_SOCKTAP_SYS_SENDMMSG);
}

SEC("tracepoint/syscalls/sys_exit_sendmmsg")
int tt_exit_sendmmsg(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND, TT_SOCKTAP_SYS_SENDMMSG); }

/* sendfile(out_fd, in_fd, offset, count): out_fd is the socket. */
SEC("tracepoint/syscalls/sys_enter_sendfile64")
int tt_enter_sendfile(struct trace_event_raw_sys_enter *ctx)
{
    return on_enter((__s32)ctx->args[0], 0, ctx->args[3], TT_SOCKTAP_SYS_SENDFILE);
}

SEC("tracepoint/syscalls/sys_exit_sendfile64")
int tt_exit_sendfile(struct trace_event_raw_sys_exit *ctx) { return on_exit(ctx->ret, TT_SOCKTAP_DIR_SEND, TT_SOCKTAP_SYS_SENDFILE); }
