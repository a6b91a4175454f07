/* bpf_setup.c - setting the socktap programs up in the kernel (bpf_setup.h). */
#include "source/bpf_setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifdef TT_WITH_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/util.h"
#include "socktap.skel.h"

int tt_bpf_quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (!tt_env_flag("TOKENTAP_BPF_DEBUG")) return 0;
    return vfprintf(stderr, fmt, ap);
}

static const char *const tracepoints[] = {
    "syscalls/sys_enter_write", "syscalls/sys_exit_write", "syscalls/sys_enter_read", "syscalls/sys_exit_read",
    "syscalls/sys_enter_sendto", "syscalls/sys_exit_sendto", "syscalls/sys_enter_recvfrom",
    "syscalls/sys_exit_recvfrom", "syscalls/sys_enter_writev", "syscalls/sys_exit_writev",
    "syscalls/sys_enter_readv", "syscalls/sys_exit_readv", "syscalls/sys_enter_sendmsg",
    "syscalls/sys_exit_sendmsg", "syscalls/sys_enter_recvmsg", "syscalls/sys_exit_recvmsg",
    "syscalls/sys_enter_recvmmsg", "syscalls/sys_exit_recvmmsg", "syscalls/sys_enter_sendmmsg",
    "syscalls/sys_exit_sendmmsg", "syscalls/sys_enter_sendfile64", "syscalls/sys_exit_sendfile64",
    "syscalls/sys_enter_connect", "syscalls/sys_exit_connect", "syscalls/sys_enter_accept",
    "syscalls/sys_exit_accept", "syscalls/sys_enter_accept4", "syscalls/sys_exit_accept4",
    "syscalls/sys_enter_close", "sched/sched_process_fork", "sched/sched_process_exit", "sched/sched_process_exec",
};

int tt_bpf_check_tracefs(char *err, size_t errlen)
{
    if (access("/sys/kernel/tracing/events", F_OK) != 0 && access("/sys/kernel/debug/tracing/events", F_OK) != 0) {
        if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0) {
            return tt_fail_line(err, errlen, "tracefs is not mounted and mounting it on /sys/kernel/tracing failed: %s",
                                strerror(errno));
        }
    }
    const char *root = access("/sys/kernel/tracing/events", F_OK) == 0 ? "/sys/kernel/tracing"
                                                                       : "/sys/kernel/debug/tracing";
    for (size_t i = 0; i < sizeof tracepoints / sizeof tracepoints[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/events/%s", root, tracepoints[i]);
        if (access(path, F_OK) != 0) {
            tt_fail_line(err, errlen, "tracepoint %s is absent (%s missing; kernel without CONFIG_FTRACE_SYSCALLS?)",
                    tracepoints[i], path);
            return -1;
        }
    }
    return 0;
}

/* Whether the running kernel's BTF has a typedef of that name (tp_btf
 * programs attach to the tracepoints named btf_trace_<name>). */
bool tt_bpf_kernel_has_btf_typedef(const char *name)
{
    struct btf *btf = btf__load_vmlinux_btf();
    if (!btf) return false;
    bool found = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) > 0;
    btf__free(btf);
    return found;
}

#define CGROUP2_MAGIC 0x63677270

/* The cgroup v2 id of directory path and its level below the hierarchy's
 * root (the root is level 0), as bpf_get_current_ancestor_cgroup_id counts. */
int tt_bpf_cgroup_id_of(const char *path, uint64_t *id, uint32_t *level, char *err, size_t errlen)
{
    struct statfs sfs;
    struct stat st;
    if (statfs(path, &sfs) != 0 || stat(path, &st) != 0) {
        return tt_fail_line(err, errlen, "--cgroup %s: %s", path, strerror(errno));
    }
    if ((unsigned long)sfs.f_type != CGROUP2_MAGIC || !S_ISDIR(st.st_mode)) {
        return tt_fail_line(err, errlen,
                            "--cgroup %s is not a cgroup v2 directory (a cgroup2 mount, e.g. /sys/fs/cgroup/...)", path);
    }
    *id = (uint64_t)st.st_ino;
    struct {
        struct file_handle fh;
        uint64_t ino;
    } h = {.fh.handle_bytes = sizeof(uint64_t)};
    int mount_id;
    if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) == 0 && h.fh.handle_bytes == sizeof(uint64_t))
        memcpy(id, h.fh.f_handle, sizeof *id);
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        return tt_fail_line(err, errlen, "--cgroup %s: %s", path, strerror(errno));
    }
    uint32_t depth = 0;
    for (;;) {
        char *slash = strrchr(real, '/');
        if (!slash || slash == real) break;
        *slash = 0;
        if (statfs(real, &sfs) != 0 || (unsigned long)sfs.f_type != CGROUP2_MAGIC) break;
        depth++;
    }
    *level = depth;
    return 0;
}

