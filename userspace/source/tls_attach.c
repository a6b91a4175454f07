/* tls_attach.c - uprobes on the TLS libraries of running processes (tls_attach.h). */
#include "source/tls_attach.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef TT_WITH_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "socktap.skel.h"
#endif

/* Where distributions put OpenSSL's libssl: covered even when no process
 * maps it yet, so that a client started after tokentap is traced. */
static const char *const system_libssl[] = {
    "/usr/lib/x86_64-linux-gnu/libssl.so.3",  "/usr/lib/x86_64-linux-gnu/libssl.so.1.1",
    "/usr/lib/aarch64-linux-gnu/libssl.so.3", "/usr/lib/aarch64-linux-gnu/libssl.so.1.1",
    "/usr/lib64/libssl.so.3",                 "/usr/lib64/libssl.so.1.1",
    "/usr/lib/libssl.so.3",                   "/usr/lib/libssl.so.1.1",
};

static bool is_libssl(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libssl.so", 9) == 0;
}

/* The library at path, added unless its file (device, inode) is already
 * there; NULL when it is, when it cannot be stat'ed, or when full. */
static tt_tls_lib *lib_add(tt_tls_attach *t, const char *path, uint32_t pid, bool executable)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;
    for (size_t i = 0; i < t->n_libs; i++)
        if (t->libs[i].dev == (uint64_t)st.st_dev && t->libs[i].ino == (uint64_t)st.st_ino) return NULL;
    for (size_t i = 0; executable && i < t->n_plain; i++)
        if (t->plain[i].dev == (uint64_t)st.st_dev && t->plain[i].ino == (uint64_t)st.st_ino) return NULL;
    if (t->n_libs == TT_TLS_MAX_LIBS) return NULL;
    tt_tls_lib *lib = &t->libs[t->n_libs++];
    memset(lib, 0, sizeof *lib);
    snprintf(lib->path, sizeof lib->path, "%s", path);
    lib->dev = (uint64_t)st.st_dev;
    lib->ino = (uint64_t)st.st_ino;
    lib->pid = pid;
    lib->executable = executable;
    return lib;
}

/* The libssl files process pid maps, added through /proc/PID/root.
 * Returns whether it maps one. */
static bool scan_process(tt_tls_attach *t, uint32_t pid)
{
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%u/maps", pid);
    FILE *f = fopen(maps, "r");
    if (!f) return false;
    bool found = false;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        /* address perms offset dev inode path */
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = 0;
        if (!is_libssl(path)) continue;
        found = true;
        char full[600];
        snprintf(full, sizeof full, "/proc/%u/root%s", pid, path);
        lib_add(t, full, pid, false);
    }
    fclose(f);
    if (!found) {
        /* OpenSSL linked into the executable, perhaps */
        char exe[64];
        snprintf(exe, sizeof exe, "/proc/%u/exe", pid);
        lib_add(t, exe, pid, true);
    }
    return found;
}

/* Whether process pid's name (its comm, as the kernel filter compares it) is comm. */
static bool comm_is(uint32_t pid, const char *comm)
{
    char path[64], name[32] = "";
    snprintf(path, sizeof path, "/proc/%u/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool got = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    return got && strcmp(name, comm) == 0;
}

/* The processes pids[0..n_pids), else every process (only those named
 * comm when comm is given: the others are not traced, and their
 * executables need not be parsed). */
static void scan_processes(tt_tls_attach *t, const uint32_t *pids, size_t n_pids, const char *comm)
{
    if (n_pids) {
        for (size_t i = 0; i < n_pids; i++) t->processes_seen += scan_process(t, pids[i]);
        return;
    }
    DIR *d = opendir("/proc");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        uint32_t pid = (uint32_t)strtoul(e->d_name, NULL, 10);
        if (comm && !comm_is(pid, comm)) continue;
        t->processes_seen += scan_process(t, pid);
    }
    closedir(d);
}

