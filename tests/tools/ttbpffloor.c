/* ttbpffloor - attach eBPF programs that do nothing, for the floor rows of
 * tests/bench/bpf.sh: what a hook costs the system calls that pass it
 * before any program does work.
 *
 *   ttbpffloor exit|watch|sock
 *
 * exit:  sys_exit_read and sys_exit_write (classic syscall tracepoints,
 *        where watch took a read's and a write's data before the socket
 *        layer's hooks): one program per read or write.
 * sock:  tp_btf sock_recv_length and sock_send_length, the socket layer's
 *        return hooks, where watch takes a TCP read's and write's data:
 *        one program per socket read or write.
 * watch: those and tp_btf tcp_sendmsg_locked and sk_data_ready, every hook
 *        watch runs for a traced TCP write and read on a kernel that has
 *        them all: two programs per write or read of a loopback TCP
 *        ping-pong.
 * Prints "attached" on stderr once every program is attached, then waits
 * for SIGINT or SIGTERM. Needs root; exit 1 with a one-line reason when a
 * program does not load or attach, 2 on a bad argument. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bpffloor.skel.h"
#include "source/bpf_setup.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    bool exit_hooks = !strcmp(mode, "exit");
    bool stamp_hooks = !strcmp(mode, "watch"), sock_hooks = !strcmp(mode, "sock") || stamp_hooks;
    if (!exit_hooks && !sock_hooks) {
        fprintf(stderr, "usage: ttbpffloor exit|watch|sock\n");
        return 2;
    }
    char err[256];
    if (tt_bpf_check_tracefs(err, sizeof err) < 0) {
        fprintf(stderr, "ttbpffloor: %s\n", err);
        return 1;
    }
    libbpf_set_print(tt_bpf_quiet_libbpf);
    struct bpffloor *skel = bpffloor__open();
    if (!skel) {
        fprintf(stderr, "ttbpffloor: cannot open the BPF object\n");
        return 1;
    }
    bpf_program__set_autoload(skel->progs.floor_exit_read, exit_hooks);
    bpf_program__set_autoload(skel->progs.floor_exit_write, exit_hooks);
    bpf_program__set_autoload(skel->progs.floor_send_stamp, stamp_hooks);
    bpf_program__set_autoload(skel->progs.floor_data_ready, stamp_hooks);
    bpf_program__set_autoload(skel->progs.floor_sock_recv, sock_hooks);
    bpf_program__set_autoload(skel->progs.floor_sock_send, sock_hooks);
    int rc = bpffloor__load(skel);
    if (rc == 0) rc = bpffloor__attach(skel);
    if (rc != 0) {
        fprintf(stderr, "ttbpffloor: %s: the programs do not load or attach: %s\n", mode, strerror(-rc));
        bpffloor__destroy(skel);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "attached\n");
    while (!stop) pause();
    bpffloor__destroy(skel);
    return 0;
}
