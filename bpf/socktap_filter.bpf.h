// SPDX-License-Identifier: GPL-2.0
/* socktap_filter.bpf.h - which tasks are traced: the process filters
 * (--pid with its descendants, --comm, --cgroup) and the port filter's
 * value, set by userspace before load. Included by socktap.bpf.c after the
 * task storage (args_by_task), which answers the pid filter for a thread
 * that has it. */

/* Filters, set by userspace before load; every filter set must match.
 * filter_tgids: only processes in traced_tgids (the --pid processes, their
 * descendants at start, and every process a traced one forks from then
 * on). targ_comm: the process's name (its group leader's comm). The cgroup:
 * the task's cgroup v2 ancestor at targ_cgroup_level is targ_cgroup_id
 * (the cgroup or one below it). targ_port: local or remote port. */
const volatile bool filter_tgids = false;
const volatile bool filter_comm = false;
const volatile char targ_comm[16] = {};
const volatile __u64 targ_cgroup_id = 0;
const volatile __u32 targ_cgroup_level = 0;
const volatile __u16 targ_port = 0;
/* The tracer itself (its metrics endpoint's sockets, say): never traced. */
const volatile __u32 self_tgid = 0;

/* The --pid filter's set: seeded by userspace, grown by tt_fork, pruned by
 * tt_exit_task (socktap.bpf.c); what userspace reads (the TLS attach). The
 * programs test traced_bits, below, which holds the same ids. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32); /* tgid (or, briefly, the tid of a thread a traced process started) */
    __type(value, __u8);
} traced_tgids SEC(".maps");

/* Whether the process's name (its group leader's comm) is targ_comm. */
static __always_inline bool comm_matches(void)
{
    struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        char c = leader->comm[i];
        if (c != targ_comm[i]) return false;
        if (c == 0) break;
    }
    return true;
}

/* The same set again, one bit per id (bit id % 64 of word id / 64; ids
 * below the kernel's PID_MAX_LIMIT), set and cleared with traced_tgids
 * (tt_fork, tt_exit_task, and userspace's seed through the mapped .bss):
 * an id is in traced_tgids exactly when its bit is set, barring the
 * instant between the two writes. The filters ask the bits: two loads,
 * where the hash lookup cost about 40 to 50 ns, and where every program of
 * a process nobody traces (a read, a write on a TCP socket) first paid the
 * task storage's lookup too (bench "Where the floor goes"). */
#define TT_TRACED_ID_LIMIT (4u << 20) /* PID_MAX_LIMIT on 64-bit kernels: a power of two */
#define TT_TRACED_WORDS (TT_TRACED_ID_LIMIT / 64)
__u64 traced_bits[TT_TRACED_WORDS];

/* The word of id: masked rather than compared (ids are below the limit;
 * the verifier wants the bound on the index, and a compare the compiler
 * may turn into a load before the test). */
static __always_inline __u64 *id_word(__u32 id)
{
    return &traced_bits[(id / 64) & (TT_TRACED_WORDS - 1)];
}

static __always_inline bool id_marked(__u32 id)
{
    return (*id_word(id) >> (id % 64)) & 1;
}

static __always_inline void id_mark(__u32 id)
{
    __sync_fetch_and_or(id_word(id), 1ull << (id % 64));
}

static __always_inline void id_unmark(__u32 id)
{
    __sync_fetch_and_and(id_word(id), ~(1ull << (id % 64)));
}

/* Whether the process filters that need no helper call let the process
 * tgid through: not the tracer itself, in the --pid set, named targ_comm.
 * Every program of a task context asks this before it looks anything up,
 * so a process nobody traces pays two loads (or the name's compare). */
static __always_inline bool process_passes(__u32 tgid)
{
    if (tgid == self_tgid) return false;
    if (filter_tgids && !id_marked(tgid)) return false;
    if (filter_comm && !comm_matches()) return false;
    return true;
}

/* Whether the current task passes the --cgroup filter (a helper call). */
static __always_inline bool cgroup_passes(void)
{
    return !targ_cgroup_id || bpf_get_current_ancestor_cgroup_id(targ_cgroup_level) == targ_cgroup_id;
}

/* Whether the current task (id: its pid and tgid) passes the process
 * filters (pid, comm, cgroup). */
static __always_inline bool task_traced(__u64 id)
{
    return process_passes(id >> 32) && cgroup_passes();
}

/* Whether the current task (task) passes the process filters; *args is
 * then the thread's call_args when the pid filter is on and it has them
 * (else NULL; always NULL without that filter), so that the caller that
 * needs the storage does not look it up a second time (each lookup takes
 * the task storage's recursion guard: 83 ns per syscall for 2.5 of them).
 * Nothing is looked up for a task the cheap filters turn away. */
static __always_inline bool task_traced_args(struct task_struct *task, __u64 id, struct call_args **args)
{
    *args = NULL;
    if (!task_traced(id)) return false;
    *args = filter_tgids ? task_args(task) : NULL;
    return true;
}

/* What bpf_get_current_pid_tgid returns, read from the current task
 * itself: a helper call saved. */
static __always_inline __u64 task_pid_tgid(const struct task_struct *task)
{
    return (__u64)(__u32)task->tgid << 32 | (__u32)task->pid;
}