#ifdef TT_WITH_BPF

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture (Linux 5.3) */
#endif

/* Keep l, attached for process pid (> 0) or file-wide (pid <= 0). 0, or
 * -1 when out of memory (l is then the caller's). */
static int push_link(tt_tls_attach *t, struct bpf_link *l, int pid)
{
    if (t->n_links == t->cap_links) {
        size_t cap = t->cap_links ? t->cap_links * 2 : 32;
        struct tt_tls_link *v = realloc(t->links, cap * sizeof *v);
        if (!v) return -1;
        t->links = v;
        t->cap_links = cap;
    }
    t->links[t->n_links++] = (struct tt_tls_link){l, pid > 0 ? (uint32_t)pid : 0};
    return 0;
}

/* ---- letting links go: a thread of its own detaches them ----
 * Closing a uprobe link waits for the kernel (it unregisters the probe and
 * then waits for every task that may be running it: ~0.1 s a link here,
 * under a lock that attaching takes too), so it is not done on the
 * caller's loop: a process's 8 links would hold it for a second. */

struct tt_tls_releaser {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct bpf_link **queue; /* handed and not yet taken: queue[head..n) */
    size_t head, n, cap;
    bool stop;                  /* tt_tls_attach_free: end after the link in hand */
    _Atomic uint64_t detached;  /* links the thread has detached */
};

/* The thread: first gives up every capability of its own (closing a
 * descriptor needs none; watch promises its other threads hold nothing,
 * core/privileges.h), then detaches the oldest handed link, outside the
 * lock, until told to stop (what is still queued then is the stopper's). */
static void *releaser_main(void *arg)
{
    struct tt_tls_releaser *r = arg;
    struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    syscall(SYS_capset, &head, none); /* only ever less: cannot fail but for a bad call */
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->head == r->n) pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop) break;
        struct bpf_link *l = r->queue[r->head++];
        if (r->head == r->n) r->head = r->n = 0;
        pthread_mutex_unlock(&r->mu);
        bpf_link__destroy(l);
        atomic_fetch_add(&r->detached, 1);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* A started releasing thread, or NULL (out of memory, no thread): the
 * caller then detaches in its own thread. The thread blocks the standard
 * signals sent to the process (SIGINT, SIGTERM: the caller's handlers run
 * in the caller's threads), not those of a fault in it (a sanitizer's
 * report) nor the real-time ones, which core/privileges sends each thread. */
static struct tt_tls_releaser *releaser_start(void)
{
    struct tt_tls_releaser *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig = 1; sig < 32; sig++)
        if (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL && sig != SIGTRAP && sig != SIGABRT &&
            sig != SIGSYS)
            sigaddset(&block, sig);
    pthread_attr_t attr;
    bool attr_ok = pthread_attr_init(&attr) == 0;
    if (attr_ok) pthread_attr_setstacksize(&attr, 256u << 10);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int e = pthread_create(&r->thread, attr_ok ? &attr : NULL, releaser_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (attr_ok) pthread_attr_destroy(&attr);
    if (e != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r);
        return NULL;
    }
    return r;
}

/* l is let go: queued for the thread (started at the first), else
 * detached here. Counted either way. */
static void let_go(tt_tls_attach *t, struct bpf_link *l)
{
    t->links_let_go++;
    if (!t->releaser) t->releaser = releaser_start();
    struct tt_tls_releaser *r = t->releaser;
    if (r) {
        pthread_mutex_lock(&r->mu);
        if (r->n == r->cap && r->head) { /* room at the front: slide down */
            memmove(r->queue, r->queue + r->head, (r->n - r->head) * sizeof *r->queue);
            r->n -= r->head;
            r->head = 0;
        }
        bool queued = false;
        if (r->n < r->cap) {
            queued = true;
        } else {
            size_t cap = r->cap ? r->cap * 2 : 64;
            struct bpf_link **v = realloc(r->queue, cap * sizeof *v);
            if (v) {
                r->queue = v;
                r->cap = cap;
                queued = true;
            }
        }
        if (queued) {
            r->queue[r->n++] = l;
            pthread_cond_signal(&r->cv);
        }
        pthread_mutex_unlock(&r->mu);
        if (queued) return;
    }
    bpf_link__destroy(l);
    t->links_detached_here++;
}

