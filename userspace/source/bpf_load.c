/* bpf_load.c - the eBPF source's kernel side (bpf_source.h): which of the
 * socktap programs load on this kernel, loading and attaching them with
 * the filters and the seeded ports (bpf_setup.c), the TLS uprobes
 * (tls_attach.c), polling the ring buffer into tt_bpf_source_feed
 * (bpf_source.c, which turns records into chunks), the kernel's counters,
 * and the source's end. A build without the skeleton (the fuzz harnesses)
 * gets a start and a poll that say so. */
#include "source/bpf_source.h"
#include "source/bpf_source_internal.h"
#include "source/bpf_setup.h"
#include "source/tls_attach.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

#define TRACED_AT_START_MAX 4096 /* processes of the traced set attached to TLS libraries at start */
#define TLS_RELEASE_EVERY_NS 1000000000ull /* how often exited processes' TLS links are looked for */

#ifdef TT_WITH_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "socktap.skel.h"
#endif

#ifdef TT_WITH_BPF

static int on_record(void *ctx, void *data, size_t len)
{
    tt_bpf_source_feed(ctx, data, len);
    return 0;
}

/* The classic tracepoint programs of the eight data syscalls, which the
 * raw-tracepoint pair tt_raw_enter/tt_raw_exit replaces (socktap_raw.bpf.h).
 * Receives have an exit program only (on_exit_recv in socktap.bpf.c). */
static const char *const classic_data_progs[] = {
    "tt_enter_write",  "tt_exit_write",   "tt_exit_read",     "tt_enter_sendto", "tt_exit_sendto", "tt_exit_recvfrom",
    "tt_enter_writev", "tt_exit_writev",  "tt_exit_readv",    "tt_enter_sendmsg", "tt_exit_sendmsg", "tt_exit_recvmsg",
};

/* The classic write and sendto programs that the send stamp replaces, and
 * the stamp's own three (socktap_send.bpf.h). */
static const char *const classic_send_progs[] = {"tt_enter_write", "tt_exit_write", "tt_enter_sendto", "tt_exit_sendto"};
static const char *const stamped_send_progs[] = {"tt_send_stamp", "tt_exit_write_stamped", "tt_exit_sendto_stamped"};

/* The syscall programs that the socket layer's hooks replace
 * (socktap_sock.bpf.h): tt_sock_recv the exits of the four receives,
 * tt_sock_send (with the send stamp) the stamped write and sendto exits
 * and the enter and exit of writev and sendmsg. */
static const char *const recv_exit_progs[] = {"tt_exit_read", "tt_exit_recvfrom", "tt_exit_readv", "tt_exit_recvmsg"};
static const char *const hooked_send_progs[] = {"tt_exit_write_stamped", "tt_exit_sendto_stamped", "tt_enter_writev",
                                                "tt_exit_writev",        "tt_enter_sendmsg",       "tt_exit_sendmsg"};

/* The syscall programs that the socket's state changes and the socket
 * layer's hooks replace (socktap_state.bpf.h), and the three that do. */
static const char *const state_syscall_progs[] = {
    "tt_enter_connect", "tt_exit_connect",  "tt_enter_accept",   "tt_exit_accept",   "tt_enter_accept4", "tt_exit_accept4",
    "tt_enter_close",   "tt_exit_recvmmsg", "tt_enter_sendmmsg", "tt_exit_sendmmsg", "tt_enter_sendfile", "tt_exit_sendfile",
};
static const char *const state_hook_progs[] = {"tt_sock_state_task", "tt_sock_state_net", "tt_sock_destroy"};

static void set_autoload(struct bpf_object *obj, const char *const *names, size_t n, bool on)
{
    for (size_t i = 0; i < n; i++) {
        struct bpf_program *p = bpf_object__find_program_by_name(obj, names[i]);
        if (p) bpf_program__set_autoload(p, on);
    }
}

