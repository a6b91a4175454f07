/* test_privileges.c - core/privileges: capability names and lists; which
 * capabilities a running watch keeps (TLS followed or not, old and new
 * kernels, unprivileged eBPF on or off); kernel releases compared; the
 * credentials of a /proc status file read (and malformed ones refused);
 * a thread's state judged against the promise, each way it can miss;
 * users looked up by name and by uid. As root, the drop itself in a child
 * process with a second thread: both threads end as nobody with only the
 * kept capability, no_new_privs set; without CAP_SETPCAP, the bounding
 * set left as it was and said so; not as root, the switch of user
 * refused with a one-line reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <linux/capability.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/privileges.h"

static void test_cap_names(void **state)
{
    char buf[256], tmp[16];
    assert_string_equal(tt_cap_name(CAP_SYS_PTRACE, tmp, sizeof tmp), "cap_sys_ptrace");
    assert_string_equal(tt_cap_name(CAP_CHOWN, tmp, sizeof tmp), "cap_chown");
    assert_string_equal(tt_cap_name(CAP_CHECKPOINT_RESTORE, tmp, sizeof tmp), "cap_checkpoint_restore");
    assert_string_equal(tt_cap_name(45, tmp, sizeof tmp), "cap_45");
    assert_string_equal(tt_caps_format(0, buf, sizeof buf), "none");
    assert_string_equal(tt_caps_format(TT_CAP_BIT(CAP_BPF) | TT_CAP_BIT(CAP_DAC_READ_SEARCH), buf, sizeof buf),
                        "cap_dac_read_search,cap_bpf");
    assert_string_equal(tt_caps_format(TT_CAP_BIT(63), buf, sizeof buf), "cap_63");
    /* a short buffer: cut, still terminated */
    char small[12];
    tt_caps_format(TT_CAP_BIT(CAP_SYS_ADMIN) | TT_CAP_BIT(CAP_SYS_PTRACE), small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, "cap_sys_ptr", sizeof small);
}

static void test_kernel_release(void **state)
{
    assert_true(tt_priv_kernel_at_least("6.5.0", 6, 5));
    assert_true(tt_priv_kernel_at_least("6.18.44-fc-v1147", 6, 5));
    assert_true(tt_priv_kernel_at_least("7.0-rc1", 6, 5));
    assert_false(tt_priv_kernel_at_least("6.4.16", 6, 5));
    assert_false(tt_priv_kernel_at_least("5.15.0-91-generic", 6, 5));
    assert_false(tt_priv_kernel_at_least("6", 6, 5));
    assert_false(tt_priv_kernel_at_least("linux", 6, 5));
    assert_false(tt_priv_kernel_at_least(NULL, 6, 5));
}

static void test_watch_needs(void **state)
{
    const tt_caps tls = TT_CAP_BIT(CAP_SYS_ADMIN) | TT_CAP_BIT(CAP_SYS_PTRACE) | TT_CAP_BIT(CAP_DAC_READ_SEARCH);
    /* following TLS: the same three on every kernel (CAP_SYS_ADMIN passes the CAP_BPF checks) */
    assert_true(tt_priv_watch_needs(true, "6.18.44", 2) == tls);
    assert_true(tt_priv_watch_needs(true, "5.15.0", 2) == tls);
    assert_true(tt_priv_watch_needs(true, "5.15.0", 0) == tls);
    /* not following TLS: nothing on a recent kernel, whatever the sysctl */
    assert_true(tt_priv_watch_needs(false, "6.18.44", 2) == 0);
    assert_true(tt_priv_watch_needs(false, "6.5.0", 1) == 0);
    /* an old kernel refuses map lookups without CAP_BPF, unless unprivileged eBPF is allowed */
    assert_true(tt_priv_watch_needs(false, "6.4.16", 2) == TT_CAP_BIT(CAP_BPF));
    assert_true(tt_priv_watch_needs(false, "5.15.0-91-generic", 1) == TT_CAP_BIT(CAP_BPF));
    assert_true(tt_priv_watch_needs(false, "5.15.0-91-generic", 0) == 0);
    /* an unknown kernel counts as old */
    assert_true(tt_priv_watch_needs(false, NULL, 2) == TT_CAP_BIT(CAP_BPF));
    assert_true(tt_priv_watch_needs(false, "?", 2) == TT_CAP_BIT(CAP_BPF));
}