typedef struct proc_parent {
    uint32_t pid, ppid;
    bool traced;
} proc_parent;

static int by_pid(const void *a, const void *b)
{
    uint32_t x = ((const proc_parent *)a)->pid, y = ((const proc_parent *)b)->pid;
    return x < y ? -1 : x > y;
}

static proc_parent *find_proc(proc_parent *v, size_t n, uint32_t pid)
{
    proc_parent key = {.pid = pid};
    return bsearch(&key, v, n, sizeof *v, by_pid);
}

/* When de is a process's directory in /proc: its pid in *pid and the
 * start of its file `name` in buf (NUL-terminated, at most cap - 1 bytes),
 * and how many bytes that is; 0 otherwise (not a process, or gone). */
static size_t read_proc_file(const struct dirent *de, const char *name, char *buf, size_t cap, uint32_t *pid)
{
    char *end;
    unsigned long n = strtoul(de->d_name, &end, 10);
    if (*end || n == 0 || n > UINT32_MAX) return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%lu/%s", n, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t len = read(fd, buf, cap - 1);
    close(fd);
    if (len <= 0) return 0;
    buf[len] = 0;
    *pid = (uint32_t)n;
    return (size_t)len;
}

/* Every process in /proc with its parent, sorted by pid; NULL when /proc
 * cannot be read or out of memory. */
static proc_parent *read_proc_parents(size_t *n_out)
{
    DIR *d = opendir("/proc");
    if (!d) return NULL;
    size_t n = 0, cap = 256;
    proc_parent *v = malloc(cap * sizeof *v);
    struct dirent *de;
    while (v && (de = readdir(d))) {
        char buf[512];
        uint32_t pid;
        if (!read_proc_file(de, "stat", buf, sizeof buf, &pid)) continue;
        /* pid (comm) state ppid ...: comm may hold anything, so from the last ')' */
        char *paren = strrchr(buf, ')');
        unsigned long ppid;
        char state;
        if (!paren || sscanf(paren + 1, " %c %lu", &state, &ppid) != 2) continue;
        if (n == cap) {
            proc_parent *grown = realloc(v, 2 * cap * sizeof *v);
            if (!grown) {
                free(v);
                v = NULL;
                break;
            }
            v = grown;
            cap *= 2;
        }
        v[n++] = (proc_parent){.pid = pid, .ppid = (uint32_t)ppid};
    }
    closedir(d);
    if (v) qsort(v, n, sizeof *v, by_pid);
    *n_out = n;
    return v;
}

/* tgid into the kernel's traced set: the hash userspace reads back, then
 * its bit in the programs' traced_bits (the mapped .bss), which the
 * programs' filter asks; the word is shared with tt_fork's updates, hence
 * the atomic or. */
static int add_traced(struct socktap *skel, uint32_t tgid, char *err, size_t errlen)
{
    uint8_t one = 1;
    size_t words = sizeof skel->bss->traced_bits / sizeof skel->bss->traced_bits[0];
    if (tgid / 64 >= words) return tt_fail_line(err, errlen, "pid %u is past the kernel's pid limit", tgid);
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.traced_tgids), &tgid, &one, BPF_ANY) != 0)
        return tt_fail_line(err, errlen, "cannot add pid %u to the traced set: %s", tgid, strerror(errno));
    __atomic_fetch_or(&skel->bss->traced_bits[tgid / 64], (uint64_t)1 << (tgid % 64), __ATOMIC_SEQ_CST);
    return 0;
}

/* The TCP ports pid listens on (its sockets in LISTEN state, from
 * /proc/PID/fd and its network namespace's /proc/PID/net/tcp{,6}) go into
 * the kernel's accept_port_on (the sockets accepted on them say ACCEPT:
 * socktap_state.bpf.h) and, when ready instants are wanted, ready_port_on
 * (connections accepted on them are followed for ready instants from
 * their first byte, the first connection included): the programs' mapped
 * global data. Best effort: what cannot be read is skipped. */
