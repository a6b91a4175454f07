/* bpf_source.h - the server and client vantages from eBPF (bpf/socktap.bpf.c).
 *
 * Loads the socktap programs on the syscall tracepoints, polls their ring
 * buffer and turns every record into tt_chunk records: SERVER vantage for a
 * socket the process accepted, CLIENT vantage for one it connected; for a
 * socket seen first mid-life (no connect or accept traced) the role is
 * guessed, orientation_guessed set: read first = server, wrote first =
 * client. One connection per (tgid, fd, struct sock); a new sock behind a
 * reused fd starts a new conn_id, and close(fd) ends the connection (END
 * both ways, then RELEASE). Lost and truncated bytes become TT_CHUNK_GAP
 * chunks, never silence. */
#ifndef TT_BPF_SOURCE_H
#define TT_BPF_SOURCE_H

#include "core/tt_types.h"

typedef struct tt_bpf_source tt_bpf_source;

/* Every filter given must match (and); all are applied in the kernel
 * before anything is copied. */
typedef struct tt_bpf_options {
    uint32_t tgid;  /* trace only this process (0: every process) */
    uint16_t port;  /* trace only sockets with this local or remote port (0: any) */
    /* Added: */
    const uint32_t *tgids; /* more processes to trace (with tgid, if set); n_tgids of them */
    size_t n_tgids;        /* with tgid or tgids, their descendants are traced too: the ones
                              alive at start (from /proc) and every process they fork later */
    const char *comm;      /* trace only processes of this name (/proc/PID/comm, at most 15
                              bytes; NULL: any) */
    const char *cgroup;    /* trace only tasks in this cgroup v2 directory or below it (NULL: any) */
    uint32_t ring_bytes;   /* ring-buffer size: a power of two >= 4096 (0: 16 MiB) */
} tt_bpf_options;

typedef struct tt_bpf_stats {
    uint64_t records;          /* ring-buffer records read */
    uint64_t bad_records;      /* records too short or inconsistent (ignored) */
    uint64_t connections;      /* connection instances seen */
    uint64_t data_bytes;       /* bytes delivered as TT_CHUNK_DATA */
    uint64_t gaps, gap_bytes;  /* TT_CHUNK_GAP chunks delivered */
    uint64_t connects, accepts; /* CONNECT and ACCEPT records: connections whose role was known */
    uint64_t closes;           /* connections ended by close(fd) */
    uint64_t closes_other_sock; /* of those, closes naming another sock than the one tracked on fd */
    /* kernel-side counters (summed over CPUs; 0 before load) */
    uint64_t kernel_events, rb_fail, rb_fail_bytes, truncated, truncated_bytes, args_full;
    /* Added: sendfile bytes sent without a copy (delivered as gaps), and the
     * processes a traced one forked that were added to the traced set (or
     * not, the set being full); tgids_at_start: the --pid processes and
     * their descendants found in /proc at start. */
    uint64_t not_copied, not_copied_bytes, children, tgids_full, tgids_at_start;
    uint64_t vantage_gaps[TT_VANTAGE_COUNT], vantage_gap_bytes[TT_VANTAGE_COUNT]; /* gaps by vantage */
    /* Added (readable instants, sock:sk_data_ready): whether the kernel
     * gives them (ready_available; when not, ready_missing says why),
     * the kernel's marks read (carried by READY and DATA records), marks
     * delivered as TT_CHUNK_READY, marks that could not be placed on a
     * stream (their socket never seen, held past the bound, or not
     * believable), marks dropped as repeats of one already taken, and the
     * kernel's own counts: marks made and sockets not followed because its
     * map was full. */
    bool ready_available;
    const char *ready_missing;
    bool raw_syscalls;       /* the data syscalls are traced through tp_btf sys_enter/sys_exit (TOKENTAP_BPF_RAW) */
    bool send_stamped;       /* write and sendto are stamped in tcp_sendmsg_locked, not at their enter */
    bool sock_hooks;         /* receives (and stamped sends) are taken at sock_recv_length/sock_send_length */
    bool sock_state;         /* connect, accept and close come from the socket's state: no syscall tracepoint */
    uint64_t ready_records, ready_marks, ready_unplaced, ready_repeats, kernel_ready, ready_full;
    /* Added (TLS plaintext, uprobes on the TLS libraries, tls_attach.h):
     * libraries attached (0: tls_note says why), connections with a
     * plaintext stream, TLS records read; the kernel's SSL calls that moved
     * plaintext and those whose socket was not known (not recorded). */
    uint64_t tls_libraries, tls_connections, tls_records, kernel_tls_calls, tls_unpaired, tls_unpaired_bytes;
    /* SSL reads paired by the thread's socket read before them and writes
     * sent pending (memory BIOs: Node.js, bpf/README.md), and pending
     * records that no TLS_PAIR claimed (held past the bound, or at the end) */
    uint64_t kernel_tls_by_last_read, kernel_tls_pending, tls_unpaired_held, tls_unpaired_held_bytes;
    uint64_t exec_queue_full; /* execs of traced processes not looked at for TLS libraries: queue full */
    uint64_t tls_socket_instants; /* TLS records whose ciphertext's socket instant was known (a mark each) */
    /* Added (--pid: uprobes attached process by process, let go when the
     * process exits; tls_attach.h): uprobe links held now (a gauge), links
     * detached after their process exited, and those processes */
    uint64_t tls_links_held, tls_links_released, tls_processes_released;
    const char *tls_note; /* one phrase: which libraries, or why none (valid while the source lives) */
} tt_bpf_stats;

