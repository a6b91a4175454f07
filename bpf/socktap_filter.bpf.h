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
 * tt_exit_task (socktap.bpf.c). */
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

/* Whether the current task passes the process filters, once the caller
 * has looked its call_args up (args: the result, NULL when it has none): a
 * thread with call_args passed the pid filter when they were made. */
static __always_inline bool task_traced_given(__u64 id, const struct call_args *args)
{
    __u32 tgid = id >> 32;
    if (tgid == self_tgid) return false;
    if (filter_tgids && !args && !bpf_map_lookup_elem(&traced_tgids, &tgid)) return false;
    if (targ_cgroup_id && bpf_get_current_ancestor_cgroup_id(targ_cgroup_level) != targ_cgroup_id) return false;
    if (filter_comm && !comm_matches()) return false;
    return true;
}

/* task's call_args when the pid filter needs them to decide (a thread
 * with them passed it; one without is looked up in traced_tgids), else
 * NULL. */
static __always_inline struct call_args *pid_filter_args(struct task_struct *task)
{
    return filter_tgids ? task_args(task) : NULL;
}

/* Whether the current task (task) passes the process filters (pid,
 * comm, cgroup). With the pid filter, *args is the thread's call_args when
 * it has them (else NULL; always NULL without that filter): a thread with
 * call_args passed the pid filter when they were made (thread_args is only
 * called once the filters passed), and a process leaves traced_tgids only
 * when it dies, so its storage answers without the hash lookup (about 50
 * ns per syscall here, bench "Where the floor goes"), and the caller that
 * needs the storage does not look it up a second time (each lookup takes
 * the task storage's recursion guard: 83 ns per syscall for 2.5 of them). */
static __always_inline bool task_traced_args(struct task_struct *task, __u64 id, struct call_args **args)
{
    *args = NULL;
    if ((__u32)(id >> 32) == self_tgid) return false;
    *args = pid_filter_args(task);
    return task_traced_given(id, *args);
}

/* Whether the current task passes the process filters (pid, comm, cgroup). */
static __always_inline bool task_traced(__u64 id)
{
    struct call_args *args;
    return task_traced_args(bpf_get_current_task_btf(), id, &args);
}

/* What bpf_get_current_pid_tgid returns, read from the current task
 * itself: a helper call saved. */
static __always_inline __u64 task_pid_tgid(const struct task_struct *task)
{
    return (__u64)(__u32)task->tgid << 32 | (__u32)task->pid;
}
