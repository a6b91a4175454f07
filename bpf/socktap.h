/* socktap.h - the event ABI between bpf/socktap.bpf.c and userspace.
 *
 * One header, fixed-width types only, included by the BPF program (after
 * vmlinux.h) and by userspace (after <stdint.h>). Every record in the ring
 * buffer is one struct tt_socktap_event followed by `copied` bytes of the
 * syscall's data. A syscall that moved more than TT_SOCKTAP_MAX_COPY bytes,
 * or whose bytes sit in several iovec entries, is emitted as several records
 * (pieces) with increasing, contiguous piece_off. When not every byte could
 * be copied (more than TT_SOCKTAP_MAX_PIECES pieces, or more than
 * TT_SOCKTAP_MAX_IOV iovec entries), the last record carries
 * TT_SOCKTAP_F_TRUNCATED and the rest of the bytes (total_len - piece_off -
 * copied) are missing; that record may carry no data at all.
 *
 * Records of kind CLOSE, CONNECT, ACCEPT and EOF carry no data (copied 0,
 * total_len 0): the fd's socket is being closed (with TT_SOCKTAP_F_RELEASED:
 * the socket is gone), or this process connected
 * it (the local end is the client) or accepted it (the local end is the
 * server), or a read on it returned end of file (dir RECV).
 *
 * recvmmsg/sendmmsg: each message is its own group of records (total_len
 * the message's msg_len, piece_off within it), messages in order; past
 * TT_SOCKTAP_MAX_MMSG messages, one record without data, flagged truncated,
 * carries the bytes of all the remaining messages as total_len.
 * sendfile: one record without data flagged TT_SOCKTAP_F_NOT_COPIED whose
 * total_len bytes went out without passing through a user buffer.
 * A DATA record with total_len 0 carries only lost_before (the ring buffer
 * refused earlier records of that socket and direction; sent before close).
 *
 * Readable instants (struct tt_socktap_mark) come from the
 * sock:sk_data_ready tracepoint where the kernel has it: the instant
 * received bytes became readable, before the process read them. They are
 * noted for the sockets the traced processes connected, accepted or moved
 * data on, and for sockets accepted on a port a traced process accepted on
 * before (so the bytes of a request that arrives before accept() returns
 * are covered). The kernel holds a few per socket and the next DATA record
 * of that socket carries them (`marks`, after its data); READY records
 * carry them otherwise (too many held, a read that is copied in pieces,
 * close). A mark is meant to be taken before the data of the record that
 * carries it. The same mark may come twice (two readers of one socket):
 * a mark that does not end past the previous one of its socket is a
 * repeat. A mark the ring buffer refused is not lost silently: the next
 * mark of that socket starts where the refused one ended, so its start
 * does not meet the previous end and userspace knows the bytes between
 * are unknown. */
#ifndef TT_SOCKTAP_H
#define TT_SOCKTAP_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint8_t tt_u8;
typedef uint16_t tt_u16;
typedef uint32_t tt_u32;
typedef uint64_t tt_u64;
typedef int32_t tt_s32;
typedef int64_t tt_s64;
#else
typedef __u8 tt_u8;
typedef __u16 tt_u16;
typedef __u32 tt_u32;
typedef __u64 tt_u64;
typedef __s32 tt_s32;
typedef __s64 tt_s64;
#endif

#define TT_SOCKTAP_MAX_COPY 16384u /* data bytes per record; a power of two */
#define TT_SOCKTAP_MAX_PIECES 64u  /* data records per syscall before truncation (one per iovec entry at least) */
#define TT_SOCKTAP_MAX_IOV 64u     /* iovec entries walked per syscall before truncation (grpcio's first
                                      * write of a connection spans more than 8) */
#define TT_SOCKTAP_MAX_MMSG 8u     /* messages of recvmmsg/sendmmsg copied before truncation */
#define TT_SOCKTAP_MAX_MMSG_SUM 1024u /* messages whose lengths are summed past that (UIO_MAXIOV) */

/* direction: what the traced thread did with its socket */
enum tt_socktap_dir {
    TT_SOCKTAP_DIR_SEND = 0, /* write, sendto, sendmsg, sendmmsg, sendfile...: instant at syscall enter */
    TT_SOCKTAP_DIR_RECV = 1  /* read, recvfrom, recvmsg, recvmmsg...: instant at syscall exit */
};

