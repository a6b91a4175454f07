/* audit_run.c - one run of the audited tool (a cell of the card): a fresh
 * `tokentap serve` under the cell's profile, then `tokentap run --json
 * --bench-result {result} -- CMD` with the placeholders filled, a progress
 * line while it runs, both stopped, and the cell graded (audit_cell.c).
 * Both are this binary's own subcommands, run as child processes in their
 * own process groups: everything they leave is a file in the cell's
 * directory. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit_internal.h"
#include "core/tt_types.h"
#include "core/util.h"

/* Redirect stdout and stderr of this (child) process to path. */
static void redirect_output(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
}

static pid_t spawn(char **argv, const char *output)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0) return pid;
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    redirect_output(output);
    execv(argv[0], argv);
    fprintf(stderr, "tokentap audit: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Stop the process group of pid: TERM, then KILL after grace_ms. */
static int stop_group(pid_t pid, int grace_ms)
{
    int status = 0;
    kill(-pid, SIGTERM);
    for (int waited = 0; waited <= grace_ms; waited += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid) return status;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

/* Start serve for one cell; its port in *port. -1 (said) when it does not listen. */
static pid_t start_serve(const tt_audit_run_plan *o, const char *profile, const char *dir, unsigned *port)
{
    char log[4200], out[4200], ttft[32], itl[32], tokens[16];
    snprintf(log, sizeof log, "%s/serve.jsonl", dir);
    snprintf(out, sizeof out, "%s/serve.out", dir);
    snprintf(ttft, sizeof ttft, "%g", o->ttft_ms);
    snprintf(itl, sizeof itl, "%g", o->itl_ms);
    snprintf(tokens, sizeof tokens, "%u", o->tokens);
    char *argv[] = {(char *)o->self_exe, "serve", "--listen", "127.0.0.1:0", "--profile", (char *)profile, "--ttft-ms", ttft,
                    "--itl-ms", itl, "--tokens", tokens, "--log", log, NULL};
    pid_t pid = spawn(argv, out);
    if (pid < 0) return -1;
    for (int i = 0; i < 1000; i++) { /* 10 s */
        FILE *f = fopen(out, "r");
        char line[256];
        while (f && fgets(line, sizeof line, f)) {
            char *colon = strrchr(line, ':');
            if (!strncmp(line, "listening on ", 13) && colon && sscanf(colon + 1, "%u", port) == 1) {
                fclose(f);
                return pid;
            }
        }
        if (f) fclose(f);
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "tokentap audit: tokentap serve --profile %s did not start (see %s)\n", profile, out);
    stop_group(pid, 500);
    return -1;
}

/* ---- placeholders ---- */

typedef struct cell_values {
    char url[64], host[16], port[8], concurrency[16], requests[16], result[4200], prefix[32];
} cell_values;

static const char *placeholder(const cell_values *v, const char *name, size_t len)
{
    static const char *const names[] = {"url", "host", "port", "concurrency", "requests", "result",
                                        "request_id_prefix"};
    const char *vals[] = {v->url, v->host, v->port, v->concurrency, v->requests, v->result, v->prefix};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], name, len)) return vals[i];
    return NULL;
}

/* arg with every known {name} replaced (unknown braces are kept: JSON in
 * an argument stays as it is). Returns a malloc'd string or NULL. */
static char *fill(const char *arg, const cell_values *v)
{
    size_t cap = strlen(arg) * 2 + 4300, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = arg; *p;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        const char *val = close ? placeholder(v, p + 1, (size_t)(close - p - 1)) : NULL;
        size_t add = val ? strlen(val) : 1;
        if (n + add + 1 > cap) {
            cap = (n + add + 1) * 2;
            char *g = realloc(out, cap);
            if (!g) {
                free(out);
                return NULL;
            }
            out = g;
        }
        if (val) {
            memcpy(out + n, val, add);
            p = close + 1;
        } else {
            out[n] = *p++;
        }
        n += add;
    }
    out[n] = 0;
    return out;
}

/* ---- one cell ---- */

/* The last line of CMD's output that is not tokentap run's own. */
static void last_words(const char *log, char *out, size_t cap)
{
    *out = 0;
    FILE *f = fopen(log, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        size_t k = strlen(line);
        /* tokentap run's own lines are not CMD's words, but for why CMD could not start */
        bool run_said = !strncmp(line, "tokentap run:", 13);
        if (!k || (run_said && !strstr(line, "cannot"))) continue;
        if (k >= cap) k = cap - 1;
        memcpy(out, line, k);
        out[k] = 0;
    }
    fclose(f);
}

/* Streams serve finished so far, from its log (the progress line). */
static size_t done_so_far(const char *log, long *offset, size_t done)
{
    FILE *f = fopen(log, "r");
    if (!f) return done;
    char buf[1 << 16];
    if (fseek(f, *offset, SEEK_SET) == 0) {
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
            /* count only whole lines: keep a partial one for the next read */
            size_t whole = n;
            while (whole && buf[whole - 1] != '\n') whole--;
            if (!whole) break;
            done += tt_truth_count_done(buf, whole);
            *offset += (long)whole;
            if (whole < n) fseek(f, *offset, SEEK_SET);
        }
    }
    fclose(f);
    return done;
}