static const char status_text[] = "Name:\ttokentap\n"
                                  "Umask:\t0022\n"
                                  "State:\tS (sleeping)\n"
                                  "Tgid:\t4242\n"
                                  "Uid:\t65534\t65534\t65534\t65534\n"
                                  "Gid:\t65534\t65534\t65534\t65534\n"
                                  "FDSize:\t128\n"
                                  "Groups:\t65534 \n"
                                  "CapInh:\t0000000000000000\n"
                                  "CapPrm:\t0000000000280004\n"
                                  "CapEff:\t0000000000280004\n"
                                  "CapBnd:\t0000000000280004\n"
                                  "CapAmb:\t0000000000000000\n"
                                  "NoNewPrivs:\t1\n"
                                  "Seccomp:\t0\n";

static void test_parse_status(void **state)
{
    tt_priv_state s;
    assert_true(tt_priv_parse_status(status_text, &s));
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s.uid[i], 65534);
        assert_int_equal(s.gid[i], 65534);
    }
    assert_int_equal(s.n_groups, 1);
    assert_int_equal(s.first_group, 65534);
    assert_true(s.permitted == 0x280004 && s.effective == 0x280004 && s.bounding == 0x280004);
    assert_true(s.inheritable == 0 && s.ambient == 0);
    assert_true(s.no_new_privs);

    /* root with every capability, two groups, an old kernel's status (no CapAmb, no NoNewPrivs) */
    const char *old = "Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0 4 \nCapInh:\t0000000000000000\n"
                      "CapPrm:\t0000003fffffffff\nCapEff:\t0000003fffffffff\nCapBnd:\t0000003fffffffff\n";
    assert_true(tt_priv_parse_status(old, &s));
    assert_int_equal(s.n_groups, 2);
    assert_int_equal(s.first_group, 0);
    assert_true(s.permitted == 0x3fffffffffull && s.ambient == 0 && !s.no_new_privs);
    /* no supplementary group at all */
    const char *nogroups = "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\n";
    char buf[512];
    snprintf(buf, sizeof buf, "Name:\tx\n%s", nogroups);
    assert_true(tt_priv_parse_status(buf, &s));
    assert_int_equal(s.n_groups, 0);

    /* refused: a field missing, an id short, hex that is not, a bad flag */
    char bad[sizeof status_text + 16];
    const char *missing[] = {"\nUid:", "\nGid:", "\nGroups:", "\nCapInh:", "\nCapPrm:", "\nCapEff:", "\nCapBnd:"};
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++) {
        memcpy(bad, status_text, sizeof status_text);
        char *at = strstr(bad, missing[i]);
        assert_non_null(at);
        at[1] = 'X'; /* renamed: no longer found */
        assert_false(tt_priv_parse_status(bad, &s));
    }
    assert_false(tt_priv_parse_status("Name:\tx\nUid:\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\n"
                                      "CapEff:\t0\nCapBnd:\t0\n",
                                      &s));
    assert_false(tt_priv_parse_status("Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\t0\nCapPrm:\tzz\n"
                                      "CapEff:\t0\nCapBnd:\t0\n",
                                      &s));
    assert_false(tt_priv_parse_status("Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\n"
                                      "CapEff:\t0\nCapBnd:\t0\nNoNewPrivs:\t2\n",
                                      &s));
}

