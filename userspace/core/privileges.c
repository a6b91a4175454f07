/* privileges.c - keep a set of capabilities, drop the rest, set
 * no_new_privs, maybe become another user: in every thread. */
#include "core/privileges.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

static const char *const cap_names[] = {
    "cap_chown",           "cap_dac_override",  "cap_dac_read_search", "cap_fowner",
    "cap_fsetid",          "cap_kill",          "cap_setgid",          "cap_setuid",
    "cap_setpcap",         "cap_linux_immutable", "cap_net_bind_service", "cap_net_broadcast",
    "cap_net_admin",       "cap_net_raw",       "cap_ipc_lock",        "cap_ipc_owner",
    "cap_sys_module",      "cap_sys_rawio",     "cap_sys_chroot",      "cap_sys_ptrace",
    "cap_sys_pacct",       "cap_sys_admin",     "cap_sys_boot",        "cap_sys_nice",
    "cap_sys_resource",    "cap_sys_time",      "cap_sys_tty_config",  "cap_mknod",
    "cap_lease",           "cap_audit_write",   "cap_audit_control",   "cap_setfcap",
    "cap_mac_override",    "cap_mac_admin",     "cap_syslog",          "cap_wake_alarm",
    "cap_block_suspend",   "cap_audit_read",    "cap_perfmon",         "cap_bpf",
    "cap_checkpoint_restore",
};

const char *tt_cap_name(int cap, char *buf, size_t cap_len)
{
    if (cap >= 0 && (size_t)cap < sizeof cap_names / sizeof *cap_names) return cap_names[cap];
    snprintf(buf, cap_len, "cap_%d", cap);
    return buf;
}

const char *tt_caps_format(tt_caps caps, char *buf, size_t cap_len)
{
    if (!cap_len) return buf;
    buf[0] = 0;
    if (!caps) {
        snprintf(buf, cap_len, "none");
        return buf;
    }
    size_t used = 0;
    for (int c = 0; c < 64 && used < cap_len; c++) {
        if (!(caps & TT_CAP_BIT(c))) continue;
        char tmp[16];
        int n = snprintf(buf + used, cap_len - used, "%s%s", used ? "," : "", tt_cap_name(c, tmp, sizeof tmp));
        if (n < 0) break;
        used += (size_t)n;
    }
    return buf;
}

bool tt_priv_kernel_at_least(const char *kernel_release, int major, int minor)
{
    int have_major, have_minor;
    if (!kernel_release || sscanf(kernel_release, "%d.%d", &have_major, &have_minor) != 2) return false;
    return have_major > major || (have_major == major && have_minor >= minor);
}

tt_caps tt_priv_watch_needs(bool follows_tls, const char *kernel_release, int unprivileged_bpf_disabled)
{
    tt_caps need = 0;
    /* A uprobe is a perf event of the uprobe PMU: CAP_SYS_ADMIN since
     * "perf: Require CAP_SYS_ADMIN for uprobes" (2025, in the stable
     * kernels too; CAP_PERFMON was enough from 5.8 until then, and no
     * kernel release tells which rule applies). CAP_SYS_ADMIN also passes
     * every CAP_BPF and CAP_PERFMON check. */
    if (follows_tls)
        need |= TT_CAP_BIT(CAP_SYS_ADMIN) | TT_CAP_BIT(CAP_SYS_PTRACE) | TT_CAP_BIT(CAP_DAC_READ_SEARCH);
    /* Before Linux 6.5 a bpf() call of any kind, a map lookup on a file
     * descriptor already held included, is refused to a caller without
     * CAP_BPF while kernel.unprivileged_bpf_disabled is set; from 6.5 only
     * creating maps and loading programs is. */
    if (!(need & TT_CAP_BIT(CAP_SYS_ADMIN)) && unprivileged_bpf_disabled != 0 &&
        !tt_priv_kernel_at_least(kernel_release, 6, 5))
        need |= TT_CAP_BIT(CAP_BPF);
    return need;
}

/* A /proc file whole (their size is not known beforehand). */
static int read_proc(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t used = 0;
    for (;;) {
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        if (used == cap - 1) break;
    }
    close(fd);
    buf[used] = 0;
    return 0;
}

