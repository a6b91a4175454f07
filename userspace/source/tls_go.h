/* tls_go.h - where to put the uprobes of Go's crypto/tls in a Go program
 * (bpf/socktap_tls.bpf.h, "Go's crypto/tls"; docs/bpf.md, "TLS").
 *
 * A Go program links its own TLS: (*tls.Conn).Write and (*tls.Conn).Read,
 * found by name in the executable's symbol table. Go's register ABI
 * (amd64, Go 1.17 and later) is what the programs read, so the version is
 * taken from the build information the Go linker writes (.go.buildinfo;
 * inline since Go 1.18). Each function is probed at the conditional jump
 * of its stack-growth check (the kernel emulates a jump: one trap, where
 * most instructions are stepped out of line, a second; the program skips
 * the pass that jumps to grow the stack, since the function then starts
 * over), and Read at every return instruction, found by disassembling it
 * (capstone): Go moves goroutine stacks, so a uretprobe, which rewrites
 * the return address on the stack, must not be used. */
#ifndef TT_TLS_GO_H
#define TT_TLS_GO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_TLS_GO_MAX_RETURNS 32

typedef struct tt_tls_go_probes {
    uint64_t write_at;  /* file offset of (*tls.Conn).Write's stack-check jump (its arguments still in registers) */
    uint64_t read_at;   /* the same in (*tls.Conn).Read */
    uint64_t read_returns[TT_TLS_GO_MAX_RETURNS]; /* file offsets of Read's return instructions */
    size_t n_read_returns;
    char version[32];   /* "go1.19.8" */
} tt_tls_go_probes;

/* Look at the ELF file open on fd for a Go program's crypto/tls. Returns 1
 * when the probes are all known (out filled), 0 when the file is not a Go
 * program (nothing said), -1 when it is one whose TLS cannot be probed:
 * why in note ("stripped", the version, the architecture). */
int tt_tls_go_find(int fd, tt_tls_go_probes *out, char *note, size_t cap);

/* The version string of a Go build-information section's bytes (the
 * section as the linker wrote it): the inline form of Go 1.18 and later.
 * Returns false for anything else (the older pointer form, garbage). */
bool tt_tls_go_buildinfo_version(const uint8_t *sec, size_t len, char *version, size_t cap);

/* Where to probe one function of code (its bytes, at file offset `at`):
 * *entry, the conditional jump of the stack-growth check that opens it
 * (a compare against the g's stack guard through R14, then JBE), 0 when
 * it opens with none; returns[], its return instructions. Returns how
 * many returns there are (the first cap kept), or -1 when the code does
 * not decode (or libcapstone, loaded on the first call, does not load). */
int tt_tls_go_code_probes(const uint8_t *code, size_t len, uint64_t at, uint64_t *entry, uint64_t *returns,
                          size_t cap);

#endif
