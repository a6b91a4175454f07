/* probe_abi.h - the record ABI between the LD_PRELOAD probe
 * (libtokentap-probe.so) and userspace/source/probe_source.c.
 *
 * Each process the probe runs in creates one ring file in the directory
 * named by TOKENTAP_PROBE_DIR (a new one after fork and after exec), named
 * "ring.<pid>.<creation mono ns>", and maps it MAP_SHARED. The file is a
 * struct tt_probe_ring header (TT_PROBE_HEADER_SIZE bytes) followed by
 * `capacity` bytes of ring (a power of two).
 *
 * Producers (any thread, a signal handler included) reserve space by a
 * compare-and-swap on a cursor in the process's own memory, never waiting:
 * when the record does not fit between that cursor and consumed_pos +
 * capacity it is dropped and counted. The header's published_pos follows
 * the cursor lazily (when a reservation crosses a multiple of
 * TT_PROBE_PUBLISH_BYTES, and exactly when the process exits): it tells how
 * full the ring is, not where the records end, so the common path never
 * touches the header's page. A record never wraps: when fewer than
 * TT_PROBE_REC_MIN bytes are left before the end of the ring the next
 * record starts at the ring's start (nothing is written in that tail);
 * when more are left but the record does not fit, a PAD record fills the
 * tail. A record is complete when its `commit` equals (its absolute
 * position + 1) XOR the header's commit_key (stored last, with release
 * order); the collector (the only consumer) reads records in order while
 * they are complete, and stores consumed_pos when done with them. The key,
 * random per ring, keeps bytes the program moved (an older lap's data
 * under the reader) from ever reading as a complete record. All positions
 * are absolute byte counts; a ring offset is position & (capacity - 1).
 *
 * The collector may also keep spare ring files in the directory, named
 * TT_PROBE_SPARE_PREFIX followed by 0 .. TT_PROBE_SPARES - 1: zeroed, sized
 * for the ring size the probe takes from TOKENTAP_PROBE_RING_KB, their
 * first pages already allocated. A probe making its ring takes one with a
 * rename to its own ring name (the first to rename it has it; it tries
 * them from its pid's turn on) and makes a file of its own only when there
 * is none left, or when the one it took is not the size wanted.
 *
 * Fixed-width types only; every record is 8-byte aligned. */
#ifndef TT_PROBE_ABI_H
#define TT_PROBE_ABI_H

#include <stdint.h>

#define TT_PROBE_MAGIC 0x31676e6972707474ull /* "ttpring1" little-endian */
#define TT_PROBE_VERSION 2u
#define TT_PROBE_HEADER_SIZE 4096u
#define TT_PROBE_DIR_ENV "TOKENTAP_PROBE_DIR"
#define TT_PROBE_RING_ENV "TOKENTAP_PROBE_RING_KB"  /* ring size in KiB (rounded to a power of two) */
#define TT_PROBE_PREFAULT_ENV "TOKENTAP_PROBE_PREFAULT" /* "1": the ring's pages prefaulted when it is made */
/* "tsc": stamp records with the TSC (rdtsc), flagged TT_PROBE_F_TSC; set by
 * `tokentap run` only where the TSC can stand in for CLOCK_MONOTONIC and
 * the collector converts it (userspace/clocks/tsc_clock.h). Else, or on a
 * CPU other than x86-64, records carry CLOCK_MONOTONIC ns. */
#define TT_PROBE_CLOCK_ENV "TOKENTAP_PROBE_CLOCK"
#define TT_PROBE_MARKER ".tokentap-run"             /* present in a directory `tokentap run` made */
#define TT_PROBE_SPARE_PREFIX "spare.ring."         /* + 0 .. TT_PROBE_SPARES - 1: rings made ahead */
#define TT_PROBE_SPARES 4
#define TT_PROBE_DEFAULT_RING (16u << 20)
#define TT_PROBE_MIN_RING (64u << 10)
#define TT_PROBE_MAX_RING (1u << 30)
#define TT_PROBE_MAX_COPY (256u << 10) /* data bytes per record; beyond, the rest is a gap */
#define TT_PROBE_PUBLISH_BYTES (64u << 10)  /* published_pos is moved when a reservation crosses a multiple */

/* What a record says. */
enum tt_probe_kind {
    TT_PROBE_KIND_PAD = 0, /* fills the ring's tail: skip `size` bytes */
    TT_PROBE_KIND_DATA,    /* bytes moved: dir says which way, len of them follow the head */
    TT_PROBE_KIND_CLOSE,   /* the fd was closed (or replaced by dup2/dup3) */
    TT_PROBE_KIND_CONNECT, /* connect() returned 0 or EINPROGRESS: this end is the client */
    TT_PROBE_KIND_ACCEPT,  /* accept()/accept4() returned fd: this end is the server */
    TT_PROBE_KIND_EOF,     /* end of the peer's bytes (dir RECV): a read of a socket returned 0
                              (layer SOCKET), or SSL_read saw the peer's close_notify (layer TLS) */
    TT_PROBE_KIND_COUNT
};