/* Stop the thread (after the link in hand), then detach what it left. */
static void releaser_stop(tt_tls_attach *t)
{
    struct tt_tls_releaser *r = t->releaser;
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    for (size_t i = r->head; i < r->n; i++) bpf_link__destroy(r->queue[i]);
    t->links_detached_here += atomic_load(&r->detached); /* those left in the queue are not counted */
    t->links_let_go -= r->n - r->head;
    free(r->queue);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    t->releaser = NULL;
}

/* ---- the processes attached one by one (per_pid) ---- */

/* The index of pid in t->procs, n_procs when it has none. */
static size_t proc_find(const tt_tls_attach *t, uint32_t pid)
{
    size_t k = 0;
    while (k < t->n_procs && t->procs[k].pid != pid) k++;
    return k;
}

/* Whether the process p names has exited: its pidfd readable (a zombie
 * counts), or without one, its pid number gone. */
static bool proc_exited(const struct tt_tls_proc *p)
{
    if (p->pidfd >= 0) {
        struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};
        return poll(&pf, 1, 0) > 0;
    }
    return kill((pid_t)p->pid, 0) < 0 && errno == ESRCH;
}

/* t->procs[k] has exited: its links let go, its pairs and pidfd
 * forgotten; the last entry takes index k. */
static void release_proc(tt_tls_attach *t, size_t k)
{
    uint32_t pid = t->procs[k].pid;
    size_t kept = 0;
    for (size_t i = 0; i < t->n_links; i++) {
        if (t->links[i].pid == pid) let_go(t, t->links[i].link);
        else t->links[kept++] = t->links[i];
    }
    t->n_links = kept;
    kept = 0;
    for (size_t i = 0; i < t->n_pairs; i++)
        if (t->pairs[i].pid != pid) t->pairs[kept++] = t->pairs[i];
    t->n_pairs = kept;
    if (t->procs[k].pidfd >= 0) close(t->procs[k].pidfd);
    t->procs[k] = t->procs[--t->n_procs];
    t->processes_released++;
}

/* pid's entry in t->procs, made with a pidfd when new; one whose process
 * exited (the pid number now another's) is released first. Returns 1,
 * 0 when the process is already gone, -1 when out of memory. */
static int proc_enter(tt_tls_attach *t, uint32_t pid)
{
    size_t k = proc_find(t, pid);
    if (k < t->n_procs && !proc_exited(&t->procs[k])) return 1;
    if (k < t->n_procs) release_proc(t, k);
    if (t->n_procs == t->cap_procs) {
        size_t cap = t->cap_procs ? t->cap_procs * 2 : 16;
        struct tt_tls_proc *v = realloc(t->procs, cap * sizeof *v);
        if (!v) return -1;
        t->procs = v;
        t->cap_procs = cap;
    }
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0 && errno == ESRCH) return 0;
    t->procs[t->n_procs++] = (struct tt_tls_proc){pid, fd};
    return 1;
}

static const char *const ssl_functions[4] = {"SSL_write", "SSL_write_ex", "SSL_read", "SSL_read_ex"};

/* The file offsets of the four functions in the ELF at lib->path, as
 * uprobes want them (0: absent), found once per library: attaching by
 * offset is then a system call, not an ELF parse per probe, so a process
 * that just forked is attached before it makes its first TLS call. */
