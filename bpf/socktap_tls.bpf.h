/* SPDX-License-Identifier: GPL-2.0 */
/* socktap_tls.bpf.h - part of socktap.bpf.c (included there, one object):
 * the plaintext of TLS libraries in running processes, read with uprobes
 * on OpenSSL's SSL_write / SSL_write_ex (the bytes handed in, stamped at
 * entry) and SSL_read / SSL_read_ex (the bytes handed out, stamped at
 * return). Userspace attaches them to each libssl file it finds
 * (userspace/source/tls_attach.c); a uprobe on a file fires in every
 * process that maps it, and the process filters apply here.
 *
 * Pairing with the connection, without any structure offset: inside an
 * SSL call the library reads or writes its socket itself, on the same
 * thread, so the enter of that syscall notes its sock in the thread's
 * call_args (tls_sk); the SSL object's sock is then kept in tls_socks for
 * the calls the library serves from its own buffer, with no syscall.
 * A library that feeds OpenSSL through memory BIOs (Node.js) moves its
 * ciphertext outside the calls, on the same thread: it reads the socket,
 * then hands the bytes to SSL_read; it calls SSL_write, then writes the
 * ciphertext to the socket. So an SSL_read with no socket known takes the
 * thread's last socket read (TLS_BY_LAST_READ), and an SSL_write with none
 * is sent pending (F_TLS_PENDING, sock_id 0) and paired by the thread's
 * next socket write (a TLS_PAIR record; userspace holds the pending ones
 * until it comes). Either way the SSL object's socket is kept in tls_socks,
 * which wins from then on. A call paired by none of these is counted
 * (TLS_UNPAIRED), never given to a guessed connection.
 *
 * Records: kind DATA with TT_SOCKTAP_F_TLS, syscall TLS_WRITE or TLS_READ,
 * the socket's tuple, the plaintext in pieces as for a syscall (the same
 * walk, the same truncation and loss accounting, owed bytes kept apart
 * from the socket's own). */

/* Set by userspace when it attaches to TLS libraries: then every exec of
 * a traced process is said (KIND_EXEC), so that a program started later
 * gets its library (or its own executable) attached. */
const volatile bool tls_wanted = false;

struct tls_key {
    __u64 ssl;
    __u32 tgid;
    __u32 pad;
};

struct tls_sock {
    __u64 sk;
    __u64 read_ns; /* the object's last socket read (exit): the ciphertext of reads served from its buffer */
    __s32 fd;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, struct tls_key);
    __type(value, struct tls_sock);
} tls_socks SEC(".maps");

/* The thread's first socket write after plaintext writes it held pending:
 * their socket. Kept for the SSL object, and said in a TLS_PAIR record. */
static __always_inline int tls_pair_pending(struct call_args *a, struct sock *sk, __s32 fd, __u32 syscall)
{
    a->tls_pending = 0;
    __u64 id = bpf_get_current_pid_tgid();
    struct tls_key key = {.ssl = a->tls_pending_ssl, .tgid = id >> 32};
    struct tls_sock v = {.sk = (__u64)sk, .fd = fd};
    bpf_map_update_elem(&tls_socks, &key, &v, BPF_ANY);
    struct tt_socktap_event ev;
    fill_head(&ev, sk, id, fd, syscall, TT_SOCKTAP_KIND_TLS_PAIR);
    __u64 now = bpf_ktime_get_ns();
    ev.ts_ns = ev.enter_ns = ev.exit_ns = now;
    ev.ret = 0;
    ev.dir = TT_SOCKTAP_DIR_SEND;
    ev.lost_before = a->tls_pending_lost;
    a->tls_pending_lost = 0;
    if (bpf_ringbuf_output(&events, &ev, sizeof ev, rb_flags(sizeof ev)) == 0) stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    else stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
    return 0;
}