enum tt_socktap_syscall {
    TT_SOCKTAP_SYS_WRITE = 0,
    TT_SOCKTAP_SYS_READ,
    TT_SOCKTAP_SYS_SENDTO,
    TT_SOCKTAP_SYS_RECVFROM,
    TT_SOCKTAP_SYS_WRITEV,
    TT_SOCKTAP_SYS_READV,
    TT_SOCKTAP_SYS_SENDMSG,
    TT_SOCKTAP_SYS_RECVMSG,
    TT_SOCKTAP_SYS_CLOSE,
    TT_SOCKTAP_SYS_CONNECT,
    TT_SOCKTAP_SYS_ACCEPT,
    TT_SOCKTAP_SYS_ACCEPT4,
    TT_SOCKTAP_SYS_RECVMMSG,
    TT_SOCKTAP_SYS_SENDMMSG,
    TT_SOCKTAP_SYS_SENDFILE,
    TT_SOCKTAP_SYS_TLS_WRITE, /* SSL_write, SSL_write_ex: plaintext handed to the TLS library (F_TLS) */
    TT_SOCKTAP_SYS_TLS_READ,  /* SSL_read, SSL_read_ex: plaintext the library handed out (F_TLS) */
    TT_SOCKTAP_SYS_COUNT
};

/* What a record says. */
enum tt_socktap_kind {
    TT_SOCKTAP_KIND_DATA = 0, /* bytes read or written (dir says which) */
    TT_SOCKTAP_KIND_CLOSE,    /* close(fd) entered: the connection on fd ends; with F_RELEASED the
                                 socket was released: every connection on it ends */
    TT_SOCKTAP_KIND_CONNECT,  /* connect(fd) returned 0 or EINPROGRESS, or (from the socket's state)
                                 its handshake completed: local end is the client */
    TT_SOCKTAP_KIND_ACCEPT,   /* accept/accept4 returned fd, or (from the socket's state) the first
                                 data of a socket accepted on a traced port: local end is the server */
    TT_SOCKTAP_KIND_EOF,      /* read, recvfrom, readv or recvmsg asked for bytes and returned 0:
                                 the peer ended its direction (its FIN was read) */
    TT_SOCKTAP_KIND_READY,    /* readable instants of a socket (sock:sk_data_ready) that no DATA
                                 record carried: `marks` (at least one) after the head, no data.
                                 tgid, tid 0, fd -1, syscall and enter/exit 0, dir RECV */
    TT_SOCKTAP_KIND_TLS_PAIR, /* the TLS plaintext records of this thread held as pending
                                 (F_TLS_PENDING) belong to this record's socket: the thread's
                                 first socket write after them (a library that writes its
                                 ciphertext after the SSL call, Node.js). lost_before: pending
                                 plaintext bytes the ring buffer refused */
    TT_SOCKTAP_KIND_EXEC,     /* a traced process started a new program (sched_process_exec), or
                                 with --pid a traced process forked (tgid: the child; a thread's
                                 id for a new thread): userspace looks for TLS libraries in it.
                                 No socket: tgid, tid, ts_ns only; committed with a wakeup */
    TT_SOCKTAP_KIND_COUNT
};

enum tt_socktap_flags {
    TT_SOCKTAP_F_TRUNCATED = 1u << 0, /* bytes after this piece were not copied */
    TT_SOCKTAP_F_IPV6 = 1u << 1,      /* addresses are IPv6 (else IPv4 in the first 4 bytes) */
    TT_SOCKTAP_F_COPY_FAILED = 1u << 2, /* bpf_probe_read_user failed: copied is 0 */
    TT_SOCKTAP_F_NOT_COPIED = 1u << 3,  /* sendfile: total_len - piece_off bytes moved, never in a
                                           user buffer, so not copied (copied is 0) */
    TT_SOCKTAP_F_SEQ = 1u << 4,         /* seq is valid: for DATA the TCP sequence number of the
                                           syscall's first byte (data[0] is at seq + piece_off) */
    TT_SOCKTAP_F_RELEASED = 1u << 5,    /* CLOSE: the socket itself was released (its file's last
                                           reference put: socktap_state.bpf.h), so every connection
                                           on sock_id ends, in any process; fd is -1 when the release
                                           was not a close(). Without it, close(fd) of that fd alone.
                                           (Once READY's from-start flag, before marks.) */
    TT_SOCKTAP_F_TLS = 1u << 6,         /* DATA: TLS plaintext of the socket's connection, from a
                                           uprobe on the library (socktap_tls.bpf.h); its bytes are
                                           a stream of their own beside the socket's ciphertext.
                                           SEND stamped at the call's entry, RECV at its return */
    TT_SOCKTAP_F_TLS_PENDING = 1u << 7, /* with F_TLS: an SSL_write that made no socket syscall and
                                           whose SSL object's socket is not known yet: sock_id 0,
                                           no tuple; it belongs to the socket of the next
                                           TLS_PAIR record of its thread (tid) */
};

