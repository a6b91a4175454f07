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
 * exec) is attached as it comes (tt_tls_attach_process). SSL_write, SSL_write_ex, SSL_read and SSL_read_ex at entry and
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
    void **links;          /* struct bpf_link *, owned */
    size_t n_links, cap_links;
    bool per_pid;          /* attached process by process (a --pid list), not file-wide */
    struct tt_tls_pair { uint32_t lib, pid; } *pairs; /* per_pid: (library, process) attached */
    size_t n_pairs, cap_pairs;
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
 * Returns the number of libraries newly attached, -1 when out of memory. */
int tt_tls_attach_process(struct socktap *skel, tt_tls_attach *t, uint32_t pid);

/* One phrase for a summary line: "TLS plaintext from N libraries (PATH,
 * ...)" or "no TLS library attached: WHY". Returns buf. */
const char *tt_tls_attach_note(const tt_tls_attach *t, char *buf, size_t cap);

/* Detach every uprobe. t may be zeroed or NULL. */
void tt_tls_attach_free(tt_tls_attach *t);

#endif
