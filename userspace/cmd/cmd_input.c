/* cmd_input.c - a capture file or a recording directory, analysed; see cmd_input.h. */
#include "cmd/cmd_input.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/util.h"
#include "report/release_digest.h"
#include "source/pcap_source.h"
#include "timeline/conn_tracker.h"

/* One vantage file, read and analysed. */
struct tt_input_run {
    char path[4096];
    tt_pcap_source *src;
    tt_tracker *tracker;
    tt_reasm *reasm;
    tt_analysis a;
    tt_reasm_stats reasm_sum; /* the shards' stats added up (jobs > 1) */
    tt_release_digest digest; /* what was taken of released requests (opt->release_events) */
    bool release;             /* the tracker's on_file hook fills digest */
    char err[256];
    bool filled;
};

static void run_free(tt_input_run *v)
{
    if (v->filled) tt_analysis_release(&v->a);
    tt_reasm_free(v->reasm);
    tt_tracker_free(v->tracker); /* (files what was in flight: the hook may still take it) */
    tt_release_digest_free(&v->digest);
    tt_pcap_source_close(v->src);
    memset(v, 0, sizeof *v);
}

bool tt_cmd_keep_events_forced(void)
{
    return tt_env_flag("TOKENTAP_KEEP_EVENTS");
}

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    const char *command = ctx;
    if (total)
        fprintf(stderr, "\r%s: %3u%% (%llu of %llu MB)", command, (unsigned)(done * 100 / total),
                (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
}

int tt_cmd_input_parse_offset(tt_cmd_input_options *opt, const char *arg)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end) {
        fprintf(stderr, "tokentap %s: --wall-to-mono-offset wants an integer of nanoseconds, got '%s'\n", opt->command,
                arg);
        return TT_EXIT_USAGE;
    }
    opt->have_offset = true;
    opt->mono_offset_ns = v;
    return TT_EXIT_OK;
}

int tt_cmd_option_error(const char *command, int c, char **argv)
{
    if (c == ':') fprintf(stderr, "tokentap %s: %s needs a value (try --help)\n", command, argv[optind - 1]);
    else fprintf(stderr, "tokentap %s: unknown option '%s' (try --help)\n", command, argv[optind - 1]);
    return TT_EXIT_USAGE;
}

const char *tt_cmd_input_operand(const char *command, int argc, char **argv)
{
    if (optind == argc - 1) return argv[optind];
    fprintf(stderr, "tokentap %s: expected exactly one capture file or recording directory (try --help)\n", command);
    return NULL;
}

bool tt_cmd_input_is_recording(const char *path)
{
    struct stat st;
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(manifest, F_OK) == 0;
}

/* The manifest's wall_to_mono_offset_ns.start, read with full integer
 * precision, and its clock_id ("" when the manifest predates it). */
static int manifest_offset(const char *path, int64_t *offset, char *clock_id, size_t id_cap, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = malloc(1 << 16);
    if (!buf) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *doc = cJSON_Parse(buf);
    const cJSON *off = doc ? cJSON_GetObjectItemCaseSensitive(doc, "wall_to_mono_offset_ns") : NULL;
    const cJSON *start = off ? cJSON_GetObjectItemCaseSensitive(off, "start") : NULL;
    int rc = -1;
    if (!doc) {
        snprintf(err, errlen, "%s: not JSON", path);
    } else if (!cJSON_IsNumber(start)) {
        snprintf(err, errlen, "%s: no wall_to_mono_offset_ns.start", path);
    } else {
        /* cJSON holds numbers as doubles: take the digits from the text */
        const char *key = strstr(buf, "\"start\"");
        const char *colon = key ? strchr(key, ':') : NULL;
        char *end = NULL;
        errno = 0;
        long long v = colon ? strtoll(colon + 1, &end, 10) : 0;
        if (!colon || errno || end == colon + 1) {
            snprintf(err, errlen, "%s: bad wall_to_mono_offset_ns.start", path);
        } else {
            *offset = v;
            rc = 0;
        }
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "clock_id");
        snprintf(clock_id, id_cap, "%s", cJSON_IsString(id) ? id->valuestring : "");
    }
    cJSON_Delete(doc);
    free(buf);
    return rc;
}

