/* audit.c - `tokentap audit [OPTIONS] -- CMD ARGS...`: run a benchmark tool
 * against `tokentap serve` under `tokentap run`, for each server framing
 * and concurrency, and grade what it reported (docs/audit.md). This file:
 * the options, the choice of profiles from the first run, the loop over
 * the cells (each run by audit/audit_run.c) and the card's outputs. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/audit_internal.h"
#include "cmd/commands.h"
#include "core/tt_types.h"
#include "core/util.h"
#include "report/report.h"

#define AUDIT_MAX_PROFILES 8
#define AUDIT_MAX_CONC 16

static const char *const all_profiles[] = {"vllm", "tabby", "responses", "anthropic", "tgi", "llamacpp", "ollama"};

/* Which profiles answer a request path (serve's endpoints, docs/serve.md). */
static const struct { const char *path; const char *profiles[2]; } endpoints[] = {
    {"/v1/chat/completions", {"vllm", "tabby"}}, {"/v1/completions", {"vllm", "tabby"}},
    {"/v1/responses", {"responses", NULL}},      {"/v1/messages", {"anthropic", NULL}},
    {"/generate_stream", {"tgi", NULL}},         {"/generate", {"tgi", NULL}},
    {"/completion", {"llamacpp", NULL}},         {"/api/generate", {"ollama", NULL}},
    {"/api/chat", {"ollama", NULL}},
};

typedef struct audit_options {
    char profiles[AUDIT_MAX_PROFILES][16];
    size_t n_profiles;
    unsigned conc[AUDIT_MAX_CONC];
    size_t n_conc;
    unsigned requests;          /* 0: max(16, 2 x concurrency) */
    double ttft_ms, itl_ms;
    unsigned tokens;
    double tol_ms, tol_pct, timeout_s;
    const char *report_path, *html_path, *keep_dir;
    bool json, quiet, no_server_vantage;
    char **cmd;
} audit_options;

static volatile sig_atomic_t audit_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    audit_interrupted = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap audit [OPTIONS] -- CMD [ARGS...]\n"
            "\n"
            "Say which of a benchmark tool's numbers are wrong, by how much, and why. For each\n"
            "server framing and each concurrency, audit starts `tokentap serve` on a known\n"
            "schedule, runs CMD under the probe (`tokentap run`; as root also the eBPF server\n"
            "vantage), reads the result file CMD wrote, and grades what it reported against\n"
            "serve's log of every token write and the client socket. See docs/audit.md.\n"
            "\n"
            "ARGS may hold placeholders, filled per run (also exported as TOKENTAP_AUDIT_URL,\n"
            "_HOST, _PORT, _CONCURRENCY, _REQUESTS, _RESULT, _REQUEST_ID_PREFIX):\n"
            "  {url} http://127.0.0.1:PORT   {host}   {port}   {concurrency}   {requests}\n"
            "  {result} the path CMD must write its result file to (vllm --save-detailed,\n"
            "           genai-perf, aiperf, guidellm, sglang, llmperf; format detected)\n"
            "  {request_id_prefix} a prefix for x-request-id (vllm --request-id-prefix)\n"
            "\n"
            "options:\n"
            "  --profiles LIST       serve profiles to audit under (comma-separated: vllm, tabby,\n"
            "                        responses, anthropic, tgi, llamacpp, ollama); default: every\n"
            "                        profile answering the API the tool's first run used\n"
            "  --concurrency LIST    concurrencies, comma-separated (default 1,8,64,256)\n"
            "  --requests N          requests per run (default: max(16, 2 x concurrency))\n"
            "  --ttft-ms MS          serve's time to first token (default 20)\n"
            "  --itl-ms MS           serve's time between tokens (default 5)\n"
            "  --tokens N            output tokens when the request sets no limit (default 16)\n"
            "  --tolerance-ms MS     a median error within the larger of MS (default 1) ...\n"
            "  --tolerance-pct P     ... and P%% of the true median (default 5) is tolerated\n"
            "  --timeout S           per run; CMD is killed after S seconds (default 300)\n"
            "  --no-server-vantage   as root, do not take the eBPF server vantage\n"
            "  --json                the JSON card (docs/formats.md) instead of text\n"
            "  --html FILE           also write a self-contained HTML page with plots (mode 0600)\n"
            "  -o, --report FILE     write the card to FILE (mode 0600) instead of stdout\n"
            "  --keep DIR            keep every run's files in DIR (created; serve logs, reports,\n"
            "                        result files, CMD's output); default: a temporary directory,\n"
            "                        removed at the end\n"
            "  -q, --quiet           no progress line\n"
            "  -h, --help            this help\n"
            "\n"
            "exit status: 0 every run within tolerance; 1 the tool mis-measured or failed\n"
            "(CMD's own failures are in the card); 2 bad usage; 3 audit could not run\n"
            "(serve or the probe could not start); 6 the card could not be written.\n");
}

