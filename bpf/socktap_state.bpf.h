// SPDX-License-Identifier: GPL-2.0
/* socktap_state.bpf.h - connect, accept and close taken from the TCP
 * socket's own state changes instead of syscall tracepoints; recvmmsg,
 * sendmmsg and sendfile counted at the socket layer's hooks. Included at
 * the end of socktap.bpf.c, after socktap_sock.bpf.h; x86_64 only.
 *
 * Why: while any classic syscall tracepoint has a program, the kernel
 * sends every syscall of every process on the host through its slow
 * entry and exit path (the syscall-tracepoint work flag is set on every
 * task, traced or not). With the data taken at the socket layer's hooks
 * (socktap_sock.bpf.h), the syscall programs left were connect, accept,
 * accept4, close, the mmsg pair and sendfile: 31 ns added to a getppid()
 * of a process nobody traces, against 1 for tp_btf hooks (bpf/README.md,
 * "Connect, accept and close from the socket's state").
 *
 * What stands in for each (tp_btf, which only runs where its event
 * happens):
 * - connect: sock:inet_sock_set_state CLOSE -> SYN_SENT fires inside the
 *   connect() of the task (its registers say connect and the fd); the
 *   task, fd and instant wait in the socket's storage (conn_roles) until
 *   SYN_SENT -> ESTABLISHED, which may run in softirq, emits the CONNECT
 *   record with the whole 4-tuple (the local port is chosen after
 *   SYN_SENT). A connect that fails emits nothing.
 * - accept: no event of accept() names its fd. A connection's SYN_RECV ->
 *   ESTABLISHED on a port a traced process listens on (accept_port_on:
 *   its listen() seen here, or its listening sockets read by userspace at
 *   start) marks the socket; the socket layer's first hook on it in a
 *   traced process emits ACCEPT (that process, the hook's fd) just before
 *   the DATA record, and follows its port's readable instants as the
 *   accept exit did (ready_follow_accepted).
 * - close: the socket's release (its file's last reference put) changes
 *   its state to FIN_WAIT1, LAST_ACK or CLOSE, or, for a socket already in
 *   CLOSE (reset by its peer), destroys it while its closer holds its lock
 *   (tcp_destroy_sock).
 *   Either way the closing task is current: CLOSE, flagged
 *   TT_SOCKTAP_F_RELEASED (every connection on the socket ends, in any
 *   process), carries the fd when its syscall is close(), else fd -1
 *   (close_range, exit, the end of a read that held the last reference).
 *   What moves: a dup()ed fd closed while another still refers to the
 *   socket says nothing until the last one goes, and a process that exits
 *   now ends its connections.
 * - recvmmsg, sendmmsg, sendfile: the hooks fire once per message (or
 *   chunk) with no way to tell which message of the array it is, so the
 *   bytes are counted, not copied (F_NOT_COPIED: a gap userspace reports).
 *   TOKENTAP_NO_SOCK_HOOKS brings back the syscall programs that copy
 *   the mmsg messages.
 *
 * Userspace loads the three programs here in place of the twelve syscall
 * programs above (connect, accept, accept4, close, recvmmsg, sendmmsg,
 * sendfile) when it loads tt_sock_recv and tt_sock_send, the kernel has
 * both tracepoints and TOKENTAP_NO_SOCK_STATE is not set (sock_state). */
#if defined(__TARGET_ARCH_x86)

#define TT_NR_CLOSE 3
#define TT_NR_SENDFILE 40
#define TT_NR_CONNECT 42
#define TT_NR_RECVMMSG 299
#define TT_NR_SENDMMSG 307

#define TT_TCP_ESTABLISHED 1
#define TT_TCP_SYN_SENT 2
#define TT_TCP_SYN_RECV 3
#define TT_TCP_FIN_WAIT1 4
#define TT_TCP_CLOSE 7
#define TT_TCP_LAST_ACK 9

/* Set by userspace when it loads the programs of this file. */
const volatile bool sock_state = false;

/* A socket's role, known before the process uses it as an fd: connected
 * (id, fd, enter_ns: the connecting thread, its fd, the SYN_SENT instant)
 * or accepted on a traced process's port (the rest 0). Deleted once said. */
struct conn_role {
    __u64 id;
    __u64 enter_ns;
    __s32 fd;
    __u32 kind; /* TT_SOCKTAP_KIND_CONNECT or TT_SOCKTAP_KIND_ACCEPT */
};

struct {
    __uint(type, BPF_MAP_TYPE_SK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct conn_role);
} conn_roles SEC(".maps");