/* The entry of an SSL call on this thread: what its return needs. */
static __always_inline int tls_enter(__u64 ssl, __u64 buf, __u64 len_ptr, __u8 dir, bool ex)
{
    if (!task_traced(bpf_get_current_pid_tgid())) return 0;
    struct call_args *a = thread_args();
    if (!a) return 0;
    a->tls_ssl = ssl;
    a->tls_buf = buf;
    a->tls_len_ptr = len_ptr;
    a->tls_enter_ns = bpf_ktime_get_ns();
    a->tls_sk = 0;
    a->tls_socket_ns = 0;
    a->tls_fd = -1;
    a->tls_dir = dir;
    a->tls_ex = ex;
    a->tls_active = 1;
    return 0;
}

/* The plaintext of one TLS call, total bytes at buf, as DATA records of
 * sk's TLS stream (or, pending, of no socket yet: the thread's TLS_PAIR
 * record names it; its lost bytes add up in *pending_lost). SEND is
 * stamped at enter_ns, RECV at now; socket_ns: when its ciphertext crossed
 * the socket (0: not known). */
static __always_inline void tls_emit(__u64 id, struct sock *sk, __s32 fd, __u8 dir, __u64 total, __u64 buf,
                                     __u64 enter_ns, __u64 now, __u64 socket_ns, long ret, bool pending,
                                     __u64 *pending_lost)
{
    __u32 zero = 0;
    struct scratch_rec *rec = bpf_map_lookup_elem(&scratch, &zero);
    if (!rec) return;
    struct tt_socktap_event *ev = &rec->ev;
    __u32 call = dir == TT_SOCKTAP_DIR_SEND ? TT_SOCKTAP_SYS_TLS_WRITE : TT_SOCKTAP_SYS_TLS_READ;
    if (pending) {
        /* no socket yet: no tuple; the TLS_PAIR record gives it */
        __builtin_memset(ev, 0, sizeof *ev);
        ev->tgid = id >> 32;
        ev->tid = (__u32)id;
        ev->fd = -1;
        ev->syscall = call;
        ev->kind = TT_SOCKTAP_KIND_DATA;
        ev->flags = TT_SOCKTAP_F_TLS_PENDING;
    } else {
        if (sk_port_rejected(AS_KERNEL(struct sock, sk))) return;
        fill_head(ev, (struct sock *)sk, id, fd, call, TT_SOCKTAP_KIND_DATA);
    }
    ev->flags |= TT_SOCKTAP_F_TLS;
    ev->socket_ns = socket_ns;
    ev->enter_ns = enter_ns;
    ev->exit_ns = now;
    ev->ts_ns = dir == TT_SOCKTAP_DIR_SEND ? enter_ns : now;
    ev->ret = ret;
    ev->dir = dir;

    /* the plaintext's own owed bytes: pad 1 keeps them apart from the socket's
     * (a pending record's go with the thread, to its TLS_PAIR record) */
    struct lost_key lk = {.sock_id = (__u64)sk, .dir = dir, .pad = 1};
    __u64 *lostp = lost_ever && !pending ? bpf_map_lookup_elem(&lost_bytes, &lk) : NULL;
    __u64 lost_in = lostp ? *lostp : 0;
    struct copy_state *st = &rec->st;
    __builtin_memset(st, 0, sizeof *st);
    st->lost = lost_in;
    st->sock_id = (__u64)sk;
    st->total = total > 0xffffffffULL ? 0xffffffffu : (__u32)total;
    st->dir = dir;
    st->base_flags = ev->flags;
    st->base = buf;
    st->left = st->total;
    bpf_loop(TT_SOCKTAP_MAX_PIECES + 2, copy_step, NULL, 0);
    if (!st->walked) finish_message(st, ev, TT_SOCKTAP_F_TRUNCATED);
    __u64 lost_out = st->lost;
    if (pending) {
        *pending_lost += lost_out;
    } else if (lost_out) {
        lost_ever = 1;
        bpf_map_update_elem(&lost_bytes, &lk, &lost_out, BPF_ANY);
    } else if (lost_in) {
        bpf_map_delete_elem(&lost_bytes, &lk);
    }
}