/* A small number in a /proc file, or fallback. */
static int read_proc_int(const char *path, int fallback)
{
    char text[32];
    uint32_t v;
    if (read_proc(path, text, sizeof text) != 0) return fallback;
    text[strcspn(text, "\n")] = 0;
    return tt_parse_u32(text, 1000, &v) ? (int)v : fallback;
}

tt_caps tt_priv_watch_needs_here(bool follows_tls)
{
    struct utsname un;
    const char *release = uname(&un) == 0 ? un.release : NULL;
    return tt_priv_watch_needs(follows_tls, release, read_proc_int("/proc/sys/kernel/unprivileged_bpf_disabled", 1));
}

int tt_priv_user_lookup(const char *spec, tt_priv_user *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!spec || !spec[0]) return tt_fail_line(err, errlen, "--user wants a user name or uid");
    if (strlen(spec) >= sizeof out->name) return tt_fail_line(err, errlen, "--user %.40s...: name too long", spec);
    long bufsize = sysconf(_SC_GETPW_R_SIZE_MAX);
    size_t size = bufsize > 0 ? (size_t)bufsize : 16384;
    char *buf = malloc(size);
    if (!buf) return tt_fail_line(err, errlen, "--user %s: out of memory", spec);
    struct passwd pw, *found = NULL;
    int rc = getpwnam_r(spec, &pw, buf, size, &found);
    uint32_t uid;
    if (!found && rc == 0 && tt_parse_u32(spec, 0xfffffffeu, &uid)) rc = getpwuid_r((uid_t)uid, &pw, buf, size, &found);
    if (!found) {
        free(buf);
        if (rc != 0 && rc != ENOENT && rc != ESRCH)
            return tt_fail_line(err, errlen, "--user %s: reading the user database: %s", spec, strerror(rc));
        return tt_fail_line(err, errlen, "--user %s: no such user", spec);
    }
    snprintf(out->name, sizeof out->name, "%s", pw.pw_name);
    out->uid = pw.pw_uid;
    out->gid = pw.pw_gid;
    free(buf);
    return 0;
}

/* ---- /proc/PID/status ---- */

static bool parse_hex_caps(const char *text, const char *key, tt_caps *out, bool optional)
{
    const char *p = strstr(text, key);
    *out = 0;
    if (!p) return optional;
    p += strlen(key);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 16);
    if (errno || end == p || (*end != '\n' && *end != 0)) return false;
    *out = (tt_caps)v;
    return true;
}

/* "Uid:\t0\t0\t0\t0" into four ids */
static bool parse_ids(const char *text, const char *key, unsigned out[4])
{
    const char *p = strstr(text, key);
    if (!p) return false;
    p += strlen(key);
    for (int i = 0; i < 4; i++) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || end == p || v > 0xffffffffu) return false;
        out[i] = (unsigned)v;
        p = end;
    }
    return *p == '\n' || *p == 0;
}

bool tt_priv_parse_status(const char *text, tt_priv_state *out)
{
    memset(out, 0, sizeof *out);
    unsigned uid[4], gid[4];
    if (!parse_ids(text, "\nUid:", uid) || !parse_ids(text, "\nGid:", gid)) return false;
    for (int i = 0; i < 4; i++) {
        out->uid[i] = (uid_t)uid[i];
        out->gid[i] = (gid_t)gid[i];
    }
    const char *g = strstr(text, "\nGroups:");
    if (!g) return false;
    g += strlen("\nGroups:");
    for (;;) {
        while (*g == ' ' || *g == '\t') g++;
        if (*g == '\n' || *g == 0) break;
        char *end;
        errno = 0;
        unsigned long v = strtoul(g, &end, 10);
        if (errno || end == g || v > 0xffffffffu) return false;
        if (out->n_groups++ == 0) out->first_group = (gid_t)v;
        g = end;
    }
    if (!parse_hex_caps(text, "\nCapInh:", &out->inheritable, false) ||
        !parse_hex_caps(text, "\nCapPrm:", &out->permitted, false) ||
        !parse_hex_caps(text, "\nCapEff:", &out->effective, false) ||
        !parse_hex_caps(text, "\nCapBnd:", &out->bounding, false) ||
        !parse_hex_caps(text, "\nCapAmb:", &out->ambient, true))
        return false;
    const char *n = strstr(text, "\nNoNewPrivs:");
    if (n) {
        n += strlen("\nNoNewPrivs:");
        while (*n == ' ' || *n == '\t') n++;
        if (*n != '0' && *n != '1') return false;
        out->no_new_privs = *n == '1';
    }
    return true;
}