/* The TLS plaintext goes to on_server(server_ctx, chunk) at the server's
 * end (TT_VANTAGE_SERVER_TLS) and on_client(client_ctx, chunk) at the
 * client's (TT_VANTAGE_CLIENT_TLS); either may be NULL. Call before
 * tt_bpf_source_start: only then are uprobes put on TLS libraries (they
 * cost the processes they sit in); without it no TLS plaintext is read. */
void tt_bpf_source_route_tls(tt_bpf_source *s, tt_chunk_fn on_server, void *server_ctx, tt_chunk_fn on_client,
                             void *client_ctx);

/* A source that delivers chunks to on_server (SERVER vantage) and on_client
 * (CLIENT vantage); either fn may be NULL to drop that vantage. Nothing is
 * loaded yet: tt_bpf_source_feed works without the kernel. NULL when out of
 * memory. */
tt_bpf_source *tt_bpf_source_new(tt_chunk_fn on_server, void *server_ctx, tt_chunk_fn on_client,
                                 void *client_ctx);

/* Check root, BTF and tracefs (mounting it when absent), check every
 * tracepoint, then open, filter, load and attach the programs and set up
 * the ring buffer. 0 on success; -1 with a one-line reason in err (a bad
 * option, e.g. a comm too long, a path that is no cgroup v2 directory, a
 * ring size not a power of two, is reported the same way). */
int tt_bpf_source_start(tt_bpf_source *s, const tt_bpf_options *opt, char *err, size_t errlen);

/* Wait up to timeout_ms for records, then deliver the chunks of every
 * record waiting. The kernel wakes this wait only once a quarter of the
 * ring (at most 256 KiB) waits, so it usually sleeps the whole timeout:
 * call it on a timer. timeout_ms 0 drains what is there (call it once after
 * the last syscall of interest, before tt_bpf_source_finish). Returns the
 * number of records handled, or -1 with a reason in err. */
int tt_bpf_source_poll(tt_bpf_source *s, int timeout_ms, char *err, size_t errlen);

/* Added: the bytes one CPU may commit to a ring of ring_bytes (0: the
 * default 16 MiB) between two drains before a record wakes the poller: a
 * quarter of the ring, at most 256 KiB, and at most half the ring shared
 * by n_cpus CPUs (at least 1 byte). Below that the kernel commits records
 * without a wakeup. A wakeup is an interrupt raised inside the traced
 * syscall, so one CPU producing everything wakes the poller no more often
 * than once per 256 KiB. */
uint32_t tt_bpf_wake_bytes(uint32_t ring_bytes, int n_cpus);

/* Handle one raw ring-buffer record (struct tt_socktap_event + data), as
 * the poller does; exposed for tests. Returns 0, or -1 for a bad record. */
int tt_bpf_source_feed(tt_bpf_source *s, const void *rec, size_t len);

/* End every open connection: TT_CHUNK_END on each direction, then
 * TT_CHUNK_RELEASE. Call after the last poll. */
void tt_bpf_source_finish(tt_bpf_source *s);

/* One phrase for a summary line: "N ready instants (M not placed)" or
 * "no ready instants: <why>". Returns buf. */
const char *tt_bpf_ready_note(const tt_bpf_stats *st, char *buf, size_t cap);

/* The TLS libraries attached so far (tls_attach.h; they grow as traced
 * processes exec new programs), or NULL before start. Valid until the next
 * poll. */
const struct tt_tls_attach *tt_bpf_source_tls(const tt_bpf_source *s);

/* Counters, the kernel's included when loaded. */
void tt_bpf_source_stats(const tt_bpf_source *s, tt_bpf_stats *out);

/* Detach, unload and free (finishing first if not done). NULL is fine. */
void tt_bpf_source_free(tt_bpf_source *s);

#endif