/* The return of the SSL call this thread entered: its plaintext, if any,
 * as records of the call's socket. */
static __always_inline int tls_exit(long ret)
{
    struct call_args *a = task_args(bpf_get_current_task_btf());
    if (!a || !a->tls_active) return 0;
    a->tls_active = 0;
    __u64 total;
    if (a->tls_ex) {
        /* SSL_read_ex / SSL_write_ex: 1 on success, the count through the pointer */
        __u64 n = 0;
        if (ret != 1 || !a->tls_len_ptr || bpf_probe_read_user(&n, sizeof n, (const void *)a->tls_len_ptr) != 0)
            return 0;
        total = n;
    } else {
        if (ret <= 0) return 0;
        total = (__u64)ret;
    }
    if (!total) return 0;
    __u64 id = bpf_get_current_pid_tgid();
    __u64 now = bpf_ktime_get_ns();
    __u8 dir = a->tls_dir;
    stat_add(TT_SOCKTAP_STAT_TLS_CALLS, 1);
    struct tls_key key = {.ssl = a->tls_ssl, .tgid = id >> 32};
    struct sock *sk = (struct sock *)a->tls_sk;
    __s32 fd = a->tls_fd;
    /* the socket instant: the call's own syscall's, else (a read served
     * from the library's buffer) the object's last socket read */
    __u64 socket_ns = sk ? a->tls_socket_ns : 0;
    struct tls_sock *known = bpf_map_lookup_elem(&tls_socks, &key);
    if (sk) {
        struct tls_sock v = {.sk = (__u64)sk, .fd = fd, .read_ns = known ? known->read_ns : 0};
        if (dir == TT_SOCKTAP_DIR_RECV && socket_ns) v.read_ns = socket_ns;
        bpf_map_update_elem(&tls_socks, &key, &v, BPF_ANY);
    } else if (known) {
        sk = (struct sock *)known->sk;
        fd = known->fd;
        if (dir == TT_SOCKTAP_DIR_RECV) socket_ns = known->read_ns;
    }
    bool pending = false;
    if (!sk && dir == TT_SOCKTAP_DIR_RECV && a->last_recv_sk) {
        /* a memory BIO: the ciphertext came from the thread's last socket read */
        sk = (struct sock *)a->last_recv_sk;
        fd = a->last_recv_fd;
        socket_ns = a->last_recv_exit_ns;
        struct tls_sock v = {.sk = (__u64)sk, .fd = fd, .read_ns = socket_ns};
        bpf_map_update_elem(&tls_socks, &key, &v, BPF_ANY);
        stat_add(TT_SOCKTAP_STAT_TLS_BY_LAST_READ, 1);
    } else if (!sk && dir == TT_SOCKTAP_DIR_SEND && (!a->tls_pending || a->tls_pending_ssl == a->tls_ssl)) {
        /* a memory BIO: the ciphertext goes out with the thread's next socket write */
        pending = true;
        a->tls_pending = 1;
        a->tls_pending_ssl = a->tls_ssl;
        stat_add(TT_SOCKTAP_STAT_TLS_PENDING, 1);
    }
    if (!sk && !pending) {
        stat_add(TT_SOCKTAP_STAT_TLS_UNPAIRED, 1);
        stat_add(TT_SOCKTAP_STAT_TLS_UNPAIRED_BYTES, total);
        return 0;
    }
    tls_emit(id, sk, fd, dir, total, a->tls_buf, a->tls_enter_ns, now, socket_ns, ret, pending, &a->tls_pending_lost);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(tt_ssl_write, void *ssl, const void *buf, int num)
{
    return tls_enter((__u64)ssl, (__u64)buf, 0, TT_SOCKTAP_DIR_SEND, false);
}

SEC("uprobe")
int BPF_KPROBE(tt_ssl_write_ex, void *ssl, const void *buf, __u64 num, __u64 *written)
{
    return tls_enter((__u64)ssl, (__u64)buf, (__u64)written, TT_SOCKTAP_DIR_SEND, true);
}

SEC("uprobe")
int BPF_KPROBE(tt_ssl_read, void *ssl, void *buf, int num)
{
    return tls_enter((__u64)ssl, (__u64)buf, 0, TT_SOCKTAP_DIR_RECV, false);
}

SEC("uprobe")
int BPF_KPROBE(tt_ssl_read_ex, void *ssl, void *buf, __u64 num, __u64 *readbytes)
{
    return tls_enter((__u64)ssl, (__u64)buf, (__u64)readbytes, TT_SOCKTAP_DIR_RECV, true);
}

/* One return program for the four: the entry noted which it was. All four
 * return an int: the upper half of the return register is not theirs. */
SEC("uretprobe")
int BPF_KRETPROBE(tt_ssl_return, long ret)
{
    return tls_exit((int)ret);
}

/* ---- Go's crypto/tls ----
 *
 * Go programs carry their own TLS: (*tls.Conn).Write and (*tls.Conn).Read,
 * in Go's register ABI (Go 1.17 and later, amd64): the receiver in AX, the
 * slice's pointer and length in BX and CX, the result n in AX at the
 * return; R14 always holds the running goroutine (its g). Userspace
 * attaches Write and Read at the conditional jump of their stack-growth
 * check (a jump is emulated by the kernel: one trap; most instructions are
 * stepped out of line, a second trap), and Read's every return
 * instruction: a uretprobe would rewrite a return address on a stack Go
 * may move. When the jump is taken (CF or ZF set by the compare) the
 * stack grows and the function starts over: that pass is skipped, so each
 * call is seen once. A goroutine may move between threads inside a call,
 * so the state from Read's entry to its return is keyed by goroutine, and
 * the connection is found from the Conn itself, not from a syscall on the
 * thread: the net.Conn it wraps (its first field, an interface: the data
 * word at +8) is a *net.TCPConn, whose first word is its *netFD, whose
 * poll.FD holds the descriptor at +16 (a 16-byte mutex before it). A
 * Conn over anything else gives no TCP socket: counted unpaired. */

struct go_read_key {
    __u64 g;
    __u32 tgid;
    __u32 pad;
};

struct go_read {
    __u64 buf, sk, enter_ns;
    __s32 fd;
    __u32 pad;
};

/* LRU: a goroutine that never returns from Read (its program killed, a
 * background read still blocked when we stop) leaves its entry behind */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct go_read_key);
    __type(value, struct go_read);
} go_reads SEC(".maps");