/* The first capability in extra, named, into why. */
static bool differs(char *why, size_t whylen, const char *field, tt_caps extra)
{
    char tmp[16];
    int c = 0;
    while (!(extra & TT_CAP_BIT(c))) c++;
    snprintf(why, whylen, "%s has %s", field, tt_cap_name(c, tmp, sizeof tmp));
    return false;
}

bool tt_priv_state_conforms(const tt_priv_state *s, tt_caps keep, tt_caps bounding, const tt_priv_user *user,
                            char *why, size_t whylen)
{
    if (!s->no_new_privs) {
        snprintf(why, whylen, "no_new_privs is not set");
        return false;
    }
    if (s->permitted & ~keep) return differs(why, whylen, "CapPrm", s->permitted & ~keep);
    if (s->effective & ~keep) return differs(why, whylen, "CapEff", s->effective & ~keep);
    if (s->bounding & ~bounding) return differs(why, whylen, "CapBnd", s->bounding & ~bounding);
    if (s->inheritable) return differs(why, whylen, "CapInh", s->inheritable);
    if (s->ambient) return differs(why, whylen, "CapAmb", s->ambient);
    if (!user) return true;
    for (int i = 0; i < 4; i++) {
        if (s->uid[i] != user->uid || s->gid[i] != user->gid) {
            snprintf(why, whylen, "uid %u gid %u, not %s's %u:%u", (unsigned)s->uid[i], (unsigned)s->gid[i],
                     user->name, (unsigned)user->uid, (unsigned)user->gid);
            return false;
        }
    }
    if (s->n_groups > 1 || (s->n_groups == 1 && s->first_group != user->gid)) {
        snprintf(why, whylen, "%zu supplementary groups, not only %u", s->n_groups, (unsigned)user->gid);
        return false;
    }
    return true;
}

/* ---- the calling thread ---- */

/* The steps, named in errors. */
enum drop_step {
    STEP_NONE,
    STEP_NO_NEW_PRIVS,
    STEP_BOUNDING,
    STEP_AMBIENT,
    STEP_CAPGET,
    STEP_CAPSET,
};

static const char *step_name(int step)
{
    switch (step) {
    case STEP_NO_NEW_PRIVS: return "prctl(PR_SET_NO_NEW_PRIVS)";
    case STEP_BOUNDING: return "prctl(PR_CAPBSET_DROP)";
    case STEP_AMBIENT: return "prctl(PR_CAP_AMBIENT_CLEAR_ALL)";
    case STEP_CAPGET: return "capget";
    case STEP_CAPSET: return "capset";
    default: return "?";
    }
}

static int caps_get(tt_caps *permitted, tt_caps *effective)
{
    struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &head, data) != 0) return -1;
    *permitted = (tt_caps)data[0].permitted | (tt_caps)data[1].permitted << 32;
    *effective = (tt_caps)data[0].effective | (tt_caps)data[1].effective << 32;
    return 0;
}

static int caps_set(tt_caps permitted, tt_caps effective, tt_caps inheritable)
{
    struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {
        {(uint32_t)effective, (uint32_t)permitted, (uint32_t)inheritable},
        {(uint32_t)(effective >> 32), (uint32_t)(permitted >> 32), (uint32_t)(inheritable >> 32)},
    };
    return (int)syscall(SYS_capset, &head, data);
}

/* Phase one, in one thread (async-signal-safe: raw syscalls only):
 * no_new_privs, the bounding set down to keep (when drop_bounding),
 * ambient and inheritable emptied. Permitted and effective stay whole:
 * every thread still needs CAP_SETUID and CAP_SETGID for the switch of
 * user that follows (glibc runs it in each thread), and CAP_SETPCAP for
 * the bounding set. Returns STEP_NONE or the step that failed (errno set). */