static void find_offsets(tt_tls_lib *lib)
{
    lib->offsets_found = true;
    if (elf_version(EV_CURRENT) == EV_NONE) return;
    int fd = open(lib->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t nph = 0;
    if (!e || elf_getphdrnum(e, &nph) != 0) goto out;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize) continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value) continue;
            const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
            for (int k = 0; name && k < 4; k++) {
                size_t n = strlen(ssl_functions[k]);
                if (lib->offset[k] || strncmp(name, ssl_functions[k], n) || (name[n] && name[n] != '@')) continue;
                /* the address to a file offset, through the loaded segment holding it */
                for (size_t p = 0; p < nph; p++) {
                    GElf_Phdr ph;
                    if (!gelf_getphdr(e, (int)p, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                    if (sym.st_value >= ph.p_vaddr && sym.st_value < ph.p_vaddr + ph.p_memsz)
                        lib->offset[k] = sym.st_value - ph.p_vaddr + ph.p_offset;
                }
            }
        }
    }
    /* an executable without OpenSSL: a Go program, perhaps */
    if (lib->executable && !lib->offset[0] && !lib->offset[2]) {
        int go = tt_tls_go_find(fd, &lib->go_probes, lib->note, sizeof lib->note);
        lib->go = go != 0;
        lib->go_probed = go > 0;
    }
out:
    if (e) elf_end(e);
    close(fd);
}

/* Go's crypto/tls in one executable (tls_go.h): Read's returns first, so
 * that no entry waits for a return not attached. Returns how many of the
 * two functions are attached whole, -1 when out of memory. */
static int attach_go(struct socktap *skel, tt_tls_attach *t, const tt_tls_go_probes *go, const char *path, int pid)
{
    LIBBPF_OPTS(bpf_uprobe_opts, opts);
    size_t first = t->n_links;
    bool read_ok = true;
    for (size_t i = 0; i < go->n_read_returns && read_ok; i++) {
        struct bpf_link *l =
            bpf_program__attach_uprobe_opts(skel->progs.tt_go_tls_read_return, pid, path, go->read_returns[i], &opts);
        if (!l || push_link(t, l, pid) < 0) {
            if (l) bpf_link__destroy(l);
            read_ok = false;
        }
    }
    struct bpf_link *l = read_ok ? bpf_program__attach_uprobe_opts(skel->progs.tt_go_tls_read, pid, path, go->read_at, &opts)
                                 : NULL;
    if (!l || push_link(t, l, pid) < 0) {
        /* a Read without every return would leave its entries behind: none of it */
        if (l) bpf_link__destroy(l);
        for (size_t i = first; i < t->n_links; i++) bpf_link__destroy(t->links[i].link);
        t->n_links = first;
        read_ok = false;
    }
    l = bpf_program__attach_uprobe_opts(skel->progs.tt_go_tls_write, pid, path, go->write_at, &opts);
    bool write_ok = l != NULL;
    if (l && push_link(t, l, pid) < 0) {
        bpf_link__destroy(l);
        return -1;
    }
    return read_ok + write_ok;
}

/* The four functions of one library: the return first, so that an entry
 * never waits for a return that was not attached. */
