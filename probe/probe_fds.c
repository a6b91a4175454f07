/* probe_fds.c - part of libtokentap-probe.so (probe_internal.h): the
 * hooks that make, copy and end fds. A socket's role (client or server)
 * comes from connect and accept; dup and its kin copy a slot; close and
 * its kin end a tracked socket's stream with a CLOSE record. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe_internal.h"

static bool slot_in_use(const fd_slot *s)
{
    return s && (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_UNKNOWN || s->role != 0);
}

/* See probe_internal.h. A vfork child (sharing the parent's memory) leaves
 * the parent's table alone. */
void note_fd_gone(int fd, uint8_t call)
{
    fd_slot *s = slot_for(fd);
    if (!slot_in_use(s)) return;
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_TCP) {
        if (getpid() != owner_pid) return;
        record_control(s, fd, TT_PROBE_KIND_CLOSE, 0, call, TT_PROBE_LAYER_SOCKET, stamp_now());
    }
    slot_reset(fd, TT_PROBE_ROLE_UNKNOWN);
}

HOOK int close(int fd)
{
    if (!READY()) return (int)syscall(SYS_close, fd);
    if (ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_fd_gone(fd, TT_PROBE_CALL_CLOSE);
        *errno_p = e;
    }
    return real.close(fd);
}

HOOK int fclose(FILE *f)
{
    if (!READY()) {
        int (*direct)(FILE *) = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
        return direct ? direct(f) : EOF;
    }
    if (f && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_fd_gone(fileno(f), TT_PROBE_CALL_CLOSE);
        *errno_p = e;
    }
    return real.fclose(f);
}

/* Every fd in [first, last] forgotten (close_range, closefrom). */
static void note_range_gone(unsigned first, unsigned last)
{
    size_t high = __atomic_load_n(&fd_high, __ATOMIC_ACQUIRE);
    for (size_t fd = first; fd <= high && fd < fd_table_len && fd <= last; fd++)
        if (slot_in_use(slot_at(fd))) note_fd_gone((int)fd, TT_PROBE_CALL_CLOSE);
}

HOOK int close_range(unsigned first, unsigned last, int flags)
{
    if (!READY() || !real.close_range) return (int)syscall(SYS_close_range, first, last, flags);
    int r = real.close_range(first, last, flags);
    if (r == 0 && ACTIVE() && !(flags & CLOSE_RANGE_CLOEXEC)) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_range_gone(first, last);
        *errno_p = e;
    }
    return r;
}

HOOK void closefrom(int lowfd)
{
    if (!READY() || !real.closefrom) {
        syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0);
        return;
    }
    if (ACTIVE() && lowfd >= 0) {
        int *errno_p = errno_slot(), e = *errno_p;
        note_range_gone((unsigned)lowfd, ~0u);
        *errno_p = e;
    }
    real.closefrom(lowfd);
}

HOOK int connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
    if (!READY()) return (int)syscall(SYS_connect, fd, addr, alen);
    int r = real.connect(fd, addr, alen);
    if (ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        if (r == 0 || e == EINPROGRESS) slot_reset(fd, TT_PROBE_ROLE_CLIENT);
        *errno_p = e;
    }
    return r;
}

HOOK int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
    if (!READY()) return (int)syscall(SYS_accept4, fd, addr, alen, 0);
    int r = real.accept(fd, addr, alen);
    if (r >= 0 && ACTIVE()) slot_reset(r, TT_PROBE_ROLE_SERVER);
    return r;
}

HOOK int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    if (!READY()) return (int)syscall(SYS_accept4, fd, addr, alen, flags);
    int r = real.accept4(fd, addr, alen, flags);
    if (r >= 0 && ACTIVE()) slot_reset(r, TT_PROBE_ROLE_SERVER);
    return r;
}

/* A process making a TCP socket makes its ring now, before it can have
 * threads racing to record on it: a record made while another thread is
 * still making the ring is dropped (counted), never waited for. */
HOOK int socket(int domain, int type, int protocol)
{
    if (!READY()) return (int)syscall(SYS_socket, domain, type, protocol);
    int r = real.socket(domain, type, protocol);
    if (r >= 0 && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        slot_reset(r, TT_PROBE_ROLE_UNKNOWN);
        if ((domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM) ring_ready();
        *errno_p = e;
    }
    return r;
}

/* newfd now names what oldfd names: its slot becomes a copy. */
static void slot_copy(int oldfd, int newfd)
{
    fd_slot *from = slot_for(oldfd), *to = slot_for(newfd);
    if (!to) return;
    note_high(newfd);
    if (!from) {
        slot_reset(newfd, TT_PROBE_ROLE_UNKNOWN);
        return;
    }
    uint8_t state = __atomic_load_n(&from->state, __ATOMIC_ACQUIRE);
    __atomic_store_n(&to->state, SLOT_UNKNOWN, __ATOMIC_RELEASE);
    to->role = from->role;
    to->v6 = from->v6;
    to->lport = from->lport;
    to->rport = from->rport;
    to->sock_id = from->sock_id;
    memcpy(to->laddr, from->laddr, 16);
    memcpy(to->raddr, from->raddr, 16);
    __atomic_store_n(&to->lost[0], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&to->lost[1], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&to->state, state, __ATOMIC_RELEASE);
}

HOOK int dup(int fd)
{
    if (!READY()) return (int)syscall(SYS_dup, fd);
    int r = real.dup(fd);
    if (r >= 0 && ACTIVE()) slot_copy(fd, r);
    return r;
}

HOOK int dup2(int oldfd, int newfd)
{
    if (!READY()) return (int)syscall(SYS_dup3, oldfd, newfd, 0);
    if (oldfd != newfd && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        if (slot_in_use(slot_for(newfd)) && fcntl(oldfd, F_GETFD) >= 0) note_fd_gone(newfd, TT_PROBE_CALL_DUP2);
        *errno_p = e;
    }
    int r = real.dup2(oldfd, newfd);
    if (r >= 0 && oldfd != newfd && ACTIVE()) slot_copy(oldfd, newfd);
    return r;
}

HOOK int dup3(int oldfd, int newfd, int flags)
{
    if (!READY()) return (int)syscall(SYS_dup3, oldfd, newfd, flags);
    if (oldfd != newfd && ACTIVE()) {
        int *errno_p = errno_slot(), e = *errno_p;
        if (slot_in_use(slot_for(newfd)) && fcntl(oldfd, F_GETFD) >= 0) note_fd_gone(newfd, TT_PROBE_CALL_DUP2);
        *errno_p = e;
    }
    int r = real.dup3(oldfd, newfd, flags);
    if (r >= 0 && ACTIVE()) slot_copy(oldfd, newfd);
    return r;
}