/* Picks how the data syscalls are traced, one of three program sets:
 * - the raw-tracepoint pair (TOKENTAP_BPF_RAW set and not "0", on a kernel
 *   with the sys_enter BTF type). Opt-in: measured on this project's 2-core
 *   VM it adds 242-263 ns to every syscall of every process that is not
 *   traced (bpf/README.md, "Raw syscall tracepoints");
 * - the classic programs, with write and sendto stamped in
 *   tcp_sendmsg_locked instead of at their enter (the default on a kernel
 *   with that tracepoint, unless TOKENTAP_NO_SEND_STAMP is set);
 * - the classic programs alone.
 * Unless the raw pair is picked, a kernel with the sock:sock_recv_length
 * and sock:sock_send_length tracepoints takes receives at those instead of
 * the syscall exits, and with the send stamp write, sendto, writev and
 * sendmsg too (socktap_sock.bpf.h), unless TOKENTAP_NO_SOCK_HOOKS is set.
 * With both, on a kernel with the sock:inet_sock_set_state and
 * tcp:tcp_destroy_sock tracepoints, connect, accept and close come from the
 * socket's state and recvmmsg, sendmmsg and sendfile are counted at the
 * hooks (socktap_state.bpf.h), unless TOKENTAP_NO_SOCK_STATE is set: no
 * syscall tracepoint is left, which every process's syscalls would pay for.
 * Sets st->raw_syscalls, st->send_stamped, st->sock_hooks and
 * st->sock_state to what was picked. */
static void tt_bpf_pick_data_attach(struct socktap *skel, tt_bpf_stats *st)
{
    struct bpf_object *obj = skel->obj;
    struct bpf_program *raw_enter = bpf_object__find_program_by_name(obj, "tt_raw_enter");
    struct bpf_program *raw_exit = bpf_object__find_program_by_name(obj, "tt_raw_exit");
    bool raw = raw_enter && raw_exit && tt_env_flag("TOKENTAP_BPF_RAW") &&
               tt_bpf_kernel_has_btf_typedef("btf_trace_sys_enter") && tt_bpf_kernel_has_btf_typedef("btf_trace_sys_exit");
    bool stamped = !raw && bpf_object__find_program_by_name(obj, "tt_send_stamp") &&
                   !tt_env_flag("TOKENTAP_NO_SEND_STAMP") && tt_bpf_kernel_has_btf_typedef("btf_trace_tcp_sendmsg_locked");
    if (raw_enter) bpf_program__set_autoload(raw_enter, raw);
    if (raw_exit) bpf_program__set_autoload(raw_exit, raw);
    set_autoload(obj, classic_data_progs, sizeof classic_data_progs / sizeof classic_data_progs[0], !raw);
    if (stamped) set_autoload(obj, classic_send_progs, sizeof classic_send_progs / sizeof classic_send_progs[0], false);
    set_autoload(obj, stamped_send_progs, sizeof stamped_send_progs / sizeof stamped_send_progs[0], stamped);
    struct bpf_program *sock_recv = bpf_object__find_program_by_name(obj, "tt_sock_recv");
    struct bpf_program *sock_send = bpf_object__find_program_by_name(obj, "tt_sock_send");
    bool sock = !raw && sock_recv && sock_send && !tt_env_flag("TOKENTAP_NO_SOCK_HOOKS") &&
                tt_bpf_kernel_has_btf_typedef("btf_trace_sock_recv_length") &&
                tt_bpf_kernel_has_btf_typedef("btf_trace_sock_send_length");
    if (sock) set_autoload(obj, recv_exit_progs, sizeof recv_exit_progs / sizeof recv_exit_progs[0], false);
    if (sock && stamped) set_autoload(obj, hooked_send_progs, sizeof hooked_send_progs / sizeof hooked_send_progs[0], false);
    if (sock_recv) bpf_program__set_autoload(sock_recv, sock);
    if (sock_send) bpf_program__set_autoload(sock_send, sock && stamped);
    skel->rodata->stamp_vec_sends = sock && stamped;
    bool state = sock && stamped && !tt_env_flag("TOKENTAP_NO_SOCK_STATE") &&
                 tt_bpf_kernel_has_btf_typedef("btf_trace_inet_sock_set_state") &&
                 tt_bpf_kernel_has_btf_typedef("btf_trace_tcp_destroy_sock");
    set_autoload(obj, state_syscall_progs, sizeof state_syscall_progs / sizeof state_syscall_progs[0], !state);
    set_autoload(obj, state_hook_progs, sizeof state_hook_progs / sizeof state_hook_progs[0], state);
    skel->rodata->sock_state = state;
    st->raw_syscalls = raw;
    st->send_stamped = stamped;
    st->sock_hooks = sock;
    st->sock_state = state;
}

