// SPDX-License-Identifier: GPL-2.0
/* socktap_sock.bpf.h - a TCP receive's and a stamped send's data taken
 * where the socket layer returns (sock:sock_recv_length in
 * sock_recvmsg, sock:sock_send_length in sock_sendmsg) instead of at the
 * syscall's exit. Included at the end of socktap.bpf.c, after the raw
 * pair's syscall numbers; x86_64 only (the numbers and registers).
 *
 * Why: sys_exit_read and sys_exit_write fire for every read and write of
 * every process on the host (files and pipes too), each building a
 * perf-event record before a program that then turns it away; these two
 * fire only for socket receives and sends, run the program directly
 * (tp_btf) and hand it the sock, so fd need not be looked up. Measured
 * (bpf/README.md, "Data at the socket layer's hooks"): a process nobody
 * traces pays about 260 ns less per read or write of a file; a traced TCP
 * read or write costs the same within this machine's noise.
 *
 * What they see: the syscall is found from the registers the task entered
 * it with (orig_ax), and only read, recvfrom, readv and recvmsg (receives)
 * and write, sendto, writev and sendmsg (sends, with the send stamp:
 * socktap_send.bpf.h) of 64-bit tasks go on, with the same arguments as at
 * the syscall's exit; recvmmsg, sendmmsg and sendfile keep their syscall
 * programs (the hooks fire once per message, or without a user buffer),
 * unless sock_state: then each message or chunk is counted here
 * (socktap_state.bpf.h). The first hook on a socket accepted on a traced
 * port says ACCEPT first (announce_accept).
 * The length is the socket layer's return, which the syscall returns. A
 * sock without a file (a kernel socket, such as a network filesystem's,
 * used inside a task's read of a file) is turned away (tcp_user_sock).
 *
 * Userspace loads tt_sock_recv in place of the four receive exits, and,
 * when sends are stamped, tt_sock_send in place of tt_exit_write_stamped,
 * tt_exit_sendto_stamped and the enter and exit programs of writev and
 * sendmsg (stamp_vec_sends), on a kernel with both tracepoints unless
 * TOKENTAP_NO_SOCK_HOOKS is set; never with the raw pair. */
#if defined(__TARGET_ARCH_x86)

SEC("tp_btf/sock_recv_length")
int BPF_PROG(tt_sock_recv, struct sock *sk, int ret, int flags)
{
    if (ret < 0) return 0;
    struct task_struct *task = bpf_get_current_task_btf();
    /* a process the filters turn away looks nothing up */
    if (!process_passes(task->tgid)) return 0;
    /* the thread's call_args first: they keep where its registers are */
    struct call_args *live = task_args(task);
    const struct pt_regs *regs = task_syscall_regs(task, live);
    unsigned long nr = regs->orig_ax;
    __u32 sys;
    if (raw_nr_is_data(nr)) {
        sys = raw_sys_of_nr(nr);
        if (!is_recv_syscall(sys)) return 0;
    } else if (sock_state && nr == TT_NR_RECVMMSG) {
        sys = TT_SOCKTAP_SYS_RECVMMSG;
    } else {
        return 0;
    }
    if (regs->cs != TT_USER64_CS) return 0;
    return on_exit_recv(ret, sys, regs, sk, task, live); /* says ACCEPT first where due (announce_accept) */
}

/* Every send of the task clears its stamp, taken or not (a send this
 * program does not take, io_uring's say, must not leave one for the next). */
SEC("tp_btf/sock_send_length")
int BPF_PROG(tt_sock_send, struct sock *sk, int ret, int flags)
{
    struct task_struct *task = bpf_get_current_task_btf();
    /* A process the filters turn away looks nothing up: it has no stamp
     * to clear (tt_send_stamp applies the same filters). */
    if (!process_passes(task->tgid)) return 0;
    struct call_args *live = task_args(task);
    const struct pt_regs *regs = task_syscall_regs(task, live);
    unsigned long nr = regs->orig_ax;
    if (regs->cs == TT_USER64_CS) {
        __u32 sys = TT_SOCKTAP_SYS_COUNT;
        if (raw_nr_is_data(nr)) sys = raw_sys_of_nr(nr);
        else if (sock_state && nr == TT_NR_SENDMMSG) sys = TT_SOCKTAP_SYS_SENDMMSG;
        else if (sock_state && nr == TT_NR_SENDFILE) sys = TT_SOCKTAP_SYS_SENDFILE;
        if (sys == TT_SOCKTAP_SYS_WRITE || sys == TT_SOCKTAP_SYS_SENDTO || sys == TT_SOCKTAP_SYS_SENDMMSG ||
            sys == TT_SOCKTAP_SYS_SENDFILE ||
            (stamp_vec_sends && (sys == TT_SOCKTAP_SYS_WRITEV || sys == TT_SOCKTAP_SYS_SENDMSG))) {
            announce_accept(sk, regs);
            return on_exit_stamped_send(ret, sys, sk, regs, task, live);
        }
    }
    if (live && live->send_ns) live->send_ns = 0;
    return 0;
}

#endif