static void seed_listen_ports(struct socktap__bss *bss, bool ready, uint32_t pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%u/fd", pid);
    DIR *d = opendir(path);
    if (!d) return;
    unsigned long inodes[1024];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < sizeof inodes / sizeof *inodes) {
        char link[64], target[64];
        snprintf(link, sizeof link, "/proc/%u/fd/%.16s", pid, de->d_name);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = 0;
        unsigned long ino;
        if (sscanf(target, "socket:[%lu]", &ino) == 1) inodes[n++] = ino;
    }
    closedir(d);
    if (!n) return;
    static const char *const tables[] = {"tcp", "tcp6"};
    for (size_t t = 0; t < 2; t++) {
        snprintf(path, sizeof path, "/proc/%u/net/%s", pid, tables[t]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char local[64];
            unsigned state;
            unsigned long ino;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %63s %*s %x %*s %*s %*s %*s %*s %lu", local, &state, &ino) != 3) continue;
            char *colon = strrchr(local, ':');
            if (state != 0x0A || !colon) continue;
            for (size_t i = 0; i < n; i++) {
                if (inodes[i] != ino) continue;
                uint16_t port = (uint16_t)strtoul(colon + 1, NULL, 16);
                bss->accept_port_on[port] = 1;
                if (ready) bss->ready_port_on[port] = 1;
                break;
            }
        }
        fclose(f);
    }
}

/* The listening ports of every process named comm now (its group
 * leader's name, as the kernel's --comm filter compares it), as
 * seed_listen_ports puts them. */
void tt_bpf_seed_comm_ports(struct socktap *skel, const char *comm)
{
    if (!skel->bss) return;
    DIR *d = opendir("/proc");
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char name[32];
        uint32_t pid;
        if (!read_proc_file(de, "comm", name, sizeof name, &pid)) continue;
        name[strcspn(name, "\n")] = 0;
        if (strcmp(name, comm) == 0) seed_listen_ports(skel->bss, skel->rodata->ready_wanted, pid);
    }
    closedir(d);
}

/* The processes of cgroup directory dir (its cgroup.procs) and of every
 * cgroup below it, depth levels down at most: their listening ports
 * seeded. */
static void seed_cgroup_dir(struct socktap *skel, const char *dir, int depth)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) < (int)sizeof path) {
        FILE *f = fopen(path, "r");
        if (f) {
            unsigned long pid;
            while (fscanf(f, "%lu", &pid) == 1)
                if (pid && pid <= UINT32_MAX) seed_listen_ports(skel->bss, skel->rodata->ready_wanted, (uint32_t)pid);
            fclose(f);
        }
    }
    if (depth <= 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) continue;
        seed_cgroup_dir(skel, path, depth - 1);
    }
    closedir(d);
}

void tt_bpf_seed_cgroup_ports(struct socktap *skel, const char *path)
{
    if (skel->bss) seed_cgroup_dir(skel, path, 64);
}

/* Put the requested processes and every descendant alive now into the
 * kernel's traced set, and their listening ports in accept_port_on (and,
 * with ready instants, ready_port_on). Returns how many went in, or -1 with err. */
int tt_bpf_seed_traced_tgids(struct socktap *skel, const tt_bpf_options *opt, char *err, size_t errlen)
{
    if (!skel->bss) return tt_fail_line(err, errlen, "the programs' global data is not mapped (--pid needs it)");
    size_t n_proc = 0;
    proc_parent *procs = read_proc_parents(&n_proc);
    if (!procs) {
        return tt_fail_line(err, errlen, "cannot read /proc to find the processes of --pid");
    }
    int added = 0;
    for (size_t i = 0; i <= opt->n_tgids; i++) {
        uint32_t pid = i < opt->n_tgids ? opt->tgids[i] : opt->tgid;
        if (!pid) continue;
        proc_parent *p = find_proc(procs, n_proc, pid);
        if (!p) {
            tt_fail_line(err, errlen, "no process with pid %u", pid);
            free(procs);
            return -1;
        }
        p->traced = true;
    }
    /* Descendants: mark the children of marked processes until nothing changes. */
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < n_proc; i++) {
            if (procs[i].traced) continue;
            proc_parent *parent = find_proc(procs, n_proc, procs[i].ppid);
            if (parent && parent->traced) procs[i].traced = grew = true;
        }
    }
    for (size_t i = 0; i < n_proc && added >= 0; i++) {
        if (!procs[i].traced) continue;
        added = add_traced(skel, procs[i].pid, err, errlen) < 0 ? -1 : added + 1;
        seed_listen_ports(skel->bss, skel->rodata->ready_wanted, procs[i].pid);
    }
    free(procs);
    return added;
}

#endif