/* Indices of the per-CPU counter array `stats`. */
enum tt_socktap_stat {
    TT_SOCKTAP_STAT_EVENTS = 0,      /* records emitted */
    TT_SOCKTAP_STAT_RB_FAIL,         /* records the ring buffer refused */
    TT_SOCKTAP_STAT_RB_FAIL_BYTES,   /* data bytes in those records */
    TT_SOCKTAP_STAT_TRUNCATED,       /* syscalls whose bytes were cut */
    TT_SOCKTAP_STAT_TRUNCATED_BYTES, /* bytes not copied because of the cut */
    TT_SOCKTAP_STAT_ARGS_FULL,       /* enter args not kept: no task storage (out of memory) */
    TT_SOCKTAP_STAT_NOT_COPIED,      /* syscalls whose bytes are not in user memory (sendfile) */
    TT_SOCKTAP_STAT_NOT_COPIED_BYTES,
    TT_SOCKTAP_STAT_CHILDREN,        /* processes added to the traced set when a traced one forked */
    TT_SOCKTAP_STAT_TGIDS_FULL,      /* forks of traced processes not followed: set full */
    TT_SOCKTAP_STAT_READY,           /* readable instants noted (marks; held or sent in a READY record) */
    TT_SOCKTAP_STAT_READY_FULL,      /* sockets whose marks were not wanted: map full */
    TT_SOCKTAP_STAT_TLS_CALLS,       /* SSL read/write calls that moved plaintext */
    TT_SOCKTAP_STAT_TLS_UNPAIRED,    /* of those, calls whose socket was not known: not recorded */
    TT_SOCKTAP_STAT_TLS_UNPAIRED_BYTES,
    TT_SOCKTAP_STAT_TLS_BY_LAST_READ, /* SSL reads paired with the thread's socket read before them */
    TT_SOCKTAP_STAT_TLS_PENDING,     /* SSL writes sent pending, to be paired by the next socket write */
    TT_SOCKTAP_STAT_COUNT
};

/* The fixed head of every ring-buffer record (64-bit aligned). */
struct tt_socktap_event {
    tt_u64 ts_ns;       /* CLOCK_MONOTONIC: enter_ns for SEND and CLOSE, exit for RECV, CONNECT, ACCEPT */
    tt_u64 enter_ns;    /* syscall enter; for write and sendto, where tcp_sendmsg_locked first took the
                           send when it did (socktap_send.bpf.h, else the exit); a receive (no enter
                           program) carries its exit here too */
    tt_u64 exit_ns;     /* syscall exit of a receive or marker; 0 for a send (stamped before its exit, which is not read) */
    tt_u64 sock_id;     /* kernel address of the struct sock: identity while it lives */
    tt_u64 lost_before; /* bytes of this (sock, direction) lost just before this record */
    tt_s64 ret;         /* the syscall's return value */
    tt_u32 tgid, tid;
    tt_s32 fd;
    tt_u32 total_len;   /* bytes the syscall moved (ret when > 0) */
    tt_u32 piece_off;   /* offset of data[0] within those bytes */
    tt_u32 copied;      /* data bytes following this head */
    tt_u16 family;      /* AF_INET or AF_INET6 */
    tt_u16 lport, rport; /* host order */
    tt_u8 dir, syscall, flags, kind; /* kind: enum tt_socktap_kind */
    tt_u8 laddr[16], raddr[16]; /* network order */
    tt_u32 seq;         /* TCP sequence number, valid with TT_SOCKTAP_F_SEQ (see the flag) */
    tt_u32 marks;       /* struct tt_socktap_mark entries after the data (DATA without F_TLS, READY):
                           at most TT_SOCKTAP_MAX_MARKS, 8-byte fields possibly unaligned */
    tt_u64 socket_ns;   /* F_TLS records: the instant the socket moved this plaintext's ciphertext (the enter
                           of the library's first socket write in the call, the exit of its last socket read
                           that fed it); 0 when not known. Every other record: 0 */
};

/* A readable instant of the record's socket (sock:sk_data_ready): its
 * receive sequence reached end_seq at ns, len bytes having become readable
 * since the previous mark of that socket, or, with the FROM_START bit,
 * every byte since the stream began (len otherwise 0). */
struct tt_socktap_mark {
    tt_u64 ns;      /* CLOCK_MONOTONIC */
    tt_u32 end_seq; /* rcv_nxt */
    tt_u32 len;     /* bytes; TT_SOCKTAP_MARK_FROM_START: see above */
};
#define TT_SOCKTAP_MARK_FROM_START 0x80000000u
#define TT_SOCKTAP_READY_HELD 2u /* marks the kernel holds per socket for its next DATA record */
#define TT_SOCKTAP_MAX_MARKS (TT_SOCKTAP_READY_HELD + 1u) /* per record: the held ones and one more */

#endif