int tt_bpf_source_start(tt_bpf_source *s, const tt_bpf_options *opt, char *err, size_t errlen)
{
    if (s->skel) {
        return tt_fail_line(err, errlen, "the eBPF source is already started");
    }
    if (geteuid() != 0) {
        return tt_fail_line(err, errlen, "eBPF tracing needs root (CAP_BPF, CAP_PERFMON); run as root");
    }
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        return tt_fail_line(err, errlen,
                            "kernel BTF is missing (/sys/kernel/btf/vmlinux): CO-RE needs CONFIG_DEBUG_INFO_BTF=y");
    }
    if (tt_bpf_check_tracefs(err, errlen) < 0) return -1;
    bool by_tgid = opt && (opt->tgid || opt->n_tgids);
    uint64_t cg_id = 0;
    uint32_t cg_level = 0;
    if (opt && opt->cgroup && tt_bpf_cgroup_id_of(opt->cgroup, &cg_id, &cg_level, err, errlen) < 0) return -1;
    if (opt && opt->comm && (!opt->comm[0] || strlen(opt->comm) > 15)) {
        return tt_fail_line(err, errlen, "--comm wants a process name of 1 to 15 bytes (the kernel's comm), got '%s'",
                            opt->comm);
    }
    uint32_t ring = opt && opt->ring_bytes ? opt->ring_bytes : 0;
    if (ring && (ring < 4096 || (ring & (ring - 1)))) {
        return tt_fail_line(err, errlen, "the ring-buffer size must be a power of two of at least 4096 bytes, got %u",
                            ring);
    }
    libbpf_set_print(tt_bpf_quiet_libbpf);
    struct socktap *skel = socktap__open();
    if (!skel) {
        return tt_fail_line(err, errlen, "cannot open the socktap BPF object: %s", strerror(errno));
    }
    skel->rodata->filter_tgids = by_tgid;
    skel->rodata->targ_port = opt ? opt->port : 0;
    skel->rodata->self_tgid = (uint32_t)getpid();
    skel->rodata->targ_cgroup_id = cg_id;
    skel->rodata->targ_cgroup_level = cg_level;
    if (opt && opt->comm) {
        skel->rodata->filter_comm = true;
        memcpy((char *)skel->rodata->targ_comm, opt->comm, strlen(opt->comm));
    }
    if (ring) bpf_map__set_max_entries(skel->maps.events, ring);
    int n_cpus = libbpf_num_possible_cpus();
    if (n_cpus < 1) n_cpus = 1;
    s->unwoken_zeros = calloc((size_t)n_cpus, sizeof *s->unwoken_zeros);
    if (!s->unwoken_zeros) {
        tt_fail_line(err, errlen, "out of memory");
        socktap__destroy(skel);
        return -1;
    }
    skel->rodata->wake_bytes = tt_bpf_wake_bytes(ring, n_cpus);
    /* Readable instants need the sock:sk_data_ready tracepoint (Linux 6.3
     * and later); without it everything else still works. */
    s->st.ready_missing = tt_bpf_kernel_has_btf_typedef("btf_trace_sk_data_ready")
                              ? NULL
                              : "the kernel has no sock:sk_data_ready tracepoint (Linux 6.3 or later)";
    if (tt_env_flag("TOKENTAP_NO_READY")) s->st.ready_missing = "TOKENTAP_NO_READY is set";
    s->st.ready_available = s->st.ready_missing == NULL;
    skel->rodata->ready_wanted = s->st.ready_available;
    /* held for the socket's next DATA record unless asked otherwise (a
     * READY record per instant: the comparison in bpf/README.md) */
    skel->rodata->ready_held = !tt_env_flag("TOKENTAP_READY_RECORDS");
    /* TLS plaintext only for a caller that takes it (tt_bpf_source_route_tls):
     * uprobes cost the processes they sit in */
    bool tls_wanted = tt_bpf_source_takes_tls(s) && !tt_env_flag("TOKENTAP_NO_TLS");
    skel->rodata->tls_wanted = tls_wanted;
    if (!s->st.ready_available) bpf_program__set_autoload(skel->progs.tt_sk_data_ready, false);
    tt_bpf_pick_data_attach(skel, &s->st);
    int rc = socktap__load(skel);
    if (rc) {
        tt_fail_line(err, errlen, "loading the socktap BPF programs failed: %s (TOKENTAP_BPF_DEBUG=1 shows the verifier log)",
                strerror(-rc));
        socktap__destroy(skel);
        return -1;
    }
    if (s->st.ready_available && opt && opt->port && skel->bss) {
        /* --port: connections accepted on it are followed from their first
         * byte, the first one included */
        skel->bss->ready_port_on[opt->port] = 1;
    }
    /* --port: a socket accepted on it says ACCEPT (socktap_state.bpf.h) */
    if (opt && opt->port && skel->bss) skel->bss->accept_port_on[opt->port] = 1;
    /* Attach first, then seed: a fork between the /proc walk and the
     * attach would otherwise be missed. */
    rc = socktap__attach(skel);
    if (rc) {
        tt_fail_line(err, errlen, "attaching to the syscall tracepoints failed: %s", strerror(-rc));
        socktap__destroy(skel);
        return -1;
    }
    if (by_tgid) {
        int seeded = tt_bpf_seed_traced_tgids(skel, opt, err, errlen);
        if (seeded < 0) {
            socktap__destroy(skel);
            return -1;
        }
        s->st.tgids_at_start = (uint64_t)seeded;
    } else {
        /* every filter set must match: the ports of either filter's
         * processes are a superset of what is needed (a port marked for
         * nothing traced only costs its accepted sockets a mark) */
        if (opt && opt->comm) tt_bpf_seed_comm_ports(skel, opt->comm);
        if (opt && opt->cgroup) tt_bpf_seed_cgroup_ports(skel, opt->cgroup);
    }
    /* TLS plaintext: uprobes on the libraries of the traced processes (all
     * of them without a process filter) and the system's */
    if (!tls_wanted) {
        if (tt_bpf_source_takes_tls(s))
            snprintf(s->tls_note, sizeof s->tls_note, "no TLS library attached: TOKENTAP_NO_TLS is set");
    } else {
        /* with --pid: every process of the traced set, the descendants alive
         * at start too (a server's workers), read back from the kernel's map */
        uint32_t *pids = by_tgid ? malloc(TRACED_AT_START_MAX * sizeof *pids) : NULL;
        size_t n_pids = 0;
        if (pids) {
            int map = bpf_map__fd(skel->maps.traced_tgids);
            uint32_t key, next;
            for (void *prev = NULL; n_pids < TRACED_AT_START_MAX && bpf_map_get_next_key(map, prev, &next) == 0;
                 prev = &key) {
                key = next;
                pids[n_pids++] = next;
            }
        }
        int attached = by_tgid && !pids ? -1 : tt_tls_attach_libraries(skel, pids, n_pids, opt ? opt->comm : NULL, &s->tls);
        free(pids);
        if (attached < 0) {
            tt_fail_line(err, errlen, "out of memory attaching to the TLS libraries");
            tt_tls_attach_free(&s->tls);
            socktap__destroy(skel);
            return -1;
        }
        tt_tls_attach_note(&s->tls, s->tls_note, sizeof s->tls_note);
    }
    s->st.tls_libraries = s->tls.attached;
    s->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, s, NULL);
    if (!s->rb) {
        tt_fail_line(err, errlen, "cannot set up the ring buffer: %s", strerror(errno));
        tt_tls_attach_free(&s->tls);
        socktap__destroy(skel);
        return -1;
    }
    s->skel = skel;
    return 0;
}