/* The descriptor of the TCP connection a *tls.Conn wraps, or -1. */
static __always_inline __s32 go_conn_fd(__u64 conn)
{
    __u64 tcp_conn = 0, net_fd = 0;
    __s64 fd = -1;
    if (bpf_probe_read_user(&tcp_conn, sizeof tcp_conn, (const void *)(conn + 8)) != 0 || !tcp_conn) return -1;
    if (bpf_probe_read_user(&net_fd, sizeof net_fd, (const void *)tcp_conn) != 0 || !net_fd) return -1;
    if (bpf_probe_read_user(&fd, sizeof fd, (const void *)(net_fd + 16)) != 0) return -1;
    return fd >= 0 && fd <= 0x7fffffff ? (__s32)fd : -1;
}

/* At the stack check's JBE: whether it jumps (CF or ZF), to grow the stack. */
static __always_inline bool go_grows_stack(const struct pt_regs *ctx)
{
    return ctx->flags & (0x1 /* CF */ | 0x40 /* ZF */);
}

SEC("uprobe")
int tt_go_tls_write(struct pt_regs *ctx)
{
    if (go_grows_stack(ctx)) return 0;
    __u64 id = bpf_get_current_pid_tgid();
    if (!task_traced(id)) return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 len = ctx->cx;
    if (!len) return 0;
    stat_add(TT_SOCKTAP_STAT_TLS_CALLS, 1);
    __s32 fd = go_conn_fd(ctx->ax);
    struct sock *sk = fd >= 0 ? tcp_sock_of_fd(fd) : NULL;
    if (!sk) {
        stat_add(TT_SOCKTAP_STAT_TLS_UNPAIRED, 1);
        stat_add(TT_SOCKTAP_STAT_TLS_UNPAIRED_BYTES, len);
        return 0;
    }
    __u64 unused = 0;
    /* the socket write comes after the entry, unseen here: no socket instant */
    tls_emit(id, sk, fd, TT_SOCKTAP_DIR_SEND, len, ctx->bx, now, now, 0, (long)len, false, &unused);
    return 0;
}

