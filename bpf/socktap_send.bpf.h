// SPDX-License-Identifier: GPL-2.0
/* socktap_send.bpf.h - write and sendto without an enter program (issue 16).
 * Included by socktap.bpf.c after the copy and TLS helpers.
 *
 * The enter program of write ran for every write of every process on the
 * host, on a classic syscall tracepoint (which builds a perf record of the
 * arguments before the program runs). Instead, a
 * tp_btf program on tcp:tcp_sendmsg_locked, which the kernel fires only
 * for TCP sends, inside tcp_sendmsg_locked with the socket locked and
 * before any wait for send-buffer space, stamps the send in the thread's
 * task storage: socket, user buffer, length, instant. The syscall's exit
 * (sys_exit_write, sys_exit_sendto) takes the stamp when the registers the
 * syscall entered with name the same buffer and length, and copies the
 * bytes as before. Measured (bpf/README.md, "Sends without an enter
 * program"): a write nobody traces costs about 100 ns less under a name
 * filter; a traced TCP write costs the same within the noise (the stamp's
 * program and the exit's register read cost what the enter did). What
 * moves: a send's instant is taken after the socket
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

/* Whether writev and sendmsg are stamped here too, their data taken at
 * sock_send_length (socktap_sock.bpf.h), which clears every stamp of its
 * task; userspace sets it when it loads tt_sock_send in place of their
 * syscall programs. */
const volatile bool stamp_vec_sends = false;

/* tcp_sendmsg_locked fires this once per pass of its copy loop: the first
 * pass of a write() or send() has copied nothing of the user's one buffer
 * (an ITER_UBUF iterator at offset 0); a later pass has, or (after a wait
 * for buffer space) is the same send again, which keeps its first instant.
 * With stamp_vec_sends, a writev or sendmsg of several buffers (ITER_IOVEC)
 * is stamped at its first pass too (send_buf 0, send_len 0); a later pass
 * at the start of a buffer keeps the stamp of its socket, which only the
 * send's own sock_send_length clears. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tt_send_stamp, const struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
             int size_goal)
{
    const struct iov_iter *it = &msg->msg_iter;
    __u8 type = it->iter_type;
    bool vec = stamp_vec_sends && type == bpf_core_enum_value(enum iter_type, ITER_IOVEC);
    if ((type != bpf_core_enum_value(enum iter_type, ITER_UBUF) && !vec) || it->iov_offset != 0) return 0;
    struct call_args *a;
    struct task_struct *task = bpf_get_current_task_btf();
    if (!task_traced_args(task, task_pid_tgid(task), &a)) return 0;
    __u16 family = sk->__sk_common.skc_family;
    if ((family != AF_INET && family != AF_INET6) || sk_port_rejected(sk)) return 0;
    /* the instant before the thread's storage may be made: the first
     * allocation in a process took 20 to 60 us here */
    __u64 now = bpf_ktime_get_ns();
    if (!a) a = thread_args();
    if (!a) return 0;
    if (vec) {
        if (a->send_ns && a->send_sk == (__u64)sk && !a->send_buf) return 0;
        a->send_sk = (__u64)sk;
        a->send_buf = 0;
        a->send_len = 0;
        a->send_ns = now;
        return 0;
    }
    __u64 buf = (__u64)it->ubuf, len = it->count;
    if (a->send_ns && a->send_sk == (__u64)sk && a->send_buf == buf && a->send_len == len) return 0;
    a->send_sk = (__u64)sk;
    a->send_buf = buf;
    a->send_len = len;
    a->send_ns = now;
    return 0;
}

/* The exit of write or sendto (fd, buffer, length in the first three
 * registers either way): the send stamped by tt_send_stamp when the stamp
 * names this call's buffer and length, else the socket found from fd now
 * (or the one the socket layer's hook handed over, hook_sk:
 * socktap_sock.bpf.h) and the instant now. From that hook also writev
 * (fd, iovec array, count) and sendmsg (fd, user_msghdr), and with
 * sock_state one message of a sendmmsg or a chunk of a sendfile (counted,
 * not copied: socktap_state.bpf.h): their stamp is the one on hook_sk (the
 * hook clears every stamp, so it is this send's). */
static __always_inline int on_exit_stamped_send(long ret, __u32 syscall, struct sock *hook_sk,
                                                const struct pt_regs *hook_regs, struct task_struct *task,
                                                struct call_args *live)
{
    __u64 id = task_pid_tgid(task);
    const struct pt_regs *regs = hook_regs; /* the hook read them already, else found when needed */
    struct sock *sk = NULL;
    __u64 send_ns = 0;
    /* writev, sendmsg, and from the hook also sendmmsg and sendfile: the stamp of the hook's socket */
    bool by_sock = syscall == TT_SOCKTAP_SYS_WRITEV || syscall == TT_SOCKTAP_SYS_SENDMSG ||
                   syscall == TT_SOCKTAP_SYS_SENDMMSG || syscall == TT_SOCKTAP_SYS_SENDFILE;
    if (live && live->send_ns) {
        if (!regs) regs = task_syscall_regs(task, live);
        if (by_sock ? live->send_sk == (__u64)hook_sk
                : live->send_buf == PT_REGS_PARM2_SYSCALL(regs) && live->send_len == PT_REGS_PARM3_SYSCALL(regs)) {
            /* the filters passed when the send was stamped */
            sk = (struct sock *)live->send_sk;
            send_ns = live->send_ns;
        }
        live->send_ns = 0;
    }
    if (!sk) {
        /* Not a write of one buffer that tcp_sendmsg_locked took (the other
         * writes of every process end here), kTLS, or a stamp left by a send
         * this exit is not the end of. */
        bool tls_waiting = live && (live->tls_active || live->tls_pending);
        if ((ret <= 0 && !tls_waiting) || !task_traced(id)) return 0;
        if (!regs) regs = task_syscall_regs(task, live);
        __s32 fd = (__s32)PT_REGS_PARM1_SYSCALL(regs);
        if (fd < 0) return 0;
        sk = hook_sk ? tcp_user_sock(hook_sk) : tcp_sock_of_fd(fd);
        if (!sk || sk_port_rejected(sk)) return 0;
        if (!live) live = thread_args();
        send_ns = bpf_ktime_get_ns();
    }
    if (!live) return 0;
    struct data_call args = {
        .buf = PT_REGS_PARM2_SYSCALL(regs),
        .count = syscall == TT_SOCKTAP_SYS_WRITEV ? PT_REGS_PARM3_SYSCALL(regs) : 0,
        .enter_ns = send_ns,
        .sk = (__u64)sk,
        .fd = (__s32)PT_REGS_PARM1_SYSCALL(regs),
        .syscall = syscall,
        .not_copied = hook_sk && syscall == TT_SOCKTAP_SYS_SENDMMSG, /* one message of the array */
    };
    tls_note_send(live, sk, args.fd, syscall, send_ns);
    return exit_data(&args, live, ret, TT_SOCKTAP_DIR_SEND, id);
}

SEC("tracepoint/syscalls/sys_exit_write")
int tt_exit_write_stamped(struct trace_event_raw_sys_exit *ctx)
{
    struct task_struct *task = bpf_get_current_task_btf();
    return on_exit_stamped_send(ctx->ret, TT_SOCKTAP_SYS_WRITE, NULL, NULL, task,
                                task_args(task));
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int tt_exit_sendto_stamped(struct trace_event_raw_sys_exit *ctx)
{
    struct task_struct *task = bpf_get_current_task_btf();
    return on_exit_stamped_send(ctx->ret, TT_SOCKTAP_SYS_SENDTO, NULL, NULL, task,
                                task_args(task));
}
