/* tls_attach.c - uprobes on the TLS libraries of running processes (tls_attach.h). */
#include "source/tls_attach.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef TT_WITH_BPF
#include <bpf/libbpf.h>

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

static void scan_processes(tt_tls_attach *t, const uint32_t *pids, size_t n_pids)
{
    if (n_pids) {
        for (size_t i = 0; i < n_pids; i++) t->processes_seen += scan_process(t, pids[i]);
        return;
    }
    DIR *d = opendir("/proc");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        t->processes_seen += scan_process(t, (uint32_t)strtoul(e->d_name, NULL, 10));
    }
    closedir(d);
}

#ifdef TT_WITH_BPF

static int push_link(tt_tls_attach *t, struct bpf_link *l)
{
    if (t->n_links == t->cap_links) {
        size_t cap = t->cap_links ? t->cap_links * 2 : 32;
        void **v = realloc(t->links, cap * sizeof *v);
        if (!v) return -1;
        t->links = v;
        t->cap_links = cap;
    }
    t->links[t->n_links++] = l;
    return 0;
}

/* The four functions of one library: the return first, so that an entry
 * never waits for a return that was not attached. */
static int attach_library(struct socktap *skel, tt_tls_attach *t, tt_tls_lib *lib)
{
    const char *const fn[4] = {"SSL_write", "SSL_write_ex", "SSL_read", "SSL_read_ex"};
    struct bpf_program *entry[4] = {skel->progs.tt_ssl_write, skel->progs.tt_ssl_write_ex, skel->progs.tt_ssl_read,
                                    skel->progs.tt_ssl_read_ex};
    bool got[4] = {false};
    for (int k = 0; k < 4; k++) {
        LIBBPF_OPTS(bpf_uprobe_opts, ret_opts, .func_name = fn[k], .retprobe = true);
        struct bpf_link *r = bpf_program__attach_uprobe_opts(skel->progs.tt_ssl_return, -1, lib->path, 0, &ret_opts);
        if (!r) continue;
        LIBBPF_OPTS(bpf_uprobe_opts, entry_opts, .func_name = fn[k]);
        struct bpf_link *e = bpf_program__attach_uprobe_opts(entry[k], -1, lib->path, 0, &entry_opts);
        if (!e) {
            bpf_link__destroy(r);
            continue;
        }
        if (push_link(t, r) < 0) {
            bpf_link__destroy(e);
            bpf_link__destroy(r);
            return -1;
        }
        if (push_link(t, e) < 0) { /* r is kept in links: freed with them */
            bpf_link__destroy(e);
            return -1;
        }
        got[k] = true;
        lib->functions++;
    }
    if (got[0] && got[2]) {
        t->attached++;
    } else {
        snprintf(lib->note, sizeof lib->note, "no SSL_read and SSL_write symbols (stripped, or not OpenSSL)");
    }
    return 0;
}

/* Whether a library attached in full was found in process pid. */
static bool pid_covered(const tt_tls_attach *t, uint32_t pid)
{
    for (size_t i = 0; i < t->n_libs; i++)
        if (t->libs[i].pid == pid && !t->libs[i].note[0] && t->libs[i].functions) return true;
    return false;
}

/* Executables without the functions are not worth a word: most have none.
 * Drops them from the list. */
static void drop_plain_executables(tt_tls_attach *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_libs; i++) {
        if (!t->libs[i].executable || t->libs[i].functions) {
            t->libs[k++] = t->libs[i];
            continue;
        }
        t->plain[t->plain_next].dev = t->libs[i].dev;
        t->plain[t->plain_next].ino = t->libs[i].ino;
        t->plain_next = (t->plain_next + 1) % TT_TLS_MAX_PLAIN;
        if (t->n_plain < TT_TLS_MAX_PLAIN) t->n_plain++;
    }
    t->n_libs = k;
}

int tt_tls_attach_libraries(struct socktap *skel, const uint32_t *pids, size_t n_pids, tt_tls_attach *t)
{
    memset(t, 0, sizeof *t);
    scan_processes(t, pids, n_pids);
    for (size_t i = 0; i < sizeof system_libssl / sizeof *system_libssl; i++) lib_add(t, system_libssl[i], 0, false);
    for (size_t i = 0; i < t->n_libs; i++)
        if (attach_library(skel, t, &t->libs[i]) < 0) return -1;
    for (size_t i = 0; i < n_pids; i++)
        if (!pid_covered(t, pids[i]) && t->n_uncovered < TT_TLS_MAX_UNCOVERED) {
            /* a library found in another process may still be this one's: by inode */
            bool shares = false;
            char maps[64];
            snprintf(maps, sizeof maps, "/proc/%u/maps", pids[i]);
            FILE *f = fopen(maps, "r");
            char line[1024];
            while (f && !shares && fgets(line, sizeof line, f)) {
                unsigned long ino = 0;
                if (sscanf(line, "%*s %*s %*s %*s %lu", &ino) != 1 || !ino) continue;
                for (size_t k = 0; k < t->n_libs && !shares; k++)
                    shares = t->libs[k].ino == ino && t->libs[k].functions && !t->libs[k].note[0];
            }
            if (f) fclose(f);
            if (!shares) t->uncovered[t->n_uncovered++] = pids[i];
        }
    drop_plain_executables(t);
    return (int)t->attached;
}

int tt_tls_attach_process(struct socktap *skel, tt_tls_attach *t, uint32_t pid)
{
    size_t before = t->n_libs, attached = t->attached;
    t->processes_seen += scan_process(t, pid);
    for (size_t i = before; i < t->n_libs; i++)
        if (attach_library(skel, t, &t->libs[i]) < 0) return -1;
    drop_plain_executables(t);
    return (int)(t->attached - attached);
}

void tt_tls_attach_free(tt_tls_attach *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n_links; i++) bpf_link__destroy(t->links[i]);
    free(t->links);
    t->links = NULL;
    t->n_links = t->cap_links = 0;
}

#else

int tt_tls_attach_libraries(struct socktap *skel, const uint32_t *pids, size_t n_pids, tt_tls_attach *t)
{
    memset(t, 0, sizeof *t);
    scan_processes(t, pids, n_pids);
    return 0;
}

int tt_tls_attach_process(struct socktap *skel, tt_tls_attach *t, uint32_t pid)
{
    t->processes_seen += scan_process(t, pid);
    return 0;
}

void tt_tls_attach_free(tt_tls_attach *t)
{
    if (t) free(t->links);
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