static void test_conforms(void **state)
{
    const tt_caps keep = TT_CAP_BIT(CAP_SYS_ADMIN) | TT_CAP_BIT(CAP_SYS_PTRACE) | TT_CAP_BIT(CAP_DAC_READ_SEARCH);
    tt_priv_user nobody = {.name = "nobody", .uid = 65534, .gid = 65534};
    tt_priv_state good, s;
    char why[128];
    assert_true(tt_priv_parse_status(status_text, &good));
    assert_true(tt_priv_state_conforms(&good, keep, keep, &nobody, why, sizeof why));
    assert_true(tt_priv_state_conforms(&good, keep, keep, NULL, why, sizeof why));
    /* fewer capabilities than kept is fine (a process that lacked one) */
    s = good;
    s.permitted = s.effective = TT_CAP_BIT(CAP_SYS_PTRACE);
    s.bounding = TT_CAP_BIT(CAP_SYS_PTRACE);
    assert_true(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));

    s = good;
    s.no_new_privs = false;
    assert_false(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));
    assert_string_equal(why, "no_new_privs is not set");
    s = good;
    s.permitted |= TT_CAP_BIT(CAP_SETUID);
    assert_false(tt_priv_state_conforms(&s, keep, keep, NULL, why, sizeof why));
    assert_string_equal(why, "CapPrm has cap_setuid");
    s = good;
    s.effective |= TT_CAP_BIT(CAP_NET_ADMIN);
    assert_false(tt_priv_state_conforms(&s, keep, keep, NULL, why, sizeof why));
    assert_string_equal(why, "CapEff has cap_net_admin");
    s = good;
    s.bounding |= TT_CAP_BIT(CAP_SYS_MODULE) | TT_CAP_BIT(CAP_BPF);
    assert_false(tt_priv_state_conforms(&s, keep, keep, NULL, why, sizeof why));
    assert_string_equal(why, "CapBnd has cap_sys_module");
    /* a bounding set left as it was (no CAP_SETPCAP): judged against what it was */
    assert_true(tt_priv_state_conforms(&s, keep, s.bounding, NULL, why, sizeof why));
    assert_false(tt_priv_state_conforms(&s, keep, keep | TT_CAP_BIT(CAP_BPF), NULL, why, sizeof why));
    assert_string_equal(why, "CapBnd has cap_sys_module");
    s = good;
    s.inheritable = TT_CAP_BIT(CAP_SYS_PTRACE);
    assert_false(tt_priv_state_conforms(&s, keep, keep, NULL, why, sizeof why));
    assert_string_equal(why, "CapInh has cap_sys_ptrace");
    s = good;
    s.ambient = TT_CAP_BIT(CAP_SYS_PTRACE);
    assert_false(tt_priv_state_conforms(&s, keep, keep, NULL, why, sizeof why));
    assert_string_equal(why, "CapAmb has cap_sys_ptrace");
    /* the user: every id, and no other group */
    s = good;
    s.uid[2] = 0; /* a saved uid of root would let it come back */
    assert_false(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));
    assert_non_null(strstr(why, "not nobody's 65534:65534"));
    assert_true(tt_priv_state_conforms(&s, keep, keep, NULL, why, sizeof why));
    s = good;
    s.gid[0] = 0;
    assert_false(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));
    s = good;
    s.n_groups = 2;
    assert_false(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));
    assert_string_equal(why, "2 supplementary groups, not only 65534");
    s = good;
    s.first_group = 0;
    assert_false(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));
    s.n_groups = 0;
    assert_true(tt_priv_state_conforms(&s, keep, keep, &nobody, why, sizeof why));
}

static void test_user_lookup(void **state)
{
    tt_priv_user u;
    char err[256];
    assert_int_equal(tt_priv_user_lookup("root", &u, err, sizeof err), 0);
    assert_string_equal(u.name, "root");
    assert_int_equal(u.uid, 0);
    assert_int_equal(u.gid, 0);
    assert_int_equal(tt_priv_user_lookup("0", &u, err, sizeof err), 0);
    assert_string_equal(u.name, "root");
    assert_int_equal(tt_priv_user_lookup("tt-no-such-user-here", &u, err, sizeof err), -1);
    assert_string_equal(err, "--user tt-no-such-user-here: no such user");
    assert_int_equal(tt_priv_user_lookup("4000000000", &u, err, sizeof err), -1);
    assert_string_equal(err, "--user 4000000000: no such user");
    assert_int_equal(tt_priv_user_lookup("", &u, err, sizeof err), -1);
    assert_string_equal(err, "--user wants a user name or uid");
    char longname[100];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(tt_priv_user_lookup(longname, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "name too long"));
}

/* ---- the drop itself, in a child process ---- */

static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;) pause();
    return NULL;
}

static int thread_count(void)
{
    char text[4096];
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strstr(text, "\nThreads:");
    return p ? atoi(p + strlen("\nThreads:")) : -1;
}

/* In the child: a second thread, then the drop to user keeping keep;
 * checks what tt_priv_drop reports and the other thread's status. 0 when
 * all holds, -1 when the drop failed (its reason in err), else the line
 * of the check that failed. */
