/* SPDX-License-Identifier: GPL-2.0 */
/* socktap_ready.bpf.h - part of socktap.bpf.c (included there, one object):
 * the instant the kernel made received bytes readable at a traced socket,
 * before the process read them (marks, socktap.h).
 *
 * The sock:sk_data_ready tracepoint fires in the receive path (softirq,
 * any CPU, any current task) when data was queued on a socket, just before
 * the reader is woken. The current task says nothing about whose socket it
 * is, so the sockets are chosen by the syscall side: a traced process that
 * connects, accepts or moves data on a TCP socket puts it in ready_socks;
 * a port a traced process accepted on (or, with connect, accept and close
 * taken from the socket's state, listens on: socktap_state.bpf.h) goes in
 * ready_port_on, so that the next connections on it are followed from
 * their first byte (a request usually arrives before accept() returns). The TCP receive sequence
 * (rcv_nxt, read through CO-RE) says which bytes became readable: a mark
 * (struct tt_socktap_mark) ends there and counts the bytes since the
 * previous mark of that socket. close() (or the socket's release)
 * removes the socket; the LRU evicts sockets that died unseen.
 *
 * A mark is not a record of its own: sk_data_ready puts it in one of the
 * socket's TT_SOCKTAP_READY_HELD slots, and the next DATA record of that
 * socket (usually the read of those very bytes) takes the held marks and
 * carries them after its data. That saves building and committing a record
 * per arrival (bpf/README.md, "Readable instants folded into the read").
 * When the slots are full, sk_data_ready sends them and the new mark in one
 * READY record; a read copied in pieces, and close, send what is held the
 * same way.
 *
 * The slots are a ring with one writer: sk_data_ready, which the receive
 * path runs with the socket locked, so never twice at once for one socket.
 * It writes mark k into slot[k % HELD] (its index first, then the mark)
 * and then moves head past k; a taker copies the marks tail..head and
 * moves tail. Two takers (two threads reading one socket, or sk_data_ready
 * emptying a full ring while a reader takes) may copy the same marks:
 * userspace drops a mark that does not end past the previous one. A slot
 * is written again only once tail has passed it; a taker that finds,
 * after its copy, another index in a slot than the one it copied drops
 * its copy (someone else took those marks, and this one may be torn
 * between two arrivals). That relies on stores and loads not being
 * reordered among themselves (x86_64); BPF has no weaker barrier than the
 * fetching atomics, which this object is not built for.
 *
 * sk_data_ready runs for every TCP socket of the host, most of them not
 * followed: those are turned away by two loads from global data
 * (ready_sock_hint, ready_port_on) instead of a lookup in each of two hash
 * maps. */

#define TT_TCP_LISTEN 10

/* One socket's readable instants: what its marks have said so far (written
 * by sk_data_ready alone) and the marks held for its next DATA record. */
struct ready_state {
    __u32 last_end; /* rcv_nxt of the last mark made */
    __u32 fresh;    /* no mark made yet and the socket was followed from its start */
    __u32 head;     /* marks put in slot[] so far (sk_data_ready alone writes it) */
    __u32 tail;     /* marks taken from slot[] so far */
    struct ready_slot {
        struct tt_socktap_mark m;
        __u32 index; /* the mark's number (head when it was put), written before m */
        __u32 pad;
    } slot[TT_SOCKTAP_READY_HELD];
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, __u64); /* struct sock address */
    __type(value, struct ready_state);
} ready_socks SEC(".maps");

/* A counting filter in front of ready_socks: each slot counts the sockets
 * hashed to it that were put in ready_socks and not taken out again. A
 * slot at zero says sk is not followed without looking it up; an entry the
 * LRU evicted leaves its count behind, which only costs that lookup. */
#define TT_READY_HINT_SLOTS 1024
__u32 ready_sock_hint[TT_READY_HINT_SLOTS];

/* Local ports (host order) whose accepted connections are followed from
 * their first byte: 1 when followed. Written by userspace too (--port, the
 * --pid processes' listening sockets), through the mapped .bss. */
__u8 ready_port_on[65536];

/* Set by userspace when the sk_data_ready program is attached: until then
 * the syscall side keeps no socket for it. */
const volatile bool ready_wanted = false;

/* Marks wait in the socket's slots for its next DATA record; false: each
 * goes out at once in a READY record of its own (TOKENTAP_READY_RECORDS,
 * to measure what holding them saves). */
const volatile bool ready_held = true;

static __always_inline __u32 tcp_rcv_nxt(struct sock *sk)
{
    return AS_KERNEL(struct tcp_sock, sk)->rcv_nxt;
}

/* Per CPU: where a program turns a socket's address into a number. The
 * verifier allows no arithmetic on a pointer (ready_hint's hash), but one
 * stored into a map value reads back as a scalar. One slot for the syscall
 * programs, which never run nested in each other (the kernel skips a
 * tracepoint program while another runs on the CPU), one for sk_data_ready,
 * which may interrupt them (softirq) but never itself (a tp_btf program
 * nested in itself is skipped). */
