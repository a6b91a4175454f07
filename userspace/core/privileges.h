/* privileges.h - least privilege for a long-running tracer (`tokentap
 * watch`, docs/production.md, "Privileges"): once its setup is done the
 * process keeps a chosen set of capabilities and loses every other one
 * (permitted, effective, inheritable, ambient and bounding sets), sets
 * no_new_privs, and may switch to another user, keeping that set across
 * the switch. All of it applies to every thread of the process (a library
 * thread started during the setup, such as libmicrohttpd's, holds what
 * the main thread held), and is checked afterwards in
 * /proc/self/task/TID/status. Raw capget/capset and prctl: no libcap. */
#ifndef TT_PRIVILEGES_H
#define TT_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A set of capabilities: bit n is capability n (CAP_* of linux/capability.h). */
typedef uint64_t tt_caps;
#define TT_CAP_BIT(n) ((tt_caps)1 << (n))

/* The user to become, resolved before anything is dropped. */
typedef struct tt_priv_user {
    char name[64];
    uid_t uid;
    gid_t gid; /* the user's primary group: the only group kept */
} tt_priv_user;

/* One thread's credentials, as /proc/PID/task/TID/status shows them. */
typedef struct tt_priv_state {
    uid_t uid[4]; /* real, effective, saved, filesystem */
    gid_t gid[4];
    size_t n_groups;   /* supplementary groups */
    gid_t first_group; /* the first of them (when n_groups > 0) */
    tt_caps inheritable, permitted, effective, bounding, ambient;
    bool no_new_privs;
} tt_priv_state;

/* What tt_priv_drop left. */
typedef struct tt_priv_result {
    tt_caps kept;          /* the calling thread's permitted (= effective) set */
    bool bounding_dropped; /* false: the bounding set was left as it was (no CAP_SETPCAP to change it) */
    tt_priv_state state;   /* the calling thread's credentials */
    size_t threads;        /* threads checked, the caller included */
} tt_priv_result;

/* Resolve spec, a user name or a numeric uid, through the passwd database
 * into *out. 0, or -1 with a one-line reason in err ("no such user"). */
int tt_priv_user_lookup(const char *spec, tt_priv_user *out, char *err, size_t errlen);

/* In every thread of the process: set no_new_privs, take every capability
 * outside keep out of the bounding set (when the caller holds CAP_SETPCAP;
 * without it the bounding set stays as it is, which no_new_privs makes
 * moot for this process and its children, and out->bounding_dropped says
 * so), clear the ambient and inheritable sets; with user (may be NULL),
 * become that user and its primary group (real, effective and saved ids;
 * supplementary groups: the primary group only; needs CAP_SETUID and
 * CAP_SETGID) while the calling thread keeps its capabilities across the
 * switch; then narrow each thread's permitted and effective sets to keep
 * (the caller's effective set is its whole permitted set; a capability in
 * keep that the process does not hold stays absent). Finally reads every
 * thread's status back and fails unless each conforms
 * (tt_priv_state_conforms). 0 with *out filled, or -1 with a one-line
 * reason naming the step in err ("--user nobody: setgid: Operation not
 * permitted"); after -1 the process is part way and must not carry on. */
int tt_priv_drop(tt_caps keep, const tt_priv_user *user, tt_priv_result *out, char *err, size_t errlen);

/* Parse the text of a /proc/PID/status file (NUL-terminated) into *out:
 * Uid, Gid, Groups, CapInh, CapPrm, CapEff, CapBnd, CapAmb, NoNewPrivs.
 * False when any of them is missing or malformed (CapAmb and NoNewPrivs
 * may be absent on old kernels: then 0). */
bool tt_priv_parse_status(const char *text, tt_priv_state *out);

/* True when s is what tt_priv_drop promises for a thread: no_new_privs;
 * permitted and effective within keep, bounding within bounding;
 * inheritable and ambient empty; with user (may be NULL), every uid and
 * gid the user's and the supplementary groups at most its primary group.
 * Otherwise false with the first difference in why (e.g. "CapBnd has
 * cap_sys_admin"). */
bool tt_priv_state_conforms(const tt_priv_state *s, tt_caps keep, tt_caps bounding, const tt_priv_user *user,
                            char *why, size_t whylen);

/* The capabilities a running `tokentap watch` still needs once its eBPF
 * programs are loaded and attached, its ring buffer mapped and its metrics
 * socket bound (found by running it with each one dropped):
 *  - follows_tls (TLS uprobes are attached to processes as they start
 *    programs or fork): CAP_SYS_ADMIN (perf_event_open of a uprobe; it
 *    also passes the CAP_BPF and CAP_PERFMON checks), CAP_SYS_PTRACE
 *    (/proc/PID/maps and /proc/PID/exe of a process holding capabilities
 *    or another user's), CAP_DAC_READ_SEARCH (an executable or library
 *    that the watcher's user may not read);
 *  - CAP_BPF, without the above, on a kernel that still refuses every
 *    bpf() command without it (before 6.5, unprivileged_bpf_disabled
 *    > 0): the counters' map lookups.
 * kernel_release is uname's release ("6.1.0-13-amd64"); NULL or
 * unparsable counts as old. Nothing else: the ring buffer is read through
 * its mapping, the socket is bound, the report's file open. */
tt_caps tt_priv_watch_needs(bool follows_tls, const char *kernel_release, int unprivileged_bpf_disabled);

/* tt_priv_watch_needs for the running kernel (uname, and
 * /proc/sys/kernel/unprivileged_bpf_disabled: unreadable counts as set). */
tt_caps tt_priv_watch_needs_here(bool follows_tls);

/* True when kernel_release ("MAJOR.MINOR...") is at least major.minor;
 * false when it does not parse. */
bool tt_priv_kernel_at_least(const char *kernel_release, int major, int minor);

/* The capability's name as capabilities(7) spells it, lower case
 * ("cap_sys_ptrace"), or "cap_N" for one this table does not know. */
const char *tt_cap_name(int cap, char *buf, size_t cap_len);

/* The set as names joined by commas ("cap_perfmon,cap_sys_ptrace"), or
 * "none". Returns buf (truncated to its size). */
const char *tt_caps_format(tt_caps caps, char *buf, size_t cap_len);

#endif
