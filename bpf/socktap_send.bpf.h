// SPDX-License-Identifier: GPL-2.0
/* socktap_send.bpf.h - write and sendto without an enter program (issue 16).
 * Included by socktap.bpf.c after the copy and TLS helpers.
 *
 * A classic syscall tracepoint costs a traced write about 260-280 ns on the
 * project's VM before its program does anything, and the enter program of
 * write runs for every write of every process on the host. Instead, a
 * tp_btf program on tcp:tcp_sendmsg_locked, which the kernel fires only
 * for TCP sends, inside tcp_sendmsg_locked with the socket locked and
 * before any wait for send-buffer space, stamps the send in the thread's
 * task storage: socket, user buffer, length, instant. The syscall's exit
 * (sys_exit_write, sys_exit_sendto) takes the stamp when the registers the
 * syscall entered with name the same buffer and length, and copies the
 * bytes as before. What moves: a send's instant is taken after the socket
 * lock instead of at the syscall's entry (the bytes still cannot have left
 * the host before it). A write that returned bytes without a matching stamp
 * (kTLS, whose socket sends its own records; a write of more than the
 * kernel's MAX_RW_COUNT) has its socket found from fd at the exit and is
 * stamped there.
 *
 * Userspace loads these three programs instead of tt_enter_write,
 * tt_exit_write, tt_enter_sendto and tt_exit_sendto when the kernel has the
 * tracepoint (Linux 6.12 or so; 6.18 here) and TOKENTAP_NO_SEND_STAMP is not set;
 * never together with the raw-tracepoint pair (socktap_raw.bpf.h). */

/* tcp_sendmsg_locked fires this once per pass of its copy loop: the first
 * pass of a write() or send() has copied nothing of the user's one buffer
 * (an ITER_UBUF iterator at offset 0); a later pass has, or (after a wait
 * for buffer space) is the same send again, which keeps its first instant. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tt_send_stamp, const struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
             int size_goal)
{
    const struct iov_iter *it = &msg->msg_iter;
    if (it->iter_type != bpf_core_enum_value(enum iter_type, ITER_UBUF) || it->iov_offset != 0) return 0;
    struct call_args *a;
    if (!task_traced_args(bpf_get_current_pid_tgid(), &a)) return 0;
    __u16 family = sk->__sk_common.skc_family;
    if ((family != AF_INET && family != AF_INET6) || sk_port_rejected(sk)) return 0;
    if (!a) a = thread_args();
    if (!a) return 0;
    __u64 buf = (__u64)it->ubuf, len = it->count;
    if (a->send_ns && a->send_sk == (__u64)sk && a->send_buf == buf && a->send_len == len) return 0;
    a->send_sk = (__u64)sk;
    a->send_buf = buf;
    a->send_len = len;
    a->send_ns = bpf_ktime_get_ns();
    return 0;
}

/* The exit of write or sendto (fd, buffer, length in the first three
 * registers either way): the send stamped by tt_send_stamp, or, without a
 * matching stamp, the socket found from fd now. */
static __always_inline int on_exit_stamped_send(long ret, __u32 syscall)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct call_args *live = bpf_task_storage_get(&args_by_task, bpf_get_current_task_btf(), 0, 0);
    struct call_args stamp = {};
    if (live && live->send_ns) {
        stamp.sk = live->send_sk;
        stamp.buf = live->send_buf;
        stamp.count = live->send_len;
        stamp.enter_ns = live->send_ns;
        live->send_ns = 0;
    }
    if (!stamp.enter_ns) {
        /* nothing sent through tcp_sendmsg_locked from this thread's buffer:
         * the other writes of every process end here */
        bool tls_waiting = live && (live->tls_active || live->tls_pending);
        if ((ret <= 0 && !tls_waiting) || !task_traced_given(id, live)) return 0;
    }
    const struct pt_regs *regs = syscall_regs();
    __s32 fd = (__s32)PT_REGS_PARM1_SYSCALL(regs);
    __u64 buf = PT_REGS_PARM2_SYSCALL(regs), len = PT_REGS_PARM3_SYSCALL(regs);
    struct sock *sk;
    if (stamp.enter_ns && stamp.buf == buf && stamp.count == len) {
        /* the filters passed when the send was stamped */
        sk = (struct sock *)stamp.sk;
    } else {
        /* kTLS, a write past MAX_RW_COUNT, or a stamp left by a send this
         * exit is not the end of: the socket from fd, the instant now */
        if (fd < 0 || (stamp.enter_ns && !task_traced_given(id, live))) return 0;
        sk = tcp_sock_of_fd(fd);
        if (!sk || sk_port_rejected(sk)) return 0;
        if (!live) live = thread_args();
        stamp.enter_ns = bpf_ktime_get_ns();
    }
    if (!live) return 0;
    tls_note_send(live, sk, fd, syscall, stamp.enter_ns);
    struct call_args args = {
        .buf = buf,
        .enter_ns = stamp.enter_ns,
        .sk = (__u64)sk,
        .fd = fd,
        .syscall = syscall,
    };
    return exit_data(&args, live, ret, TT_SOCKTAP_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_write")
int tt_exit_write_stamped(struct trace_event_raw_sys_exit *ctx)
{
    return on_exit_stamped_send(ctx->ret, TT_SOCKTAP_SYS_WRITE);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int tt_exit_sendto_stamped(struct trace_event_raw_sys_exit *ctx)
{
    return on_exit_stamped_send(ctx->ret, TT_SOCKTAP_SYS_SENDTO);
}