enum { TT_ADDR_SLOT_SYSCALL, TT_ADDR_SLOT_READY, TT_ADDR_SLOTS };
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, TT_ADDR_SLOTS);
    __type(key, __u32);
    __type(value, __u64);
} sock_addr_slot SEC(".maps");

/* sk's address as a number (0 only if the per-CPU slot were missing). */
static __always_inline __u64 sock_number(const struct sock *sk, __u32 slot)
{
    __u64 *addr = bpf_map_lookup_elem(&sock_addr_slot, &slot);
    if (!addr) return 0;
    *(volatile __u64 *)addr = (__u64)sk;
    return *(volatile __u64 *)addr;
}

/* sk's slot in ready_sock_hint: socket addresses are cache-line aligned
 * and spread over slab pages, so the bits above the line offset are folded. */
static __always_inline __u32 *ready_hint(__u64 key)
{
    return &ready_sock_hint[((key >> 6) ^ (key >> 16)) & (TT_READY_HINT_SLOTS - 1)];
}

/* Put sk in ready_socks (absent from it); false when the map refused it.
 * The slot is counted first, so sk_data_ready never finds it at zero while
 * the entry exists. */
static __always_inline bool ready_insert(__u64 key, const struct ready_state *rs)
{
    __u32 *hint = ready_hint(key);
    __sync_fetch_and_add(hint, 1);
    if (bpf_map_update_elem(&ready_socks, &key, rs, BPF_NOEXIST) == 0) return true;
    __sync_fetch_and_add(hint, -1);
    return false;
}

/* Follow sk's readable instants from now on (nothing when it already is).
 * from_start: no byte can have been received yet (connect). Returns sk's
 * state when it was followed before (it may hold marks), else NULL. */
static __always_inline struct ready_state *ready_follow(struct sock *sk, bool from_start)
{
    if (!ready_wanted) return NULL;
    __u64 key = sock_number(sk, TT_ADDR_SLOT_SYSCALL);
    struct ready_state *rs = bpf_map_lookup_elem(&ready_socks, &key);
    if (rs) return rs;
    struct ready_state init = {.last_end = from_start ? 0 : tcp_rcv_nxt(sk), .fresh = from_start};
    if (ready_insert(key, &init)) return NULL;
    rs = bpf_map_lookup_elem(&ready_socks, &key); /* inserted meanwhile by sk_data_ready */
    if (!rs) stat_add(TT_SOCKTAP_STAT_READY_FULL, 1);
    return rs;
}

#define TT_READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define TT_COMPILER_BARRIER() asm volatile("" ::: "memory")

/* Copy the marks rs holds into out[0..TT_SOCKTAP_READY_HELD), oldest
 * first, and mark them taken; how many. 0 when there are none, or when
 * sk_data_ready may have begun writing a copied slot again (someone else
 * took those marks meanwhile: see the top of this file). */
static __always_inline __u32 ready_take_held(struct ready_state *rs, struct tt_socktap_mark *out)
{
    __u32 tail = TT_READ_ONCE(rs->tail);
    __u32 head = TT_READ_ONCE(rs->head);
    __u32 n = head - tail;
    if (n == 0) return 0;
    if (n > TT_SOCKTAP_READY_HELD) {
        /* a slow taker moved tail back: the oldest are repeats at worst */
        tail = head - TT_SOCKTAP_READY_HELD;
        n = TT_SOCKTAP_READY_HELD;
    }
    TT_COMPILER_BARRIER();
    bool torn = false;
#pragma unroll
    for (__u32 i = 0; i < TT_SOCKTAP_READY_HELD; i++) {
        if (i >= n) break;
        struct ready_slot *slot = &rs->slot[(tail + i) & (TT_SOCKTAP_READY_HELD - 1)];
        out[i] = slot->m;
        TT_COMPILER_BARRIER();
        if (TT_READ_ONCE(slot->index) != tail + i) torn = true;
    }
    if (torn) return 0;
    TT_READ_ONCE(rs->tail) = head;
    return n;
}

/* A traced process accepted sk: its later siblings on the same port are
 * followed from their first byte. */
static __always_inline void ready_follow_port(struct sock *sk)
{
    if (!ready_wanted) return;
    __u16 port = AS_KERNEL(struct sock, sk)->__sk_common.skc_num;
    if (!ready_port_on[port]) ready_port_on[port] = 1;
}

/* A traced process accepted sk. On a port already followed, sk_data_ready
 * follows it from its first byte by itself: following it here from rcv_nxt
 * would race with the receive path on another CPU, which moves rcv_nxt just
 * before it calls sk_data_ready (accept does not hold the new socket's
 * lock), and the request's bytes would then count as already signalled
 * and get no READY. On a port not followed yet, the bytes already received
 * have no instant; sk is followed from rcv_nxt and its port from now on. */
