/* tls_attach.h - the uprobes of bpf/socktap_tls.bpf.h on the TLS libraries
 * of running processes, so the eBPF vantages read TLS plaintext without
 * restarting anything (docs/bpf.md, "TLS").
 *
 * OpenSSL 3.x and 1.1 as shared libraries (a file named libssl.so*): found
 * in /proc/PID/maps of the traced processes (every process without a
 * process filter) and opened through /proc/PID/root (a process in a
 * container sees its own files), and at the system's usual paths, so that
 * processes started later that map the same file are covered too. One
 * attachment per library file (device and inode): a uprobe on a file fires
 * in every process that maps it, and the process filters apply in the
 * kernel; every process that maps it pays the traps, traced or not.
 * With a list of processes (--pid), each library is attached for each of
 * them instead (the kernel then sets the breakpoints in their memory only:
 * other processes pay nothing; a library a process maps later gets them
 * as it is mapped), and a process that joins the traced set (a fork, an
 * exec) is attached as it comes (tt_tls_attach_process), and its links are
 * let go when it exits (tt_tls_release_exited: a pidfd per process, looked
 * at once a second; the slow detach done by a thread of its own).
 * SSL_write, SSL_write_ex, SSL_read and SSL_read_ex at entry and
 * return; a library without SSL_read and SSL_write is noted, not attached.
 * OpenSSL linked into an executable (Node.js): a process that maps no
 * libssl has its executable tried for the same functions (/proc/PID/exe;
 * one without them is passed over silently), and for Go's crypto/tls
 * (tls_go.h: a Go program that cannot be probed, stripped or too old, is
 * listed with the reason). A traced process (--pid) covered by none is
 * named in the note. */
#ifndef TT_TLS_ATTACH_H
#define TT_TLS_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/tls_go.h"

#define TT_TLS_MAX_LIBS 16

#define TT_TLS_MAX_UNCOVERED 8
#define TT_TLS_MAX_PLAIN 256

typedef struct tt_tls_lib {
    char path[512];      /* the path attached (through /proc/PID/root when found in a process) */
    uint64_t dev, ino;
    bool executable;     /* a process's executable, tried for OpenSSL linked in */
    uint32_t pid;        /* the process it was found in (0: a system path) */
    unsigned functions;  /* SSL_* functions attached, entry and return */
    bool counted;        /* attached with SSL_read and SSL_write: counted in tt_tls_attach.attached */
    bool offsets_found;  /* offset[] looked up in the file */
    uint64_t offset[4];  /* file offsets of SSL_write, SSL_write_ex, SSL_read, SSL_read_ex (0: absent) */
    bool go;             /* an executable that is a Go program with crypto/tls (tls_go.h) */
    bool go_probed;      /* ... whose probe sites are all known (go_probes) */
    tt_tls_go_probes go_probes;
    char note[128];      /* why none, when functions is 0; a Go program's version when attached */
} tt_tls_lib;

typedef struct tt_tls_attach {
    tt_tls_lib libs[TT_TLS_MAX_LIBS];
    size_t n_libs;
    size_t attached;       /* libraries with at least SSL_read and SSL_write */
    size_t processes_seen; /* traced processes that mapped a libssl at start */
    uint32_t uncovered[TT_TLS_MAX_UNCOVERED]; /* --pid processes with no TLS library attached */
    size_t n_uncovered;
    /* executables found without the functions (device, inode): not parsed
     * again at every exec of the same program; the oldest is forgotten */
    struct { uint64_t dev, ino; } plain[TT_TLS_MAX_PLAIN];
    size_t n_plain, plain_next;
    /* the uprobe links held, owned: pid is the process a per_pid link was
     * attached for (let go when it exits), 0 for a file-wide one (held to
     * the end) */
    struct tt_tls_link { void *link; uint32_t pid; } *links; /* link: a struct bpf_link * */
    size_t n_links, cap_links;
    bool per_pid;          /* attached process by process (a --pid list), not file-wide */
    struct tt_tls_pair { uint32_t lib, pid; } *pairs; /* per_pid: (library, process) attached */
    size_t n_pairs, cap_pairs;
    /* per_pid: the processes with pairs, each with a pidfd (readable once
     * it has exited, whatever process takes its pid number later; -1 when
     * none could be opened: then kill(pid, 0) says) */
    struct tt_tls_proc { uint32_t pid; int pidfd; } *procs;
    size_t n_procs, cap_procs;
    struct tt_tls_releaser *releaser; /* the thread that detaches let-go links (made at the first) */
    uint64_t links_let_go;            /* links let go: handed to it, or detached here when it could not start */
    uint64_t links_detached_here;     /* ... of those, detached here */
    uint64_t processes_released;      /* processes whose links were let go at their exit */
} tt_tls_attach;

struct socktap;

/* Find the libssl files of the processes pids[0..n_pids) and attach the
 * skeleton's TLS programs to each for each of those processes; n_pids 0:
 * the libraries of every process (of those named comm, when comm is not
 * NULL) and the system's, attached file-wide. Returns the number of
 * libraries attached (0 is not an error: t says why per library); -1 only
 * when out of memory. */
int tt_tls_attach_libraries(struct socktap *skel, const uint32_t *pids, size_t n_pids, const char *comm,
                            tt_tls_attach *t);

/* A traced process started a new program (or may have mapped a library
 * since): look again at its maps and executable and attach to what is new.
 * per_pid: only while the kernel still traces it (traced_tgids; a pid
 * number that was let go and taken by another process is not), and a
 * process that took the pid number of one that exited unreleased gets
 * that one's links let go first. Returns the number of libraries newly
 * attached, -1 when out of memory. */
int tt_tls_attach_process(struct socktap *skel, tt_tls_attach *t, uint32_t pid);

/* Processes attached process by process (per_pid) that have exited since
 * the last call: their links handed to a thread that detaches them (each
 * detach waits for the kernel, ~0.1 s per link here, and holds off attaches
 * meanwhile: not on the caller's loop), their (library, process) pairs and
 * pidfds forgotten. One poll() over the pidfds; call it about once a second.
 * A library file stays known and attached for the processes still alive.
 * The thread, started at the first release, holds no capability: a caller
 * that drops privileges (core/privileges.h, which needs every thread able
 * to switch user) does so before its first call, as watch does before its
 * first poll. Returns the number of processes released. */
size_t tt_tls_release_exited(tt_tls_attach *t);

/* Uprobe links held now: attached and not yet detached, those handed to the
 * detaching thread and still waiting included. */
uint64_t tt_tls_links_held(const tt_tls_attach *t);

/* Links detached after their process exited (those at the end not counted). */
uint64_t tt_tls_links_released(const tt_tls_attach *t);

/* One phrase for a summary line: "TLS plaintext from N libraries (PATH,
 * ...)" or "no TLS library attached: WHY". Returns buf. */
const char *tt_tls_attach_note(const tt_tls_attach *t, char *buf, size_t cap);

/* Detach every uprobe (the detaching thread stopped first) and close the
 * pidfds. t may be zeroed or NULL. */
void tt_tls_attach_free(tt_tls_attach *t);

#endif
