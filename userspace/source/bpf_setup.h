/* bpf_setup.h - what setting the socktap programs up in the kernel needs
 * beyond libbpf's skeleton: tracefs and BTF checks, the cgroup filter's
 * id, and the traced set seeded from /proc. Used by bpf_load.c and
 * tls_attach.c; only in builds with eBPF (TT_WITH_BPF, the skeleton). */
#ifndef TT_BPF_SETUP_H
#define TT_BPF_SETUP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/bpf_source.h"

#ifdef TT_WITH_BPF
#include <bpf/libbpf.h>

struct socktap;

/* libbpf's print callback: silent unless TOKENTAP_BPF_DEBUG is set. */
int tt_bpf_quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap);

/* 0 when every tracepoint socktap attaches to is there (tracefs mounted
 * on /sys/kernel/tracing when it was not); -1 with the reason in err. */
int tt_bpf_check_tracefs(char *err, size_t errlen);

/* Whether the running kernel's BTF has a typedef of that name (tp_btf
 * programs attach to the tracepoints named btf_trace_<name>). */
bool tt_bpf_kernel_has_btf_typedef(const char *name);

/* The cgroup v2 id of directory path and its level below the hierarchy's
 * root (the root is level 0), as bpf_get_current_ancestor_cgroup_id counts.
 * 0, or -1 with the reason in err. */
int tt_bpf_cgroup_id_of(const char *path, uint64_t *id, uint32_t *level, char *err, size_t errlen);

/* Put opt's processes and every descendant alive now into the kernel's
 * traced set, and their listening ports in accept_port_on (and, with ready
 * instants, ready_port_on). Returns how many went in, or -1 with err. */
int tt_bpf_seed_traced_tgids(struct socktap *skel, const tt_bpf_options *opt, char *err, size_t errlen);

/* --comm: the TCP ports the processes of that name listen on now go into
 * the kernel's accept_port_on (and, with ready instants, ready_port_on),
 * as for --pid; best effort. */
void tt_bpf_seed_comm_ports(struct socktap *skel, const char *comm);

/* --cgroup: the TCP ports the processes of cgroup v2 directory path and
 * of the cgroups below it listen on now, seeded the same way; best
 * effort (at most 64 levels down). */
void tt_bpf_seed_cgroup_ports(struct socktap *skel, const char *path);
#endif

#endif