int tt_audit_run_cell(const tt_audit_run_plan *o, tt_audit_cell *c, const tt_audit_run_slot *cr, tt_cell_evidence *ev)
{
    unsigned port = 0;
    pid_t serve = start_serve(o, c->profile, cr->dir, &port);
    if (serve < 0) return TT_EXIT_INPUT;
    cell_values v;
    snprintf(v.url, sizeof v.url, "http://127.0.0.1:%u", port);
    snprintf(v.host, sizeof v.host, "127.0.0.1");
    snprintf(v.port, sizeof v.port, "%u", port);
    snprintf(v.concurrency, sizeof v.concurrency, "%u", c->concurrency);
    snprintf(v.requests, sizeof v.requests, "%u", c->requests_asked);
    snprintf(v.result, sizeof v.result, "%s/result.json", cr->dir);
    snprintf(v.prefix, sizeof v.prefix, "tt%zu-", cr->index);

    char report[4200], cmdlog[4200], serve_log[4200], port_s[8];
    snprintf(report, sizeof report, "%s/run.json", cr->dir);
    snprintf(cmdlog, sizeof cmdlog, "%s/cmd.log", cr->dir);
    snprintf(serve_log, sizeof serve_log, "%s/serve.jsonl", cr->dir);
    snprintf(port_s, sizeof port_s, "%u", port);
    size_t n_cmd = 0;
    while (o->cmd[n_cmd]) n_cmd++;
    char **argv = calloc(n_cmd + 16, sizeof *argv);
    if (!argv) {
        stop_group(serve, 2000);
        return TT_EXIT_INTERNAL;
    }
    size_t a = 0;
    argv[a++] = (char *)o->self_exe;
    argv[a++] = "run";
    argv[a++] = "--json";
    argv[a++] = "--report";
    argv[a++] = report;
    argv[a++] = "--bench-result";
    argv[a++] = v.result;
    if (o->server_vantage) {
        argv[a++] = "--server-port";
        argv[a++] = port_s;
    }
    argv[a++] = "--";
    size_t first_filled = a;
    bool oom = false;
    for (size_t i = 0; i < n_cmd; i++) oom |= !(argv[a++] = fill(o->cmd[i], &v));
    setenv("TOKENTAP_AUDIT_URL", v.url, 1);
    setenv("TOKENTAP_AUDIT_HOST", v.host, 1);
    setenv("TOKENTAP_AUDIT_PORT", v.port, 1);
    setenv("TOKENTAP_AUDIT_CONCURRENCY", v.concurrency, 1);
    setenv("TOKENTAP_AUDIT_REQUESTS", v.requests, 1);
    setenv("TOKENTAP_AUDIT_RESULT", v.result, 1);
    setenv("TOKENTAP_AUDIT_REQUEST_ID_PREFIX", v.prefix, 1);

    int status = 0;
    bool timed_out = false;
    if (!oom) {
        pid_t run = spawn(argv, cmdlog);
        uint64_t start = tt_clock_ns(CLOCK_MONOTONIC);
        long offset = 0;
        size_t done = 0;
        bool tty = !o->quiet && isatty(2);
        for (;;) {
            if (waitpid(run, &status, WNOHANG) == run) break;
            if (*o->interrupted || (double)(tt_clock_ns(CLOCK_MONOTONIC) - start) / 1e9 > o->timeout_s) {
                timed_out = !*o->interrupted;
                status = stop_group(run, 2000);
                break;
            }
            if (tty) {
                done = done_so_far(serve_log, &offset, done);
                fprintf(stderr, "\rtokentap audit: run %zu%s (%s, concurrency %u): %zu of %u requests done   ",
                        cr->index + 1, cr->of, c->profile, c->concurrency, done, c->requests_asked);
            }
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (tty) fprintf(stderr, "\r%*s\r", 100, "");
        else if (!o->quiet)
            fprintf(stderr, "tokentap audit: run %zu%s (%s, concurrency %u) finished\n", cr->index + 1, cr->of,
                    c->profile, c->concurrency);
    }
    stop_group(serve, 2000);
    for (size_t i = first_filled; i < a; i++) free(argv[i]);
    free(argv);
    if (oom) return TT_EXIT_INTERNAL;

    c->cmd_status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 70;
    tt_cell_inputs in = {.run_report = report, .result_path = v.result, .serve_log = serve_log,
                         .tolerance_ms = o->tolerance_ms, .tolerance_pct = o->tolerance_pct};
    if (tt_audit_grade_cell(c, &in, ev) < 0) return TT_EXIT_INTERNAL;
    if (c->cmd_status != 0 || timed_out) {
        char words[200], grade_problem[400];
        last_words(cmdlog, words, sizeof words);
        snprintf(grade_problem, sizeof grade_problem, "%s", c->cmd_problem);
        if (timed_out)
            snprintf(c->cmd_problem, sizeof c->cmd_problem, "killed after the %g s timeout%s%.300s", o->timeout_s,
                     grade_problem[0] ? "; " : "", grade_problem);
        else
            snprintf(c->cmd_problem, sizeof c->cmd_problem, "CMD exited %d%s%.120s%s%s%.200s", c->cmd_status,
                     words[0] ? " (its last line: " : "", words, words[0] ? ")" : "", grade_problem[0] ? "; " : "",
                     grade_problem);
        c->within_tolerance = false;
    }
    return 0;
}