static int limit_this_thread(tt_caps keep, bool drop_bounding, int last_cap)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return STEP_NO_NEW_PRIVS;
    for (int c = 0; drop_bounding && c <= last_cap; c++) {
        if (keep & TT_CAP_BIT(c)) continue;
        int in = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
        if (in < 0 && errno == EINVAL) break; /* past the kernel's last capability */
        if (in == 1 && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) return STEP_BOUNDING;
    }
    /* EINVAL: a kernel without ambient capabilities (before 4.3) */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return STEP_AMBIENT;
    tt_caps permitted, effective;
    if (caps_get(&permitted, &effective) != 0) return STEP_CAPGET;
    if (caps_set(permitted, effective, 0) != 0) return STEP_CAPSET;
    return STEP_NONE;
}

/* Phase two, in one thread: permitted narrowed to keep, effective = permitted. */
static int narrow_this_thread(tt_caps keep)
{
    tt_caps permitted, effective;
    if (caps_get(&permitted, &effective) != 0) return STEP_CAPGET;
    permitted &= keep;
    if (caps_set(permitted, permitted, 0) != 0) return STEP_CAPSET;
    return STEP_NONE;
}

/* ---- every other thread, by a signal each ---- */

enum phase { PHASE_LIMIT, PHASE_NARROW };

/* What the threads are asked to do: written before any signal is sent. */
static struct {
    enum phase phase;
    tt_caps keep;
    bool drop_bounding;
    int last_cap;
    atomic_int acks;
    atomic_int failed_step, failed_errno; /* the first failure */
} broadcast;

static int run_phase(void)
{
    if (broadcast.phase == PHASE_LIMIT)
        return limit_this_thread(broadcast.keep, broadcast.drop_bounding, broadcast.last_cap);
    return narrow_this_thread(broadcast.keep);
}

static void on_broadcast(int sig)
{
    (void)sig;
    int saved = errno;
    int step = run_phase();
    if (step != STEP_NONE) {
        int none = STEP_NONE;
        if (atomic_compare_exchange_strong(&broadcast.failed_step, &none, step))
            atomic_store(&broadcast.failed_errno, errno);
    }
    atomic_fetch_add(&broadcast.acks, 1);
    errno = saved;
}

/* Run the phase in this thread, then in every other thread of the process:
 * a real-time signal to each (one tokentap uses for nothing else), waiting
 * up to 2 s for all of them to answer. */
static int in_every_thread(enum phase phase, char *err, size_t errlen)
{
    broadcast.phase = phase;
    atomic_store(&broadcast.acks, 0);
    atomic_store(&broadcast.failed_step, STEP_NONE);
    atomic_store(&broadcast.failed_errno, 0);
    int step = run_phase();
    if (step != STEP_NONE) return tt_fail_line(err, errlen, "%s: %s", step_name(step), strerror(errno));

    int sig = SIGRTMIN + 7;
    struct sigaction sa = {.sa_handler = on_broadcast, .sa_flags = SA_RESTART}, old;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &old) != 0) return tt_fail_line(err, errlen, "sigaction: %s", strerror(errno));
    pid_t self = (pid_t)syscall(SYS_gettid), pid = getpid();
    int sent = 0, rc = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) rc = tt_fail_line(err, errlen, "/proc/self/task: %s", strerror(errno));
    for (struct dirent *e; d && (e = readdir(d));) {
        uint32_t tid;
        if (!tt_parse_u32(e->d_name, 0x7fffffff, &tid) || (pid_t)tid == self) continue;
        if (syscall(SYS_tgkill, pid, (pid_t)tid, sig) == 0) sent++;
        else if (errno != ESRCH) rc = tt_fail_line(err, errlen, "tgkill thread %u: %s", tid, strerror(errno));
    }
    if (d) closedir(d);
    for (int waited_ms = 0; atomic_load(&broadcast.acks) < sent && waited_ms < 2000; waited_ms++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    int acks = atomic_load(&broadcast.acks);
    /* a thread that has not answered may still take the signal: the
     * handler stays for it (the default action would end the process) */
    if (acks < sent) return tt_fail_line(err, errlen, "%d of %d other threads did not answer", sent - acks, sent);
    sigaction(sig, &old, NULL);
    if (rc < 0) return rc;
    step = atomic_load(&broadcast.failed_step);
    if (step != STEP_NONE)
        return tt_fail_line(err, errlen, "%s in another thread: %s", step_name(step),
                            strerror(atomic_load(&broadcast.failed_errno)));
    return 0;
}

