/* SPDX-License-Identifier: GPL-2.0 */
/* socktap_ready.bpf.h - part of socktap.bpf.c (included there, one object):
 * the instant the kernel made received bytes readable at a traced socket,
 * before the process read them (READY records, socktap.h).
 *
 * The sock:sk_data_ready tracepoint fires in the receive path (softirq,
 * any CPU, any current task) when data was queued on a socket, just before
 * the reader is woken. The current task says nothing about whose socket it
 * is, so the sockets are chosen by the syscall side: a traced process that
 * connects, accepts or moves data on a TCP socket puts it in ready_socks;
 * a port a traced process accepted on goes in ready_port_on, so that the
 * next connections on it are followed from their first byte (a request
 * usually arrives before accept() returns). The TCP receive sequence
 * (rcv_nxt, read through CO-RE) says which bytes became readable; the
 * record's `seq` is its end and total_len the bytes since the previous
 * READY of that socket. close() removes the socket; the LRU evicts sockets
 * that died unseen.
 *
 * sk_data_ready runs for every TCP socket of the host, most of them not
 * followed: those are turned away by two loads from global data
 * (ready_sock_hint, ready_port_on) instead of a lookup in each of two hash
 * maps. */

#define TT_TCP_LISTEN 10

/* What one socket's READY records have said so far. */
struct ready_state {
    __u32 last_end; /* rcv_nxt of the last READY emitted (or refused) */
    __u32 fresh;    /* none emitted yet and the socket was followed from its start */
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
 * from_start: no byte can have been received yet (connect). */
static __always_inline void ready_follow(struct sock *sk, bool from_start)
{
    if (!ready_wanted) return;
    __u64 key = sock_number(sk, TT_ADDR_SLOT_SYSCALL);
    if (bpf_map_lookup_elem(&ready_socks, &key)) return;
    struct ready_state rs = {.last_end = from_start ? 0 : tcp_rcv_nxt(sk), .fresh = from_start};
    if (!ready_insert(key, &rs) && !bpf_map_lookup_elem(&ready_socks, &key)) stat_add(TT_SOCKTAP_STAT_READY_FULL, 1);
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

static __always_inline void ready_forget(struct sock *sk)
{
    if (!ready_wanted) return;
    __u64 key = sock_number(sk, TT_ADDR_SLOT_SYSCALL);
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
    struct tt_socktap_event ev;
    __builtin_memset(&ev, 0, sizeof ev);
    fill_tuple(&ev, sk);
    ev.sock_id = key;
    ev.fd = -1;
    ev.kind = TT_SOCKTAP_KIND_READY;
    ev.dir = TT_SOCKTAP_DIR_RECV;
    ev.seq = end;
    ev.flags |= TT_SOCKTAP_F_SEQ | (rs->fresh ? TT_SOCKTAP_F_READY_FROM_START : 0);
    ev.total_len = rs->fresh ? 0 : end - rs->last_end;
    ev.ts_ns = bpf_ktime_get_ns();
    /* Refused or not, the next READY starts here: after a refusal its start
     * no longer meets the last end userspace saw, which tells it. */
    rs->last_end = end;
    rs->fresh = 0;
    if (bpf_ringbuf_output(&events, &ev, sizeof ev, rb_flags(sizeof ev)) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        return 0;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    stat_add(TT_SOCKTAP_STAT_READY, 1);
    return 0;
}