int tt_bpf_source_poll(tt_bpf_source *s, int timeout_ms, char *err, size_t errlen)
{
    if (!s->rb) {
        return tt_fail_line(err, errlen, "the eBPF source is not started");
    }
    /* The kernel mostly does not wake this poll (bpf/README.md): whatever
     * the wait returns, everything waiting is consumed after it. */
    int n = ring_buffer__poll(s->rb, timeout_ms);
    if (n == -EINTR) n = 0;
    if (n < 0) {
        return tt_fail_line(err, errlen, "polling the ring buffer failed: %s", strerror(-n));
    }
    int more = ring_buffer__consume(s->rb);
    if (more < 0) {
        return tt_fail_line(err, errlen, "reading the ring buffer failed: %s", strerror(-more));
    }
    if (n > 0 || more > 0) {
        /* drained: each CPU's count of unread bytes starts again (a record
         * committed meanwhile is forgotten: its CPU wakes the poller later) */
        uint32_t zero = 0;
        bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwoken_bytes), &zero, s->unwoken_zeros, BPF_ANY);
    }
    tt_bpf_look_at_execs(s);
    /* the processes attached one by one (--pid) that exited: their uprobes
     * let go, once a second (one poll() over their pidfds) */
    if (s->tls.n_procs) {
        uint64_t now = tt_clock_ns(CLOCK_MONOTONIC);
        if (now >= s->tls_release_ns) {
            s->tls_release_ns = now + TLS_RELEASE_EVERY_NS;
            tt_tls_release_exited(&s->tls);
        }
    }
    return n > INT_MAX - more ? INT_MAX : n + more;
}

