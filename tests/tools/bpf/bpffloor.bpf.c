// SPDX-License-Identifier: GPL-2.0
/* bpffloor.bpf.c - programs that do nothing, for build/tools/ttbpffloor:
 * what attaching a program to a hook costs the syscalls that pass it,
 * before the program does any work (tests/bench/bpf.sh, 1b). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* the classic syscall tracepoints watch takes a read's and a write's data at */
SEC("tracepoint/syscalls/sys_exit_read")
int floor_exit_read(void *ctx) { return 0; }

SEC("tracepoint/syscalls/sys_exit_write")
int floor_exit_write(void *ctx) { return 0; }

/* the tp_btf hooks watch stamps a TCP send and an arrival at */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(floor_send_stamp, struct sock *sk, struct msghdr *msg, struct sk_buff *skb, int size_goal) { return 0; }

SEC("tp_btf/sk_data_ready")
int BPF_PROG(floor_data_ready, const struct sock *sk) { return 0; }

/* the socket layer's own return hooks (sock_recvmsg, sock_sendmsg), which a
 * tracer could take a socket's data at instead of the syscall's exit */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(floor_sock_recv, struct sock *sk, int ret, int flags) { return 0; }

SEC("tp_btf/sock_send_length")
int BPF_PROG(floor_sock_send, struct sock *sk, int ret, int flags) { return 0; }