/* What the readers of one file share for the merge that follows them. */
typedef struct merge_room {
    atomic_uint readers_running; /* readers not done yet */
    atomic_flag claimed;         /* a reader is making room in its array */
    unsigned shares;
} merge_room;

/* Shut until the readers' threads are started: then run_sharded knows
 * which run at once, and whether they can share one walk of the file. */
typedef struct start_gate {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    bool open;
} start_gate;

static void gate_pass(start_gate *g)
{
    pthread_mutex_lock(&g->lock);
    while (!g->open) pthread_cond_wait(&g->opened, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static void gate_open(start_gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = true;
    pthread_cond_broadcast(&g->opened);
    pthread_mutex_unlock(&g->lock);
}

/* One share of the connections of a capture file, read and reassembled by
 * its own thread. */
typedef struct shard_run {
    tt_pcap_source *src; /* tt_pcap_source_share of the main source */
    tt_tracker *tracker;
    tt_reasm *reasm;
    tt_release_digest digest;
    merge_room *room;
    start_gate *gate; /* NULL: read after the others, on the main thread */
} shard_run;

#define PREFAULT_STEP (256u << 10)

/* Write zeroes over [p, p + len), a step at a time, while another reader
 * is still running. What is left when the last reader ends faults in
 * during the merge, as it would have. */
static void prefault_while_others_run(void *p, size_t len, atomic_uint *readers_running)
{
    unsigned char *b = p;
    for (size_t done = 0; done < len && atomic_load(readers_running) > 0; done += PREFAULT_STEP)
        memset(b + done, 0, len - done < PREFAULT_STEP ? len - done : PREFAULT_STEP);
}

/* A reader of t's share is done. The merge moves every share's requests
 * into one array (tt_tracker_absorb takes the one with room for all): the
 * first reader done while another still runs makes room in its own for
 * about all of them (shares hold about equal parts; short of room, the
 * merge grows it) and takes that room's page faults (a fault per 4 KiB,
 * ~15 us each in some VMs) beside the others' work, not after it. m is
 * NULL for a share read after the others. */
static void reader_done(merge_room *m, tt_tracker *t)
{
    if (!m || atomic_fetch_sub(&m->readers_running, 1) <= 1 || atomic_flag_test_and_set(&m->claimed)) return;
    size_t n, room;
    (void)tt_tracker_requests(t, &n);
    tt_request *free_slots = tt_tracker_reserve_requests(t, n + n * (m->shares - 1) * 9 / 8 + 16, &room);
    if (free_slots) prefault_while_others_run(free_slots, room * sizeof *free_slots, &m->readers_running);
}

static void *shard_main(void *arg)
{
    shard_run *sh = arg;
    char err[256];
    if (sh->gate) gate_pass(sh->gate);
    /* The file is the same for every reader: the main thread reports any damage. */
    (void)tt_pcap_source_run(sh->src, sh->reasm, NULL, NULL, err, sizeof err);
    reader_done(sh->room, sh->tracker);
    return NULL;
}

static void shard_free(shard_run *sh)
{
    tt_reasm_free(sh->reasm);
    tt_tracker_free(sh->tracker);
    tt_release_digest_free(&sh->digest);
    tt_pcap_source_close(sh->src);
}

/* Read v->src (opened, clock set) with jobs threads, each reassembling its
 * share of the connections with its own tracker (tt_pcap_source_share),
 * walking the file once between them when every thread started
 * (tt_pcap_source_walk_together) and each walking all of it otherwise, and
 * merge theirs into v->tracker: the same
 * requests, notes and counts as one thread (the merge orders them as one
 * reader would have). A share whose thread cannot be started is read here
 * after this thread's own. Returns the source's result (0 or -1 with v->err),
 * or -2 when out of memory. */
static int run_sharded(tt_input_run *v, unsigned jobs, const tt_tracker_options *topt, tt_progress_fn progress,
                       void *pctx, const tt_cmd_input_options *opt)
{
    shard_run *sh = calloc(jobs, sizeof *sh);
    pthread_t *th = calloc(jobs, sizeof *th);
    unsigned started = 0; /* threads running: sh[0 .. started) */
    merge_room room = {.readers_running = jobs, .claimed = ATOMIC_FLAG_INIT, .shares = jobs};
    start_gate gate = {.lock = PTHREAD_MUTEX_INITIALIZER, .opened = PTHREAD_COND_INITIALIZER};
    tt_pcap_source **share_src = calloc(jobs, sizeof *share_src);
    int rc = -2;
    if (!sh || !th || !share_src) goto out;
    for (unsigned k = 0; k + 1 < jobs; k++) {
        tt_release_digest_init(&sh[k].digest);
        tt_tracker_options shard_opt = *topt;
        if (topt->on_file) shard_opt.on_file_ctx = &sh[k].digest;
        if (topt->on_file && opt->release_json &&
            tt_release_digest_spool_json(&sh[k].digest, TT_VANTAGE_WIRE, opt->keep_text) < 0)
            shard_opt.on_file = NULL; /* no temporary file: this share keeps its events */
        sh[k].src = tt_pcap_source_share(v->src, k + 1, jobs);
        sh[k].tracker = sh[k].src ? tt_tracker_new(&shard_opt) : NULL;
        sh[k].reasm = sh[k].tracker ? tt_reasm_new(NULL, TT_VANTAGE_WIRE, tt_tracker_chunk, sh[k].tracker) : NULL;
        if (!sh[k].reasm) goto out;
        sh[k].room = &room;
        sh[k].gate = &gate;
        share_src[k] = sh[k].src;
    }
    while (started + 1 < jobs && pthread_create(&th[started], NULL, shard_main, &sh[started]) == 0) started++;
    for (unsigned k = started; k + 1 < jobs; k++) { /* read below, after this thread's share: not beside it */
        sh[k].room = NULL;
        sh[k].gate = NULL;
        atomic_fetch_sub(&room.readers_running, 1);
    }
    if (started + 1 == jobs) (void)tt_pcap_source_walk_together(v->src, share_src, jobs - 1);
    gate_open(&gate);
    rc = tt_pcap_source_run(v->src, v->reasm, progress, pctx, v->err, sizeof v->err);
    reader_done(&room, v->tracker);
    for (unsigned k = started; k + 1 < jobs; k++) shard_main(&sh[k]); /* a thread that did not start */
    for (unsigned k = 0; k < started; k++) pthread_join(th[k], NULL);
    v->reasm_sum = *tt_reasm_get_stats(v->reasm);
    for (unsigned k = 0; k + 1 < jobs; k++) {
        tt_pcap_source_absorb_share(v->src, sh[k].src);
        tt_reasm_stats_add(&v->reasm_sum, tt_reasm_get_stats(sh[k].reasm));
        if (topt->on_file) {
            size_t n;
            tt_request *reqs = tt_tracker_requests(sh[k].tracker, &n);
            if (tt_release_digest_absorb(&v->digest, &sh[k].digest, reqs, n) < 0) rc = -2;
        }
        tt_tracker_absorb(v->tracker, sh[k].tracker);
    }
    if (tt_tracker_order_notes(v->tracker) < 0) rc = -2;
out:
    if (sh)
        for (unsigned k = 0; k + 1 < jobs; k++) shard_free(&sh[k]);
    free(sh);
    free(th);
    free(share_src);
    return rc;
}

/* Read one pcap into v. Returns TT_EXIT_OK, TT_EXIT_DAMAGED (analysed up to
 * the damage), TT_EXIT_INPUT or TT_EXIT_INTERNAL. */
static int run_one(tt_input_run *v, const char *path, tt_vantage vantage, bool set_offset, int64_t offset,
                   bool keep_clock_mono, unsigned jobs, const tt_cmd_input_options *opt)
{
    snprintf(v->path, sizeof v->path, "%s", path);
    v->src = tt_pcap_source_open(path, v->err, sizeof v->err);
    if (!v->src) {
        fprintf(stderr, "tokentap %s: %s\n", opt->command, v->err);
        return TT_EXIT_INPUT;
    }
    if (set_offset) tt_pcap_source_set_mono_offset(v->src, offset);
    if (opt->has_clock_map) tt_pcap_source_set_clock_map(v->src, opt->map_d0_ns, opt->map_skew, opt->map_t0_ns);
    tt_tracker_options topt = {.keep_text = opt->keep_text, .keep_body = opt->keep_body};
    tt_release_digest_init(&v->digest);
    v->release = opt->release_events && !tt_cmd_keep_events_forced() &&
                 (!opt->release_json || tt_release_digest_spool_json(&v->digest, vantage, opt->keep_text) == 0);
    if (v->release) {
        topt.on_file = tt_release_on_file;
        topt.on_file_ctx = &v->digest;
    }
    v->tracker = tt_tracker_new(&topt);
    v->reasm = v->tracker ? tt_reasm_new(NULL, vantage, tt_tracker_chunk, v->tracker) : NULL;
    if (!v->reasm) {
        fprintf(stderr, "tokentap %s: out of memory\n", opt->command);
        return TT_EXIT_INTERNAL;
    }
    bool progress = opt->progress && isatty(STDERR_FILENO);
    int rc;
    const tt_reasm_stats *reasm_stats = tt_reasm_get_stats(v->reasm);
    if (jobs > 1 && tt_pcap_source_shareable(v->src)) {
        rc = run_sharded(v, jobs, &topt, progress ? show_progress : NULL, (void *)opt->command, opt);
        if (progress) fputs("\r\033[K", stderr);
        if (rc == -2) {
            fprintf(stderr, "tokentap %s: out of memory\n", opt->command);
            return TT_EXIT_INTERNAL;
        }
        reasm_stats = &v->reasm_sum;
    } else {
        rc = tt_pcap_source_run(v->src, v->reasm, progress ? show_progress : NULL, (void *)opt->command, v->err,
                                sizeof v->err);
        if (progress) fputs("\r\033[K", stderr);
    }
    if (rc < 0 && !opt->quiet_damage) fprintf(stderr, "tokentap %s: %s: %s\n", opt->command, path, v->err);
    v->a = (tt_analysis){
        .command = opt->command,
        .input = v->path,
        .vantage = vantage,
        .clock = keep_clock_mono ? TT_CLOCK_MONOTONIC : tt_pcap_source_clock(v->src),
        .has_mono_offset = set_offset,
        .mono_offset_ns = set_offset ? offset : 0,
        .pcap = tt_pcap_source_stats(v->src),
        .reasm = reasm_stats,
        .tracker = v->tracker,
        .source_error = rc < 0 ? v->err : NULL,
        .with_text = opt->keep_text,
    };
    v->filled = true;
    if (tt_analysis_fill_released(&v->a, v->tracker, opt->pct, opt->n_pct, v->release ? &v->digest : NULL) < 0) {
        fprintf(stderr, "tokentap %s: out of memory\n", opt->command);
        return TT_EXIT_INTERNAL;
    }
    return rc < 0 ? TT_EXIT_DAMAGED : TT_EXIT_OK;
}

static int load_recording(const char *dir, const tt_cmd_input_options *opt, tt_cmd_input *in)
{
    static const struct {
        const char *file;
        tt_vantage vantage;
    } files[] = {{"server.pcap", TT_VANTAGE_SERVER}, {"client.pcap", TT_VANTAGE_CLIENT}, {"wire.pcap", TT_VANTAGE_WIRE},
                   {"server_tls.pcap", TT_VANTAGE_SERVER_TLS}, {"client_tls.pcap", TT_VANTAGE_CLIENT_TLS}};
    char path[4096], err[8192];
    int64_t offset = 0;
    if (opt->have_offset) {
        fprintf(stderr, "tokentap %s: --wall-to-mono-offset does not apply to a recording (its manifest has one)\n",
                opt->command);
        return TT_EXIT_USAGE;
    }
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (manifest_offset(path, &offset, in->clock_id, sizeof in->clock_id, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap %s: %s\n", opt->command, err);
        return TT_EXIT_INPUT;
    }
    in->has_mono_offset = true;
    in->mono_offset_ns = offset;
    int status = TT_EXIT_OK;
    size_t requests = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].file);
        if (access(path, F_OK) != 0) continue;
        tt_input_run *v = &in->runs[in->n];
        bool wire = files[i].vantage == TT_VANTAGE_WIRE;
        tt_cmd_input_options vopt = *opt;
        vopt.release_events = false; /* a recording's report joins vantages event by event */
        int rc = run_one(v, path, files[i].vantage, wire, offset, !wire, 1, &vopt);
        if (rc == TT_EXIT_INTERNAL) return rc;
        if (rc == TT_EXIT_INPUT) {
            run_free(v);
            status = TT_EXIT_INPUT;
            continue;
        }
        if (rc == TT_EXIT_DAMAGED && status == TT_EXIT_OK) status = rc;
        requests += v->a.n_reqs;
        in->analyses[in->n++] = &v->a;
    }
    snprintf(path, sizeof path, "%s/tls.pcap", dir);
    if (access(path, F_OK) == 0)
        fprintf(stderr, "tokentap %s: %s: tls.pcap not read (an older recording: which end its plaintext is from is not "
                        "known; record again for server_tls.pcap and client_tls.pcap)\n",
                opt->command, dir);
    if (in->n == 0) {
        if (status == TT_EXIT_OK)
            fprintf(stderr,
                    "tokentap %s: %s: no vantage file (server.pcap, client.pcap, wire.pcap, server_tls.pcap, "
                    "client_tls.pcap)\n",
                    opt->command, dir);
        return TT_EXIT_INPUT;
    }
    if (requests == 0) {
        fprintf(stderr, "tokentap %s: %s: no HTTP/1.1 exchange found at any vantage\n", opt->command, dir);
        if (status == TT_EXIT_OK) status = TT_EXIT_NO_HTTP;
    }
    return status;
}