SEC("uprobe")
int tt_go_tls_read(struct pt_regs *ctx)
{
    if (go_grows_stack(ctx)) return 0;
    __u64 id = bpf_get_current_pid_tgid();
    if (!task_traced(id)) return 0;
    struct go_read_key key = {.g = ctx->r14, .tgid = id >> 32};
    __s32 fd = go_conn_fd(ctx->ax);
    struct sock *sk = fd >= 0 ? tcp_sock_of_fd(fd) : NULL;
    struct go_read v = {.buf = ctx->bx, .sk = (__u64)sk, .fd = fd, .enter_ns = bpf_ktime_get_ns()};
    bpf_map_update_elem(&go_reads, &key, &v, BPF_ANY);
    return 0;
}

/* At each return instruction of (*tls.Conn).Read. */
SEC("uprobe")
int tt_go_tls_read_return(struct pt_regs *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct go_read_key key = {.g = ctx->r14, .tgid = id >> 32};
    struct go_read *v = bpf_map_lookup_elem(&go_reads, &key);
    if (!v) return 0;
    struct go_read r = *v;
    bpf_map_delete_elem(&go_reads, &key);
    long n = (long)ctx->ax;
    if (n <= 0) return 0;
    stat_add(TT_SOCKTAP_STAT_TLS_CALLS, 1);
    if (!r.sk) {
        stat_add(TT_SOCKTAP_STAT_TLS_UNPAIRED, 1);
        stat_add(TT_SOCKTAP_STAT_TLS_UNPAIRED_BYTES, (__u64)n);
        return 0;
    }
    /* the socket read inside this Read, when this thread made it (a
     * goroutine that moved threads, or a Read served from the Conn's own
     * buffer, has none) */
    __u64 socket_ns = 0;
    struct call_args *a = task_args(bpf_get_current_task_btf());
    if (a && a->last_recv_sk == r.sk && a->last_recv_exit_ns >= r.enter_ns) socket_ns = a->last_recv_exit_ns;
    __u64 unused = 0;
    tls_emit(id, (struct sock *)r.sk, r.fd, TT_SOCKTAP_DIR_RECV, (__u64)n, r.buf, r.enter_ns, bpf_ktime_get_ns(),
             socket_ns, n, false, &unused);
    return 0;
}

/* A traced process started a new program: said at once (a wakeup), so that
 * userspace attaches to its TLS library before it makes its first calls. */
SEC("tracepoint/sched/sched_process_exec")
int tt_exec(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (!tls_wanted || !task_traced(id)) return 0;
    struct tt_socktap_event ev;
    __builtin_memset(&ev, 0, sizeof ev);
    ev.tgid = id >> 32;
    ev.tid = (__u32)id;
    ev.fd = -1;
    ev.kind = TT_SOCKTAP_KIND_EXEC;
    ev.ts_ns = ev.enter_ns = ev.exit_ns = bpf_ktime_get_ns();
    if (bpf_ringbuf_output(&events, &ev, sizeof ev, BPF_RB_FORCE_WAKEUP) == 0) stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    else stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
    return 0;
}