static int attach_library(struct socktap *skel, tt_tls_attach *t, tt_tls_lib *lib, int pid)
{
    /* an executable is reached through the attached process's own link (the
     * process it was found in may be gone) */
    char exe[64];
    const char *path = lib->path;
    if (lib->executable && pid > 0) {
        snprintf(exe, sizeof exe, "/proc/%d/exe", pid);
        path = exe;
    }
    struct bpf_program *entry[4] = {skel->progs.tt_ssl_write, skel->progs.tt_ssl_write_ex, skel->progs.tt_ssl_read,
                                    skel->progs.tt_ssl_read_ex};
    if (!lib->offsets_found) find_offsets(lib);
    if (lib->go) {
        int n = lib->go_probed ? attach_go(skel, t, &lib->go_probes, path, pid) : 0;
        if (n < 0) return -1;
        if ((unsigned)n > lib->functions) lib->functions = (unsigned)n;
        if (n == 2 && !lib->counted) {
            t->attached++;
            lib->counted = true;
            snprintf(lib->note, sizeof lib->note, "Go %s crypto/tls", lib->go_probes.version);
        }
        return 0;
    }
    bool got[4] = {false};
    for (int k = 0; k < 4; k++) {
        if (!lib->offset[k]) continue;
        LIBBPF_OPTS(bpf_uprobe_opts, ret_opts, .retprobe = true);
        struct bpf_link *r =
            bpf_program__attach_uprobe_opts(skel->progs.tt_ssl_return, pid, path, lib->offset[k], &ret_opts);
        if (!r) continue;
        LIBBPF_OPTS(bpf_uprobe_opts, entry_opts);
        struct bpf_link *e = bpf_program__attach_uprobe_opts(entry[k], pid, path, lib->offset[k], &entry_opts);
        if (!e) {
            bpf_link__destroy(r);
            continue;
        }
        if (push_link(t, r, pid) < 0) {
            bpf_link__destroy(e);
            bpf_link__destroy(r);
            return -1;
        }
        if (push_link(t, e, pid) < 0) { /* r is kept in links: freed with them */
            bpf_link__destroy(e);
            return -1;
        }
        got[k] = true;
    }
    unsigned n = got[0] + got[1] + got[2] + got[3];
    if (n > lib->functions) lib->functions = n;
    if (got[0] && got[2]) {
        if (!lib->counted) t->attached++;
        lib->counted = true;
        lib->note[0] = 0;
    } else if (!lib->counted) {
        snprintf(lib->note, sizeof lib->note, "no SSL_read and SSL_write symbols (stripped, or not OpenSSL)");
    }
    return 0;
}

/* The known libraries process pid maps (by inode, from one read of
 * /proc/PID/maps) or runs as its executable: bit i for t->libs[i]. */
static uint32_t libs_of_process(const tt_tls_attach *t, uint32_t pid)
{
    _Static_assert(TT_TLS_MAX_LIBS <= 32, "a bit per library");
    uint32_t mask = 0;
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%u/maps", pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long ino = 0;
        if (sscanf(line, "%*s %*s %*s %*s %lu", &ino) != 1 || !ino) continue;
        for (size_t i = 0; i < t->n_libs; i++)
            if (t->libs[i].ino == ino) mask |= 1u << i;
    }
    if (f) fclose(f);
    struct stat st;
    snprintf(path, sizeof path, "/proc/%u/exe", pid);
    if (stat(path, &st) != 0) return mask;
    for (size_t i = 0; i < t->n_libs; i++)
        if (t->libs[i].executable && (uint64_t)st.st_ino == t->libs[i].ino && (uint64_t)st.st_dev == t->libs[i].dev)
            mask |= 1u << i;
    return mask;
}

/* Per process (a --pid list), once each: every shared library known,
 * whether the process maps it yet or not (the kernel sets the breakpoints
 * when it maps it: a child that execs a client is covered from its first
 * call), and an executable when the process runs it. */
static int attach_for_pid(struct socktap *skel, tt_tls_attach *t, uint32_t pid)
{
    int entered = proc_enter(t, pid);
    if (entered <= 0) return entered;
    uint32_t mapped = libs_of_process(t, pid);
    for (size_t i = 0; i < t->n_libs; i++) {
        tt_tls_lib *lib = &t->libs[i];
        bool done = false;
        for (size_t k = 0; k < t->n_pairs && !done; k++) done = t->pairs[k].lib == i && t->pairs[k].pid == pid;
        if (done || (lib->executable && !(mapped & (1u << i)))) continue;
        if (t->n_pairs == t->cap_pairs) {
            size_t cap = t->cap_pairs ? t->cap_pairs * 2 : 16;
            struct tt_tls_pair *v = realloc(t->pairs, cap * sizeof *v);
            if (!v) return -1;
            t->pairs = v;
            t->cap_pairs = cap;
        }
        t->pairs[t->n_pairs++] = (struct tt_tls_pair){(uint32_t)i, pid};
        if (attach_library(skel, t, lib, (int)pid) < 0) return -1;
    }
    return 0;
}