/* Local ports (host order) a traced process listens on: 1 when it does.
 * Written here at listen() and by userspace (the --pid processes'
 * listening sockets, --port), through the mapped .bss; never cleared (a
 * stale port costs a connection to it one socket-storage entry). */
__u8 accept_port_on[65536];

/* Sockets marked accepted and not announced yet: while there are none,
 * the hooks do not look a socket's storage up. A marked socket that dies
 * unannounced gives its count back when it is destroyed (tt_sock_destroy);
 * a count left behind (a destruction this missed) only costs lookups. */
__u32 accepts_pending = 0;

/* Without a process filter every task is traced: every accepted socket
 * is marked. */
static __always_inline bool every_task_traced(void)
{
    return !filter_tgids && !filter_comm && !targ_cgroup_id;
}

/* Before Linux 6.13 a file's count of references was f_count. */
struct file___f_count {
    atomic_long_t f_count;
} __attribute__((preserve_access_index));

/* Whether f's last reference is gone (its release is running): the
 * reference count of file_ref_t is below zero once the last one is put
 * (FILE_REF_NOREF, then FILE_REF_DEAD), f_count was 0. */
static __always_inline bool file_released(struct file *f)
{
    if (!f) return false;
    if (bpf_core_field_exists(struct file, f_ref)) return BPF_CORE_READ(f, f_ref.refcnt.counter) < 0;
    return BPF_CORE_READ((struct file___f_count *)f, f_count.counter) == 0;
}

/* The socket sk is released by the current task: flush what it owes, stop
 * following its readable instants, and say CLOSE. Not filtered by port: a
 * socket that reached CLOSE has given its local port back (inet_num 0),
 * and userspace ignores the close of a connection it never saw. */
static __always_inline int state_closed(struct sock *sk)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (!task_traced(id)) return 0;
    const struct pt_regs *regs = syscall_regs();
    __s32 fd = regs->orig_ax == TT_NR_CLOSE && regs->cs == TT_USER64_CS ? (__s32)PT_REGS_PARM1_SYSCALL(regs) : -1;
    __u64 now = bpf_ktime_get_ns();
    flush_lost(sk, id, fd, TT_SOCKTAP_DIR_SEND, now);
    flush_lost(sk, id, fd, TT_SOCKTAP_DIR_RECV, now);
    ready_forget(sk);
    return emit_marker(sk, id, fd, TT_SOCKTAP_SYS_CLOSE, TT_SOCKTAP_KIND_CLOSE, now, 0, now, 0,
                       TT_SOCKTAP_F_RELEASED);
}

/* The state changes a task makes by its own call: connect (CLOSE ->
 * SYN_SENT), listen (-> LISTEN), and the socket's release (-> FIN_WAIT1,
 * LAST_ACK or CLOSE while its file is being released). Every other change
 * (most of them in softirq) is turned away by its states. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tt_sock_state_task, const struct sock *csk, const int oldstate, const int newstate)
{
    bool opening = newstate == TT_TCP_SYN_SENT && oldstate == TT_TCP_CLOSE;
    bool listening = newstate == TT_TCP_LISTEN;
    bool closing = newstate == TT_TCP_FIN_WAIT1 || newstate == TT_TCP_LAST_ACK || newstate == TT_TCP_CLOSE;
    if (!opening && !listening && !closing) return 0;
    struct sock *sk = (struct sock *)csk;
    if (!sk_inet_tcp(sk)) return 0;
    if (closing) {
        /* only inside the release of the socket's file: a shutdown(), a
         * reset, a failed handshake happen while the file is held */
        struct socket *so = sk->sk_socket;
        if (!so || !file_released(so->file)) return 0;
        return state_closed(sk);
    }
    __u64 id = bpf_get_current_pid_tgid();
    if (!task_traced(id)) return 0;
    if (listening) {
        __u16 port = sk->__sk_common.skc_num; /* 0 for a listen() that binds its port itself */
        if (port) {
            if (!accept_port_on[port]) accept_port_on[port] = 1;
            ready_follow_port(sk);
        }
        return 0;
    }
    const struct pt_regs *regs = syscall_regs();
    if (regs->orig_ax != TT_NR_CONNECT || regs->cs != TT_USER64_CS) return 0; /* TCP Fast Open's sendto, io_uring */
    struct conn_role *r = bpf_sk_storage_get(&conn_roles, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
    if (!r) {
        stat_add(TT_SOCKTAP_STAT_ARGS_FULL, 1);
        return 0;
    }
    r->id = id;
    r->enter_ns = bpf_ktime_get_ns();
    r->fd = (__s32)PT_REGS_PARM1_SYSCALL(regs);
    r->kind = TT_SOCKTAP_KIND_CONNECT;
    /* the thread's storage made now, as the connect program did, rather
     * than in its first send, under the socket's lock (tens of us the
     * first time in a process) */
    thread_args();
    /* the local port is not chosen yet: the port filter by the remote one
     * (or a port bound before), as the handshake's end will apply it */
    if (!sk_port_rejected(sk)) ready_follow(sk, true);
    return 0;
}