/* Every thread's status against the promise (bounding: the bounding set
 * allowed); the caller's into out->state. */
static int check_every_thread(tt_caps keep, tt_caps bounding, const tt_priv_user *user, tt_priv_result *out,
                              char *err, size_t errlen)
{
    pid_t self = (pid_t)syscall(SYS_gettid);
    DIR *d = opendir("/proc/self/task");
    if (!d) return tt_fail_line(err, errlen, "/proc/self/task: %s", strerror(errno));
    int rc = 0;
    bool found_self = false;
    out->threads = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        uint32_t tid;
        if (!tt_parse_u32(e->d_name, 0x7fffffff, &tid)) continue;
        char path[64], text[4096], why[128];
        snprintf(path, sizeof path, "/proc/self/task/%u/status", tid);
        tt_priv_state s;
        if (read_proc(path, text, sizeof text) != 0) {
            if (errno == ENOENT) continue; /* the thread ended */
            rc = tt_fail_line(err, errlen, "%s: %s", path, strerror(errno));
        } else if (!tt_priv_parse_status(text, &s)) {
            rc = tt_fail_line(err, errlen, "%s: not understood", path);
        } else if (!tt_priv_state_conforms(&s, keep, bounding, user, why, sizeof why)) {
            rc = tt_fail_line(err, errlen, "thread %u still holds more than it should: %s", tid, why);
        } else {
            out->threads++;
            if ((pid_t)tid == self) {
                out->state = s;
                found_self = true;
            }
        }
    }
    closedir(d);
    if (rc == 0 && !found_self) rc = tt_fail_line(err, errlen, "this thread is not in /proc/self/task");
    return rc;
}

/* The kernel's last capability (63 when unknown: PR_CAPBSET_READ says
 * EINVAL past the last one). */
static int read_last_cap(void)
{
    int last = read_proc_int("/proc/sys/kernel/cap_last_cap", 63);
    return last > 63 ? 63 : last;
}

int tt_priv_drop(tt_caps keep, const tt_priv_user *user, tt_priv_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char why[192];
    tt_caps permitted, effective;
    if (caps_get(&permitted, &effective) != 0)
        return tt_fail_line(err, errlen, "dropping privileges: capget: %s", strerror(errno));
    /* PR_CAPBSET_DROP wants CAP_SETPCAP; without it the bounding set stays */
    broadcast.keep = keep;
    broadcast.drop_bounding = (effective & TT_CAP_BIT(CAP_SETPCAP)) != 0;
    broadcast.last_cap = read_last_cap();
    tt_caps bounding = keep;
    for (int c = 0; !broadcast.drop_bounding && c <= broadcast.last_cap; c++)
        if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1) bounding |= TT_CAP_BIT(c);
    out->bounding_dropped = broadcast.drop_bounding;
    if (in_every_thread(PHASE_LIMIT, why, sizeof why) < 0)
        return tt_fail_line(err, errlen, "dropping privileges: %s", why);
    if (user) {
        /* glibc runs each of these in every thread; PR_SET_KEEPCAPS is the
         * calling thread's: the others lose all their capabilities here */
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
            return tt_fail_line(err, errlen, "--user %s: prctl(PR_SET_KEEPCAPS): %s", user->name, strerror(errno));
        gid_t groups[1] = {user->gid};
        if (setgroups(1, groups) != 0)
            snprintf(why, sizeof why, "setgroups: %s", strerror(errno));
        else if (setresgid(user->gid, user->gid, user->gid) != 0)
            snprintf(why, sizeof why, "setgid: %s", strerror(errno));
        else if (setresuid(user->uid, user->uid, user->uid) != 0)
            snprintf(why, sizeof why, "setuid: %s", strerror(errno));
        else
            why[0] = 0;
        if (why[0]) return tt_fail_line(err, errlen, "--user %s: %s", user->name, why);
        prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    }
    if (in_every_thread(PHASE_NARROW, why, sizeof why) < 0 ||
        check_every_thread(keep, bounding, user, out, why, sizeof why) < 0)
        return tt_fail_line(err, errlen, "dropping privileges: %s", why);
    out->kept = out->state.permitted;
    if (out->state.effective != out->state.permitted)
        return tt_fail_line(err, errlen, "dropping privileges: the effective capabilities are not the permitted ones");
    return 0;
}