/* A thread's id names its process's memory: nothing of its own to attach. */
static bool is_process(uint32_t pid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%u/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    unsigned tgid = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Tgid: %u", &tgid) == 1) break;
    fclose(f);
    return tgid == pid;
}

/* Executables without the functions are not worth a word: most have none.
 * Drops them from the list (a Go program that could not be probed stays:
 * its note says why). */
static void drop_plain_executables(tt_tls_attach *t)
{
    size_t k = 0, new_index[TT_TLS_MAX_LIBS];
    for (size_t i = 0; i < t->n_libs; i++) {
        if (!t->libs[i].executable || t->libs[i].functions || t->libs[i].go) {
            new_index[i] = k;
            t->libs[k++] = t->libs[i];
            continue;
        }
        new_index[i] = SIZE_MAX;
        t->plain[t->plain_next].dev = t->libs[i].dev;
        t->plain[t->plain_next].ino = t->libs[i].ino;
        t->plain_next = (t->plain_next + 1) % TT_TLS_MAX_PLAIN;
        if (t->n_plain < TT_TLS_MAX_PLAIN) t->n_plain++;
    }
    t->n_libs = k;
    /* the (library, process) pairs follow their library */
    size_t kept = 0;
    for (size_t i = 0; i < t->n_pairs; i++)
        if (new_index[t->pairs[i].lib] != SIZE_MAX)
            t->pairs[kept++] = (struct tt_tls_pair){(uint32_t)new_index[t->pairs[i].lib], t->pairs[i].pid};
    t->n_pairs = kept;
}

int tt_tls_attach_libraries(struct socktap *skel, const uint32_t *pids, size_t n_pids, const char *comm,
                            tt_tls_attach *t)
{
    memset(t, 0, sizeof *t);
    t->per_pid = n_pids > 0;
    scan_processes(t, pids, n_pids, comm);
    for (size_t i = 0; i < sizeof system_libssl / sizeof *system_libssl; i++) lib_add(t, system_libssl[i], 0, false);
    if (t->per_pid) {
        for (size_t i = 0; i < n_pids; i++)
            if (is_process(pids[i]) && attach_for_pid(skel, t, pids[i]) < 0) return -1;
    } else {
        for (size_t i = 0; i < t->n_libs; i++)
            if (attach_library(skel, t, &t->libs[i], -1) < 0) return -1;
    }
    for (size_t i = 0; i < n_pids; i++) {
        if (!is_process(pids[i])) continue;
        uint32_t mapped = libs_of_process(t, pids[i]);
        bool covered = false;
        for (size_t k = 0; k < t->n_libs && !covered; k++) covered = t->libs[k].counted && (mapped & (1u << k));
        if (!covered && t->n_uncovered < TT_TLS_MAX_UNCOVERED) t->uncovered[t->n_uncovered++] = pids[i];
    }
    drop_plain_executables(t);
    return (int)t->attached;
}

/* Whether the kernel traces process pid now (its traced_tgids entry goes
 * when it exits). */
static bool traced_now(struct socktap *skel, uint32_t pid)
{
    uint8_t one;
    return bpf_map_lookup_elem(bpf_map__fd(skel->maps.traced_tgids), &pid, &one) == 0;
}

int tt_tls_attach_process(struct socktap *skel, tt_tls_attach *t, uint32_t pid)
{
    if (!is_process(pid) || (t->per_pid && !traced_now(skel, pid))) return 0;
    size_t before = t->n_libs, attached = t->attached;
    t->processes_seen += scan_process(t, pid);
    if (t->per_pid) {
        if (attach_for_pid(skel, t, pid) < 0) return -1;
    } else {
        for (size_t i = before; i < t->n_libs; i++)
            if (attach_library(skel, t, &t->libs[i], -1) < 0) return -1;
    }
    drop_plain_executables(t);
    return (int)(t->attached - attached);
}