/* The state changes the network makes (softirq, any current task): the
 * end of a traced connect's handshake says CONNECT; the end of a passive
 * handshake on a traced process's port marks the new socket accepted. A
 * program of its own so that a change in softirq is not skipped when it
 * interrupts tt_sock_state_task on this CPU (a program never runs nested
 * in itself). */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tt_sock_state_net, const struct sock *csk, const int oldstate, const int newstate)
{
    struct sock *sk = (struct sock *)csk;
    if (oldstate == TT_TCP_SYN_SENT) {
        struct conn_role *r = bpf_sk_storage_get(&conn_roles, sk, NULL, 0);
        if (!r) return 0;
        if (newstate == TT_TCP_ESTABLISHED && r->kind == TT_SOCKTAP_KIND_CONNECT && !sk_port_rejected(sk)) {
            __u64 now = bpf_ktime_get_ns();
            emit_marker(sk, r->id, r->fd, TT_SOCKTAP_SYS_CONNECT, TT_SOCKTAP_KIND_CONNECT, r->enter_ns, now, now, 0, 0);
        }
        bpf_sk_storage_delete(&conn_roles, sk);
        return 0;
    }
    if (oldstate != TT_TCP_SYN_RECV || newstate != TT_TCP_ESTABLISHED || !sk_inet_tcp(sk)) return 0;
    if (!every_task_traced() && !accept_port_on[sk->__sk_common.skc_num]) return 0;
    if (sk_port_rejected(sk)) return 0;
    struct conn_role *r = bpf_sk_storage_get(&conn_roles, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
    if (!r) {
        stat_add(TT_SOCKTAP_STAT_ARGS_FULL, 1);
        return 0;
    }
    if (r->kind != TT_SOCKTAP_KIND_ACCEPT) {
        r->kind = TT_SOCKTAP_KIND_ACCEPT;
        __sync_fetch_and_add(&accepts_pending, 1);
    }
    return 0;
}

/* A socket already in CLOSE (its peer reset it) changes no state when it
 * is released: its destruction, while the closing task still holds its
 * lock, says CLOSE instead. Destructions in softirq (an orphan's last
 * packet, with nobody holding the lock) are turned away. After a release
 * that moved it to CLOSE itself this says CLOSE a second time, which
 * userspace ignores (the connection has ended). Every TCP socket is
 * destroyed here, so a socket marked accepted that was never announced
 * (closed before any data, or never accept()ed) gives its count back. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tt_sock_destroy, struct sock *sk)
{
    if (accepts_pending) {
        struct conn_role *r = bpf_sk_storage_get(&conn_roles, sk, NULL, 0);
        if (r && r->kind == TT_SOCKTAP_KIND_ACCEPT && bpf_sk_storage_delete(&conn_roles, sk) == 0)
            __sync_fetch_and_add(&accepts_pending, -1);
    }
    if (!sk->sk_lock.owned || sk->sk_socket || !sk_inet_tcp(sk)) return 0;
    return state_closed(sk);
}

/* Before the first DATA record of a socket the network marked accepted
 * (tt_sock_state_net): ACCEPT, from the traced process whose hook this
 * is, with the fd of its syscall. Called by the socket layer's hooks. */
static __always_inline void announce_accept(struct sock *sk, const struct pt_regs *regs)
{
    if (!sock_state || !accepts_pending) return;
    struct conn_role *r = bpf_sk_storage_get(&conn_roles, sk, NULL, 0);
    if (!r) return;
    if (r->kind == TT_SOCKTAP_KIND_ACCEPT) {
        __u64 id = bpf_get_current_pid_tgid();
        if (!task_traced(id)) return; /* kept for the traced process */
        __s32 fd = (__s32)PT_REGS_PARM1_SYSCALL(regs);
        __u64 now = bpf_ktime_get_ns();
        ready_follow_accepted(sk);
        emit_marker(sk, id, fd, TT_SOCKTAP_SYS_ACCEPT, TT_SOCKTAP_KIND_ACCEPT, now, now, now, fd, 0);
        if (bpf_sk_storage_delete(&conn_roles, sk) == 0) __sync_fetch_and_add(&accepts_pending, -1);
        return;
    }
    bpf_sk_storage_delete(&conn_roles, sk);
}

#endif