void tt_bpf_source_stats(const tt_bpf_source *s, tt_bpf_stats *out)
{
    tt_bpf_copy_stats(s, out);
    if (!s->skel) return;
    int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return;
    uint64_t *vals = calloc((size_t)ncpu, sizeof *vals);
    if (!vals) return;
    uint64_t sums[TT_SOCKTAP_STAT_COUNT] = {0};
    int fd = bpf_map__fd(s->skel->maps.stats);
    for (uint32_t k = 0; k < TT_SOCKTAP_STAT_COUNT; k++) {
        if (bpf_map_lookup_elem(fd, &k, vals) != 0) continue;
        for (int c = 0; c < ncpu; c++) sums[k] += vals[c];
    }
    free(vals);
    out->kernel_events = sums[TT_SOCKTAP_STAT_EVENTS];
    out->rb_fail = sums[TT_SOCKTAP_STAT_RB_FAIL];
    out->rb_fail_bytes = sums[TT_SOCKTAP_STAT_RB_FAIL_BYTES];
    out->truncated = sums[TT_SOCKTAP_STAT_TRUNCATED];
    out->truncated_bytes = sums[TT_SOCKTAP_STAT_TRUNCATED_BYTES];
    out->args_full = sums[TT_SOCKTAP_STAT_ARGS_FULL];
    out->not_copied = sums[TT_SOCKTAP_STAT_NOT_COPIED];
    out->not_copied_bytes = sums[TT_SOCKTAP_STAT_NOT_COPIED_BYTES];
    out->children = sums[TT_SOCKTAP_STAT_CHILDREN];
    out->tgids_full = sums[TT_SOCKTAP_STAT_TGIDS_FULL];
    out->kernel_ready = sums[TT_SOCKTAP_STAT_READY];
    out->ready_full = sums[TT_SOCKTAP_STAT_READY_FULL];
    out->kernel_tls_calls = sums[TT_SOCKTAP_STAT_TLS_CALLS];
    out->tls_unpaired += sums[TT_SOCKTAP_STAT_TLS_UNPAIRED];
    out->tls_unpaired_bytes += sums[TT_SOCKTAP_STAT_TLS_UNPAIRED_BYTES];
    out->kernel_tls_by_last_read = sums[TT_SOCKTAP_STAT_TLS_BY_LAST_READ];
    out->kernel_tls_pending = sums[TT_SOCKTAP_STAT_TLS_PENDING];
}

#else

int tt_bpf_source_start(tt_bpf_source *s, const tt_bpf_options *opt, char *err, size_t errlen)
{
    return tt_fail_line(err, errlen, "this tokentap was built without eBPF support");
}

int tt_bpf_source_poll(tt_bpf_source *s, int timeout_ms, char *err, size_t errlen)
{
    return tt_fail_line(err, errlen, "this tokentap was built without eBPF support");
}

void tt_bpf_source_stats(const tt_bpf_source *s, tt_bpf_stats *out) { tt_bpf_copy_stats(s, out); }

#endif

void tt_bpf_source_free(tt_bpf_source *s)
{
    if (!s) return;
    tt_bpf_source_finish(s);
#ifdef TT_WITH_BPF
    ring_buffer__free(s->rb);
    free(s->unwoken_zeros);
    tt_tls_attach_free(&s->tls);
    socktap__destroy(s->skel);
#endif
    free(s);
}