int tt_cmd_input_load(const char *path, const tt_cmd_input_options *opt, tt_cmd_input *in)
{
    memset(in, 0, sizeof *in);
    in->runs = calloc(TT_VANTAGE_COUNT, sizeof *in->runs);
    if (!in->runs) {
        fprintf(stderr, "tokentap %s: out of memory\n", opt->command);
        return TT_EXIT_INTERNAL;
    }
    /* Connections come and go while requests accumulate: keep freed heap
     * instead of returning it to the kernel and faulting it back in. */
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_TOP_PAD, 16 << 20);
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    if (tt_cmd_input_is_recording(path)) {
        in->recording = true;
        return load_recording(path, opt, in);
    }
    in->has_mono_offset = opt->have_offset;
    in->mono_offset_ns = opt->have_offset ? opt->mono_offset_ns : 0;
    tt_input_run *v = &in->runs[0];
    int rc = run_one(v, path, TT_VANTAGE_WIRE, opt->have_offset, opt->mono_offset_ns, false, opt->jobs, opt);
    if (rc != TT_EXIT_OK && rc != TT_EXIT_DAMAGED) return rc;
    in->analyses[in->n++] = &v->a;
    if (v->a.n_reqs == 0) {
        fprintf(stderr, "tokentap %s: %s: no HTTP/1.1 exchange found (%llu packets, %llu connections)\n", opt->command,
                path, (unsigned long long)v->a.pcap->packets,
                (unsigned long long)tt_tracker_connections(v->tracker));
        if (rc == TT_EXIT_OK) rc = TT_EXIT_NO_HTTP;
    }
    return rc;
}

tt_join_options tt_cmd_input_join_options(const tt_cmd_input *in)
{
    bool mono = in->recording || (in->n && in->analyses[0]->clock == TT_CLOCK_MONOTONIC);
    return (tt_join_options){
        .clock_is_mono = mono, .has_wall_to_mono = in->has_mono_offset, .wall_to_mono_ns = in->mono_offset_ns};
}

void tt_cmd_input_relabel(tt_cmd_input *in, size_t i, tt_vantage v)
{
    for (size_t k = 0; k < TT_VANTAGE_COUNT; k++)
        if (&in->runs[k].a == in->analyses[i]) in->runs[k].a.vantage = v;
}

void tt_cmd_input_free(tt_cmd_input *in)
{
    if (in->runs)
        for (size_t i = 0; i < TT_VANTAGE_COUNT; i++) run_free(&in->runs[i]);
    free(in->runs);
    memset(in, 0, sizeof *in);
}

int tt_cmd_output_close(const char *command, FILE *out, const char *path)
{
    if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0)) {
        fprintf(stderr, "tokentap %s: writing %s failed: %s\n", command, path ? path : "stdout",
                strerror(errno));
        return TT_EXIT_OUTPUT;
    }
    return TT_EXIT_OK;
}
