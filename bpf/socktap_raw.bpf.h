// SPDX-License-Identifier: GPL-2.0
/* socktap_raw.bpf.h - the eight data syscalls (read, write, readv, writev,
 * sendto, recvfrom, sendmsg, recvmsg) through the raw syscall tracepoints
 * (tp_btf/sys_enter, tp_btf/sys_exit) instead of their classic
 * syscalls:sys_enter_X / sys_exit_X twins. Included at the end of
 * socktap.bpf.c; x86_64 only (the syscall numbers and registers below).
 *
 * Why: a classic syscall tracepoint builds a perf-event record of the
 * syscall's arguments (perf_trace_buf_alloc, the copy, the perf filter)
 * before the program runs; the raw tracepoint hands the program the
 * registers directly. The price: the raw tracepoints fire for every
 * syscall of every process, so the first thing each program does is a
 * syscall-number check against one 64-bit mask (two loads and a branch).
 * Userspace loads either these two programs (TOKENTAP_BPF_RAW=1, on a
 * kernel with the sys_enter BTF type) or the twelve classic ones for the
 * same syscalls (the default); never both. Opt-in, not the default: on the
 * project's VM the mask check still costs every untraced syscall about
 * 300 ns (bpf/README.md, "Raw syscall tracepoints"). */
#if defined(__TARGET_ARCH_x86)

#define TT_NR_READ 0
#define TT_NR_WRITE 1
#define TT_NR_READV 19
#define TT_NR_WRITEV 20
#define TT_NR_SENDTO 44
#define TT_NR_RECVFROM 45
#define TT_NR_SENDMSG 46
#define TT_NR_RECVMSG 47
#define TT_NR_DATA_MASK                                                                                  \
    ((1ull << TT_NR_READ) | (1ull << TT_NR_WRITE) | (1ull << TT_NR_READV) | (1ull << TT_NR_WRITEV) |     \
     (1ull << TT_NR_SENDTO) | (1ull << TT_NR_RECVFROM) | (1ull << TT_NR_SENDMSG) | (1ull << TT_NR_RECVMSG))
#define TT_USER64_CS 0x33 /* a 64-bit task's code segment; ia32 syscalls number differently */

/* Whether nr is one of the eight data syscalls (x86_64 numbering). */
static __always_inline bool raw_nr_is_data(unsigned long nr)
{
    return nr < 64 && ((1ull << nr) & TT_NR_DATA_MASK);
}

/* The socktap syscall of a data syscall number (raw_nr_is_data holds). */
static __always_inline __u32 raw_sys_of_nr(unsigned long nr)
{
    switch (nr) {
    case TT_NR_READ: return TT_SOCKTAP_SYS_READ;
    case TT_NR_WRITE: return TT_SOCKTAP_SYS_WRITE;
    case TT_NR_READV: return TT_SOCKTAP_SYS_READV;
    case TT_NR_WRITEV: return TT_SOCKTAP_SYS_WRITEV;
    case TT_NR_SENDTO: return TT_SOCKTAP_SYS_SENDTO;
    case TT_NR_RECVFROM: return TT_SOCKTAP_SYS_RECVFROM;
    case TT_NR_SENDMSG: return TT_SOCKTAP_SYS_SENDMSG;
    default: return TT_SOCKTAP_SYS_RECVMSG;
    }
}

/* Every syscall's entry: the sends of 64-bit tasks go on to the same
 * on_enter as the classic programs, with the same arguments (x86_64: fd in
 * di, the buffer in si, an iovec count in dx). Receives have no enter
 * (on_exit_recv). */
SEC("tp_btf/sys_enter")
int BPF_PROG(tt_raw_enter, struct pt_regs *regs, long nr)
{
    if (!raw_nr_is_data((unsigned long)nr)) return 0;
    if (regs->cs != TT_USER64_CS) return 0;
    __u32 sys = raw_sys_of_nr((unsigned long)nr);
    if (is_recv_syscall(sys)) return 0;
    return on_enter((__s32)regs->di, regs->si, sys == TT_SOCKTAP_SYS_WRITEV ? regs->dx : 0, sys);
}

/* Every syscall's exit: a send's goes on to on_exit, which finds (or not)
 * the arguments its entry left for this thread; a receive's to
 * on_exit_recv with the registers at hand. */
SEC("tp_btf/sys_exit")
int BPF_PROG(tt_raw_exit, struct pt_regs *regs, long ret)
{
    unsigned long nr = regs->orig_ax;
    if (!raw_nr_is_data(nr)) return 0;
    __u32 sys = raw_sys_of_nr(nr);
    if (is_recv_syscall(sys)) {
        if (regs->cs != TT_USER64_CS) return 0;
        return on_exit_recv_sys(ret, sys, regs);
    }
    return on_exit(ret, TT_SOCKTAP_DIR_SEND, sys);
}

#endif