static int parse_list_u32(const char *s, unsigned *out, size_t max, size_t *n)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", s);
    *n = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint32_t v;
        if (*n == max || !tt_parse_u32(t, 100000, &v) || v == 0) return -1;
        out[(*n)++] = v;
    }
    return *n ? 0 : -1;
}

static bool known_profile(const char *p)
{
    for (size_t i = 0; i < sizeof all_profiles / sizeof all_profiles[0]; i++)
        if (!strcmp(all_profiles[i], p)) return true;
    return false;
}

static bool parse_ms(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e6) return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, audit_options *o)
{
    static const struct option longopts[] = {
        {"profiles", required_argument, NULL, 'P'},  {"concurrency", required_argument, NULL, 'c'},
        {"requests", required_argument, NULL, 'n'},  {"ttft-ms", required_argument, NULL, 'T'},
        {"itl-ms", required_argument, NULL, 'I'},    {"tokens", required_argument, NULL, 'k'},
        {"tolerance-ms", required_argument, NULL, 'm'}, {"tolerance-pct", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},   {"no-server-vantage", no_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},            {"html", required_argument, NULL, 'H'},
        {"report", required_argument, NULL, 'o'},    {"keep", required_argument, NULL, 'K'},
        {"quiet", no_argument, NULL, 'q'},           {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    uint32_t v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'P': {
            char copy[256];
            snprintf(copy, sizeof copy, "%s", optarg);
            o->n_profiles = 0;
            for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (!known_profile(t) || o->n_profiles == AUDIT_MAX_PROFILES) {
                    fprintf(stderr, "tokentap audit: --profiles: unknown profile '%s' (vllm, tabby, responses, "
                                    "anthropic, tgi, llamacpp, ollama)\n", t);
                    return TT_EXIT_USAGE;
                }
                snprintf(o->profiles[o->n_profiles++], 16, "%s", t);
            }
            if (!o->n_profiles) {
                fprintf(stderr, "tokentap audit: --profiles wants a comma-separated list\n");
                return TT_EXIT_USAGE;
            }
            break;
        }
        case 'c':
            if (parse_list_u32(optarg, o->conc, AUDIT_MAX_CONC, &o->n_conc) < 0) {
                fprintf(stderr, "tokentap audit: --concurrency wants up to %d numbers 1..100000, got '%s'\n",
                        AUDIT_MAX_CONC, optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'n':
            if (!tt_parse_u32(optarg, 1000000, &v) || v == 0) {
                fprintf(stderr, "tokentap audit: --requests wants 1..1000000, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            o->requests = v;
            break;
        case 'k':
            if (!tt_parse_u32(optarg, 4096, &v) || v == 0) {
                fprintf(stderr, "tokentap audit: --tokens wants 1..4096, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            o->tokens = v;
            break;
        case 'T':
        case 'I':
        case 'm':
        case 'p': {
            double d;
            const char *name = c == 'T' ? "--ttft-ms" : c == 'I' ? "--itl-ms" : c == 'm' ? "--tolerance-ms"
                                                                                        : "--tolerance-pct";
            if (!parse_ms(optarg, &d)) {
                fprintf(stderr, "tokentap audit: %s wants a number >= 0, got '%s'\n", name, optarg);
                return TT_EXIT_USAGE;
            }
            *(c == 'T' ? &o->ttft_ms : c == 'I' ? &o->itl_ms : c == 'm' ? &o->tol_ms : &o->tol_pct) = d;
            break;
        }
        case 't':
            if (!tt_parse_seconds(optarg, &o->timeout_s)) {
                fprintf(stderr, "tokentap audit: --timeout wants seconds > 0, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'S': o->no_server_vantage = true; break;
        case 'j': o->json = true; break;
        case 'H': o->html_path = optarg; break;
        case 'o': o->report_path = optarg; break;
        case 'K': o->keep_dir = optarg; break;
        case 'q': o->quiet = true; break;
        case 'h': usage(stdout); return TT_EXIT_OK;
        case ':':
            fprintf(stderr, "tokentap audit: option '%s' needs a value (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        default:
            fprintf(stderr, "tokentap audit: unknown option '%s' (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "tokentap audit: no command to audit (try --help)\n");
        return TT_EXIT_USAGE;
    }
    o->cmd = argv + optind;
    return -1;
}

static char self_exe[4096];

static int find_self(void)
{
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0) return -1;
    self_exe[n] = 0;
    return 0;
}

/* The profiles whose endpoints the request paths in set (comma-joined,
 * tt_cell_evidence.paths) use, in all_profiles order, and the paths for
 * the card's note in shown ("a, b"); 0 when none is a known endpoint. */
static size_t profiles_from_paths(const char *set, char out[][16], char *shown, size_t shown_cap)
{
    bool want[sizeof all_profiles / sizeof all_profiles[0]] = {0};
    char copy[256];
    snprintf(copy, sizeof copy, "%s", set);
    size_t used = 0;
    *shown = 0;
    for (char *save = NULL, *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (used < shown_cap) used += (size_t)snprintf(shown + used, shown_cap - used, "%s%s", used ? ", " : "", p);
        for (size_t e = 0; e < sizeof endpoints / sizeof endpoints[0]; e++) {
            if (strcmp(endpoints[e].path, p)) continue;
            for (int k = 0; k < 2 && endpoints[e].profiles[k]; k++)
                for (size_t q = 0; q < sizeof all_profiles / sizeof all_profiles[0]; q++)
                    if (!strcmp(all_profiles[q], endpoints[e].profiles[k])) want[q] = true;
        }
    }
    size_t n = 0;
    for (size_t q = 0; q < sizeof all_profiles / sizeof all_profiles[0]; q++)
        if (want[q]) snprintf(out[n++], 16, "%s", all_profiles[q]);
    return n;
}

/* Remove the work directory tree made by audit (two levels). */
static void remove_tree(const char *dir)
{
    char cmd_path[4200];
    snprintf(cmd_path, sizeof cmd_path, "%s", dir);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", "--", cmd_path, (char *)NULL);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
}

static int write_outputs(const audit_options *o, const tt_audit_card *card)
{
    FILE *out = tt_open_output(o->report_path);
    if (!out) {
        fprintf(stderr, "tokentap audit: cannot write %s: %s\n", o->report_path, strerror(errno));
        return TT_EXIT_OUTPUT;
    }
    int rc = o->json ? tt_audit_write_json(out, card) : tt_audit_write_text(out, card);
    if (fflush(out) != 0 || rc < 0 || (out != stdout && fclose(out) != 0)) {
        fprintf(stderr, "tokentap audit: writing %s failed: %s\n", o->report_path ? o->report_path : "stdout",
                strerror(errno));
        return TT_EXIT_OUTPUT;
    }
    if (o->html_path) {
        FILE *h = tt_open_output(o->html_path);
        if (!h || tt_audit_write_html(h, card) < 0 || fclose(h) != 0) {
            fprintf(stderr, "tokentap audit: cannot write %s: %s\n", o->html_path, strerror(errno));
            return TT_EXIT_OUTPUT;
        }
    }
    return 0;
}

static int make_cell_dir(const char *work, size_t index, const char *profile, unsigned conc, char *out, size_t cap)
{
    snprintf(out, cap, "%.3900s/%02zu-%.15s-c%u", work, index, profile, conc);
    return mkdir(out, 0700);
}

int tt_cmd_audit(int argc, char **argv)
{
    audit_options o = {.ttft_ms = 20, .itl_ms = 5, .tokens = 16, .tol_ms = 1, .tol_pct = 5, .timeout_s = 300,
                       .conc = {1, 8, 64, 256}, .n_conc = 4};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    if (find_self() < 0) {
        fprintf(stderr, "tokentap audit: cannot find its own binary (/proc/self/exe)\n");
        return TT_EXIT_INPUT;
    }
    char probe[4096];
    if (tt_probe_library_path(probe, sizeof probe) < 0) {
        fprintf(stderr, "tokentap audit: the probe library %s is missing (build it with make, or set TOKENTAP_PROBE)\n",
                probe);
        return TT_EXIT_INPUT;
    }
    char work[4096];
    if (o.keep_dir) {
        snprintf(work, sizeof work, "%s", o.keep_dir);
        if (mkdir(work, 0700) < 0) {
            fprintf(stderr, "tokentap audit: cannot create %s: %s\n", work, strerror(errno));
            return TT_EXIT_OUTPUT;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(work, sizeof work, "%s/tokentap-audit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(work)) {
            fprintf(stderr, "tokentap audit: cannot create a temporary directory: %s\n", strerror(errno));
            return TT_EXIT_OUTPUT;
        }
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    tt_audit_card card;
    memset(&card, 0, sizeof card);
    size_t used = 0;
    for (int i = 0; o.cmd[i] && used < sizeof card.command - 1; i++)
        used += (size_t)snprintf(card.command + used, sizeof card.command - used, "%s%s", i ? " " : "", o.cmd[i]);
    card.ttft_ms = o.ttft_ms;
    card.itl_ms = o.itl_ms;
    card.tokens = o.tokens;
    card.tolerance_ms = o.tol_ms;
    card.tolerance_pct = o.tol_pct;
    card.root_vantages = geteuid() == 0 && !o.no_server_vantage;

    tt_audit_run_plan plan = {.self_exe = self_exe, .cmd = o.cmd, .ttft_ms = o.ttft_ms, .itl_ms = o.itl_ms,
                              .tokens = o.tokens, .tolerance_ms = o.tol_ms, .tolerance_pct = o.tol_pct,
                              .timeout_s = o.timeout_s, .quiet = o.quiet, .server_vantage = card.root_vantages,
                              .interrupted = &audit_interrupted};
    size_t max_cells = AUDIT_MAX_PROFILES * AUDIT_MAX_CONC + 1;
    card.cells = calloc(max_cells, sizeof *card.cells);
    tt_cell_evidence *ev = calloc(max_cells, sizeof *ev);
    if (!card.cells || !ev) {
        fprintf(stderr, "tokentap audit: out of memory\n");
        return TT_EXIT_INTERNAL;
    }
    rc = TT_EXIT_OK;
    size_t total = o.n_profiles ? o.n_profiles * o.n_conc : o.n_conc; /* updated once the profiles are known */
    bool discovering = o.n_profiles == 0;
    size_t run_no = 0; /* runs made, for the directories and the progress line */
    if (discovering) {
        /* the first run, under vllm (OpenAI's API, what most tools speak), shows the API */
        tt_audit_cell *c = &card.cells[0];
        snprintf(c->profile, sizeof c->profile, "vllm");
        c->concurrency = o.conc[0];
        c->requests_asked = o.requests ? o.requests : (o.conc[0] * 2 > 16 ? o.conc[0] * 2 : 16);
        tt_audit_run_slot cr = {.index = 0, .of = " (the first: it shows the tool's API)"};
        if (make_cell_dir(work, 0, "vllm", o.conc[0], cr.dir, sizeof cr.dir) < 0) rc = TT_EXIT_OUTPUT;
        else rc = tt_audit_run_cell(&plan, c, &cr, &ev[0]);
        if (rc == 0) {
            card.n_cells = 1;
            char paths[320];
            o.n_profiles = profiles_from_paths(ev[0].paths, o.profiles, paths, sizeof paths);
            if (!o.n_profiles) {
                snprintf(o.profiles[o.n_profiles++], 16, "vllm");
                snprintf(card.note, sizeof card.note,
                         "profiles: the first run (under vllm) showed no request to a known endpoint%s%.280s%s; audited "
                         "under vllm only", *paths ? " (paths: " : "", paths, *paths ? ")" : "");
            } else {
                snprintf(card.note, sizeof card.note, "profiles: chosen from the paths of the first run (%.280s)", paths);
            }
            if (strcmp(o.profiles[0], "vllm")) { /* the first run does not count: not the tool's API */
                tt_audit_cell_free(c);
                memset(c, 0, sizeof *c);
                memset(&ev[0], 0, sizeof ev[0]);
                card.n_cells = 0;
            }
            total = o.n_profiles * o.n_conc + (card.n_cells ? 0 : 1);
        }
        run_no = 1;
    }
    for (size_t p = 0; rc == 0 && p < o.n_profiles && !audit_interrupted; p++) {
        for (size_t k = 0; rc == 0 && k < o.n_conc && !audit_interrupted; k++) {
            if (discovering && p == 0 && k == 0 && card.n_cells == 1) continue; /* the first run already */
            tt_audit_cell *c = &card.cells[card.n_cells];
            snprintf(c->profile, sizeof c->profile, "%s", o.profiles[p]);
            c->concurrency = o.conc[k];
            c->requests_asked = o.requests ? o.requests : (o.conc[k] * 2 > 16 ? o.conc[k] * 2 : 16);
            tt_audit_run_slot cr = {.index = run_no++};
            snprintf(cr.of, sizeof cr.of, " of %zu", total);
            if (make_cell_dir(work, cr.index, c->profile, c->concurrency, cr.dir, sizeof cr.dir) < 0) {
                fprintf(stderr, "tokentap audit: cannot create %s: %s\n", cr.dir, strerror(errno));
                rc = TT_EXIT_OUTPUT;
                break;
            }
            rc = tt_audit_run_cell(&plan, c, &cr, &ev[card.n_cells]);
            if (rc == 0) card.n_cells++;
        }
    }
    if (audit_interrupted) fprintf(stderr, "tokentap audit: interrupted; the card covers the runs that finished\n");
    if (rc == TT_EXIT_INTERNAL) fprintf(stderr, "tokentap audit: out of memory\n");
    if (rc == 0 || card.n_cells) {
        if (tt_audit_cross_causes(&card, ev) < 0) {
            fprintf(stderr, "tokentap audit: out of memory\n");
            rc = TT_EXIT_INTERNAL;
        } else {
            int wrc = write_outputs(&o, &card);
            if (wrc) rc = wrc;
            else if (rc == 0 && audit_interrupted) rc = TT_EXIT_FINDINGS;
            else if (rc == 0) rc = card.mis_measured ? TT_EXIT_FINDINGS : TT_EXIT_OK;
        }
    }
    if (!o.keep_dir) remove_tree(work);
    tt_audit_card_free(&card);
    free(ev);
    return rc;
}