static __always_inline void ready_follow_accepted(struct sock *sk)
{
    if (!ready_wanted) return;
    __u16 port = AS_KERNEL(struct sock, sk)->__sk_common.skc_num;
    if (ready_port_on[port]) return;
    ready_follow(sk, false);
    ready_follow_port(sk);
}

/* A READY record for sk: the marks rs holds, then *latest when not NULL.
 * Built on the stack: sk_data_ready may interrupt a syscall program that
 * is using this CPU's scratch record. */
static __always_inline void ready_send_held(struct sock *sk, struct ready_state *rs,
                                            const struct tt_socktap_mark *latest)
{
    struct {
        struct tt_socktap_event ev;
        struct tt_socktap_mark m[TT_SOCKTAP_MAX_MARKS];
    } rec;
    __u32 n = ready_take_held(rs, rec.m);
    if (latest) {
#pragma unroll
        for (__u32 i = 0; i < TT_SOCKTAP_READY_HELD + 1; i++)
            if (i == n) rec.m[i] = *latest;
        n++;
    }
    if (n == 0 || n > TT_SOCKTAP_MAX_MARKS) return;
    struct tt_socktap_event *ev = &rec.ev;
    __builtin_memset(ev, 0, sizeof *ev);
    fill_tuple(ev, sk);
    ev->sock_id = (__u64)sk;
    ev->fd = -1;
    ev->kind = TT_SOCKTAP_KIND_READY;
    ev->dir = TT_SOCKTAP_DIR_RECV;
    ev->marks = n;
    ev->ts_ns = latest ? latest->ns : bpf_ktime_get_ns();
    __u64 bytes = sizeof *ev + (__u64)n * sizeof(struct tt_socktap_mark);
    /* said again where the verifier sees it (the compiler moves the check) */
    asm volatile("if %[b] <= %[max] goto +1\n\t%[b] = %[max]" : [b] "+r"(bytes) : [max] "i"(sizeof rec));
    if (bpf_ringbuf_output(&events, &rec, bytes, rb_flags(bytes)) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        return;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
}

/* close: sk is no longer followed; the marks it holds go out first. */
static __always_inline void ready_forget(struct sock *sk)
{
    if (!ready_wanted) return;
    __u64 key = sock_number(sk, TT_ADDR_SLOT_SYSCALL);
    struct ready_state *rs = bpf_map_lookup_elem(&ready_socks, &key);
    if (!rs) return;
    ready_send_held(sk, rs, NULL);
    if (bpf_map_delete_elem(&ready_socks, &key) == 0) __sync_fetch_and_add(ready_hint(key), -1);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(tt_sk_data_ready, const struct sock *csk)
{
    struct sock *sk = (struct sock *)csk;
    if (sk->sk_protocol != TT_IPPROTO_TCP || sk->__sk_common.skc_state == TT_TCP_LISTEN) return 0;
    __u16 family = sk->__sk_common.skc_family;
    if (family != AF_INET && family != AF_INET6) return 0;
    __u64 key = sock_number(sk, TT_ADDR_SLOT_READY);
    struct ready_state *rs = *ready_hint(key) ? bpf_map_lookup_elem(&ready_socks, &key) : NULL;
    if (!rs) {
        __u16 port = sk->__sk_common.skc_num;
        if (!ready_port_on[port]) return 0;
        struct ready_state init = {.last_end = 0, .fresh = 1};
        if (!ready_insert(key, &init)) {
            stat_add(TT_SOCKTAP_STAT_READY_FULL, 1);
            return 0;
        }
        rs = bpf_map_lookup_elem(&ready_socks, &key);
        if (!rs) return 0;
    }
    __u32 end = tcp_rcv_nxt(sk);
    if (!rs->fresh && end == rs->last_end) return 0; /* nothing new (a FIN already counted, a wakeup) */
    struct tt_socktap_mark mark = {
        .ns = bpf_ktime_get_ns(),
        .end_seq = end,
        .len = rs->fresh ? TT_SOCKTAP_MARK_FROM_START : end - rs->last_end,
    };
    /* Sent or lost, the next mark starts here: after a loss its start no
     * longer meets the last end userspace saw, which tells it. */
    rs->last_end = end;
    rs->fresh = 0;
    stat_add(TT_SOCKTAP_STAT_READY, 1);
    __u32 head = rs->head;
    if (ready_held && head - TT_READ_ONCE(rs->tail) < TT_SOCKTAP_READY_HELD) {
        /* held for the socket's next DATA record: the index, the mark,
         * then head (a locked add, which orders the stores before it) */
        struct ready_slot *slot = &rs->slot[head & (TT_SOCKTAP_READY_HELD - 1)];
        TT_READ_ONCE(slot->index) = head;
        TT_COMPILER_BARRIER();
        slot->m = mark;
        TT_COMPILER_BARRIER();
        __sync_fetch_and_add(&rs->head, 1);
        return 0;
    }
    /* nobody read the socket since the slots filled: send them with this one */
    ready_send_held(sk, rs, &mark);
    return 0;
}