static int child_drop(const tt_priv_user *user, tt_caps keep, char *err, size_t errlen)
{
    pthread_t t;
    if (pthread_create(&t, NULL, idle_thread, NULL) != 0) return __LINE__;
    if (thread_count() != 2) return __LINE__;
    tt_priv_result r;
    if (tt_priv_drop(keep, user, &r, err, errlen) < 0) return -1;
    if (r.threads != 2 || !r.bounding_dropped) return __LINE__;
    if (r.kept != keep || r.state.effective != keep || r.state.bounding != keep) return __LINE__;
    if (!r.state.no_new_privs || r.state.uid[0] != user->uid || r.state.gid[3] != user->gid) return __LINE__;
    /* the other thread: nothing (it lost everything at the switch of user), bounded the same */
    long self = (long)getpid();
    DIR *d = opendir("/proc/self/task");
    if (!d) return __LINE__;
    int others = 0, bad = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || atol(e->d_name) == self) continue;
        char path[300], text[4096];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = 0;
        tt_priv_state s;
        others++;
        if (!tt_priv_parse_status(text, &s) || s.permitted || s.effective || s.bounding != keep || !s.no_new_privs ||
            s.uid[1] != user->uid)
            bad = __LINE__;
    }
    closedir(d);
    return bad ? bad : others == 1 ? 0 : __LINE__;
}

static void test_drop(void **state)
{
    tt_priv_user nobody;
    char err[256];
    if (tt_priv_user_lookup("nobody", &nobody, err, sizeof err) != 0) {
        print_message("no user nobody here: the drop not tried\n");
        return;
    }
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        err[0] = 0;
        int rc = child_drop(&nobody, TT_CAP_BIT(CAP_SYS_PTRACE), err, sizeof err);
        (void)!write(fds[1], err, strlen(err));
        _exit(rc < 0 ? 100 : rc == 0 ? 0 : rc % 100 + 1);
    }
    close(fds[1]);
    char said[256] = {0};
    (void)!read(fds[0], said, sizeof said - 1);
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (geteuid() == 0) {
        if (WEXITSTATUS(status) != 0) print_message("the drop as root failed: %d %s\n", WEXITSTATUS(status), said);
        assert_int_equal(WEXITSTATUS(status), 0);
    } else {
        /* not root: the bounding set left alone (no CAP_SETPCAP), refused at
         * the switch of user, with one line naming the step */
        assert_int_equal(WEXITSTATUS(status), 100);
        assert_string_equal(said, "--user nobody: setgroups: Operation not permitted");
    }
}

/* As root without CAP_SETPCAP in the effective set (a service given a
 * few capabilities): the drop still succeeds, the bounding set left as it
 * was and said so, permitted and effective narrowed, no_new_privs set. */
static void test_drop_without_setpcap(void **state)
{
    if (geteuid() != 0) {
        print_message("not root: the drop without CAP_SETPCAP not tried\n");
        return;
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
        if (syscall(SYS_capget, &head, data) != 0) _exit(1);
        data[CAP_SETPCAP / 32].effective &= ~(1u << (CAP_SETPCAP % 32));
        data[CAP_SETPCAP / 32].permitted &= ~(1u << (CAP_SETPCAP % 32));
        if (syscall(SYS_capset, &head, data) != 0) _exit(2);
        tt_caps before = 0;
        for (int c = 0; c < 64; c++)
            if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1) before |= TT_CAP_BIT(c);
        tt_priv_result r;
        char err[256];
        const tt_caps keep = TT_CAP_BIT(CAP_SYS_PTRACE);
        if (tt_priv_drop(keep, NULL, &r, err, sizeof err) != 0) _exit(3);
        if (r.bounding_dropped || r.state.bounding != before || r.kept != keep || r.state.effective != keep) _exit(4);
        if (!r.state.no_new_privs || r.state.uid[0] != 0) _exit(5);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_names),   cmocka_unit_test(test_kernel_release), cmocka_unit_test(test_watch_needs),
        cmocka_unit_test(test_parse_status), cmocka_unit_test(test_conforms),      cmocka_unit_test(test_user_lookup),
        cmocka_unit_test(test_drop),        cmocka_unit_test(test_drop_without_setpcap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