size_t tt_tls_release_exited(tt_tls_attach *t)
{
    size_t n = t->n_procs, released = 0;
    if (!n) return 0;
    /* one poll() over every pidfd; entry by entry when it cannot be had */
    struct pollfd *pf = malloc(n * sizeof *pf);
    if (pf) {
        for (size_t k = 0; k < n; k++) pf[k] = (struct pollfd){.fd = t->procs[k].pidfd, .events = POLLIN};
        if (poll(pf, (nfds_t)n, 0) < 0) {
            free(pf);
            pf = NULL;
        }
    }
    /* from the last: a release moves the last entry into its place */
    for (size_t k = n; k-- > 0;) {
        bool gone = pf && t->procs[k].pidfd >= 0 ? (pf[k].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0
                                                 : proc_exited(&t->procs[k]);
        if (!gone) continue;
        release_proc(t, k);
        released++;
    }
    free(pf);
    return released;
}

uint64_t tt_tls_links_released(const tt_tls_attach *t)
{
    return t->links_detached_here + (t->releaser ? atomic_load(&t->releaser->detached) : 0);
}

uint64_t tt_tls_links_held(const tt_tls_attach *t)
{
    return t->n_links + (t->links_let_go - tt_tls_links_released(t));
}

void tt_tls_attach_free(tt_tls_attach *t)
{
    if (!t) return;
    releaser_stop(t);
    for (size_t i = 0; i < t->n_links; i++) bpf_link__destroy(t->links[i].link);
    free(t->links);
    t->links = NULL;
    t->n_links = t->cap_links = 0;
    free(t->pairs);
    t->pairs = NULL;
    t->n_pairs = t->cap_pairs = 0;
    for (size_t k = 0; k < t->n_procs; k++)
        if (t->procs[k].pidfd >= 0) close(t->procs[k].pidfd);
    free(t->procs);
    t->procs = NULL;
    t->n_procs = t->cap_procs = 0;
}

#else

int tt_tls_attach_libraries(struct socktap *skel, const uint32_t *pids, size_t n_pids, const char *comm,
                            tt_tls_attach *t)
{
    memset(t, 0, sizeof *t);
    scan_processes(t, pids, n_pids, comm);
    return 0;
}

int tt_tls_attach_process(struct socktap *skel, tt_tls_attach *t, uint32_t pid)
{
    t->processes_seen += scan_process(t, pid);
    return 0;
}

size_t tt_tls_release_exited(tt_tls_attach *t) { return 0; }

uint64_t tt_tls_links_released(const tt_tls_attach *t) { return 0; }

uint64_t tt_tls_links_held(const tt_tls_attach *t) { return 0; }

void tt_tls_attach_free(tt_tls_attach *t)
{
    if (!t) return;
    free(t->links);
    free(t->pairs);
    free(t->procs);
}

#endif

const char *tt_tls_attach_note(const tt_tls_attach *t, char *buf, size_t cap)
{
    if (!t->n_libs) {
        snprintf(buf, cap, "no TLS library attached: no libssl found");
        return buf;
    }
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, t->attached ? "TLS plaintext from %zu librar%s (" : "no TLS library attached (",
                             t->attached, t->attached == 1 ? "y" : "ies");
    for (size_t i = 0; i < t->n_libs && used < cap; i++) {
        const tt_tls_lib *lib = &t->libs[i];
        used += (size_t)snprintf(buf + used, cap - used, "%s%s%s%s", i ? ", " : "", lib->path,
                                 lib->note[0] ? ": " : "", lib->note);
    }
    if (used < cap) used += (size_t)snprintf(buf + used, cap - used, ")");
    for (size_t i = 0; i < t->n_uncovered && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%u", i ? "," : "; no TLS library in pid ",
                                 t->uncovered[i]);
    return buf;
}