enum tt_probe_dir {
    TT_PROBE_DIR_SEND = 0, /* the program wrote */
    TT_PROBE_DIR_RECV = 1  /* the program read */
};

/* Which layer the bytes are from. */
enum tt_probe_layer {
    TT_PROBE_LAYER_SOCKET = 0, /* the socket's bytes (ciphertext under TLS) */
    TT_PROBE_LAYER_TLS = 1     /* plaintext handed to or returned by SSL_write/SSL_read */
};

/* What this end of the connection is, as far as the probe knows. */
enum tt_probe_role {
    TT_PROBE_ROLE_UNKNOWN = 0, /* first seen mid-life: neither connect nor accept traced */
    TT_PROBE_ROLE_CLIENT = 1,  /* this process connected it */
    TT_PROBE_ROLE_SERVER = 2   /* this process accepted it */
};

enum tt_probe_flags {
    TT_PROBE_F_TRUNCATED = 1u << 0, /* total_len - len bytes moved by the call were not copied */
    TT_PROBE_F_IPV6 = 1u << 1,      /* addresses are IPv6 (else IPv4 in the first 4 bytes) */
    TT_PROBE_F_TSC = 1u << 2,       /* ts_ns and enter_ns are x86 TSC ticks, not ns (TT_PROBE_CLOCK_ENV) */
};

/* The function a record came from. */
enum tt_probe_call {
    TT_PROBE_CALL_READ = 0, TT_PROBE_CALL_READV, TT_PROBE_CALL_RECV, TT_PROBE_CALL_RECVFROM,
    TT_PROBE_CALL_RECVMSG, TT_PROBE_CALL_RECVMMSG, TT_PROBE_CALL_WRITE, TT_PROBE_CALL_WRITEV,
    TT_PROBE_CALL_SEND, TT_PROBE_CALL_SENDTO, TT_PROBE_CALL_SENDMSG, TT_PROBE_CALL_SENDMMSG,
    TT_PROBE_CALL_CLOSE, TT_PROBE_CALL_CONNECT, TT_PROBE_CALL_ACCEPT, TT_PROBE_CALL_DUP2,
    TT_PROBE_CALL_SSL_READ, TT_PROBE_CALL_SSL_WRITE, TT_PROBE_CALL_COUNT
};

/* The file header. Producer-written counters are updated atomically. */
struct tt_probe_ring {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;    /* TT_PROBE_HEADER_SIZE: the ring starts here */
    uint64_t capacity;       /* ring bytes, a power of two */
    uint32_t pid, ppid;
    uint64_t created_mono_ns;
    uint64_t commit_key;     /* a record's commit word is (position + 1) ^ commit_key */
    uint64_t reserved_0[2];
    uint64_t published_pos;  /* producers: every position below it was reserved (own cache line); at
                                most TT_PROBE_PUBLISH_BYTES + a record behind the producers while the
                                process runs, exact once it exited through its exit handlers */
    uint64_t pad_a[7];
    uint64_t consumed_pos;   /* collector: bytes consumed so far (own cache line) */
    uint64_t pad_b[7];
    uint64_t drop_records;   /* records that did not fit */
    uint64_t drop_bytes;     /* data bytes in those records */
    uint64_t untracked_fds;  /* calls on fds beyond the probe's fd table */
    uint64_t exited;         /* 1 once the process ran its exit handlers */
};

/* The head of every record; `len` data bytes follow, then padding to 8. */
struct tt_probe_rec {
    uint64_t commit;      /* (absolute position + 1) ^ the ring's commit_key once complete */
    uint32_t size;        /* bytes of the whole record, head and padding included */
    uint8_t kind, dir, call, flags;
    uint64_t ts_ns;       /* CLOCK_MONOTONIC when the real call returned; for DATA, dir SEND,
                             when it was entered (= enter_ns: one clock read per call); TSC
                             ticks instead with TT_PROBE_F_TSC */
    uint64_t enter_ns;    /* CLOCK_MONOTONIC when the call was entered (DATA, dir SEND; else 0);
                             at most ts_ns; the instant of the bytes sent (as eBPF stamps writes);
                             TSC ticks with TT_PROBE_F_TSC */
    uint64_t sock_id;     /* the socket's inode number: identity while it lives */
    uint64_t lost[2];     /* bytes of this socket lost before this record, per tt_probe_dir */
    int64_t ret;          /* the call's return value */
    int32_t fd;
    uint32_t len;         /* data bytes following */
    uint32_t total_len;   /* bytes the call moved */
    uint8_t layer, role;  /* enum tt_probe_layer, enum tt_probe_role */
    uint16_t lport, rport; /* host order */
    uint8_t reserved_1[6];
    uint8_t laddr[16], raddr[16]; /* network order */
};

#define TT_PROBE_REC_MIN ((uint32_t)sizeof(struct tt_probe_rec))

#endif
