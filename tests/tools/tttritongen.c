/* tttritongen - what one genai-perf run with --service-kind triton
 * (perf_analyzer -i grpc --streaming) leaves behind, written from chosen
 * instants: the capture of its Triton ModelStreamInfer streams, the
 * profile_export.json perf_analyzer would write for them, and the truth.
 *
 *   tttritongen PCAP EXPORT TRUTH [--threads N] [--requests R] [--before K]
 *
 * Each client thread t (N of them, 1 or 2) keeps stream 1 + 2t of one
 * HTTP/2 connection open and sends R requests (1..5) one after the other,
 * each one ModelInferRequest whose id is perf_analyzer's (t << 48 | n),
 * answered by three text responses and an empty final one. Instants are
 * wall clock ns (the capture's and the export's): perf_analyzer records a
 * request 150 us before its message is on the wire and each response 80 us
 * after it was. The first K requests of thread 0 ended before the
 * measurement window and are not in the export; the export lists thread
 * 0's requests, then thread 1's, each in completion order, as
 * perf_analyzer does (docs/formats.md, "genai-perf with --service-kind
 * triton").
 *
 * TRUTH: one JSON line per export record: {"record", "request_id",
 * "start_ns", "wire_start_ns", "ttft_ns", "wire_ttft_ns"}. */
#include <getopt.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2_script.h"
#include "pcap_writer.h"
#include "proto/http2.h"
#include "triton_msg.h"

#define MS UINT64_C(1000000)
#define US UINT64_C(1000)
#define WALL0 UINT64_C(1765000000000000000)
#define SEND_LAG (150 * US)
#define RECV_LAG (80 * US)
#define N_RESP 4
#define MODEL "vllm_model"

static const char *const texts[N_RESP] = {"Hi", " there", "!", ""};

typedef struct req {
    unsigned thread, n;
    char id[24];
    uint64_t start, resp[N_RESP]; /* as perf_analyzer recorded them */
} req;

typedef struct event {
    uint64_t ns;
    size_t req, resp; /* resp == N_RESP: the request message */
} event;

static int by_instant(const void *pa, const void *pb)
{
    const event *a = pa, *b = pb;
    if (a->ns != b->ns) return a->ns < b->ns ? -1 : 1;
    if (a->req != b->req) return a->req < b->req ? -1 : 1;
    return a->resp < b->resp ? -1 : a->resp > b->resp;
}

static void plan(req *rs, unsigned threads, unsigned requests)
{
    for (unsigned t = 0; t < threads; t++)
        for (unsigned n = 0; n < requests; n++) {
            req *r = &rs[t * requests + n];
            r->thread = t;
            r->n = n;
            snprintf(r->id, sizeof r->id, "%" PRIu64, (uint64_t)t << 48 | n);
            r->start = WALL0 + 100 * MS + t * 7 * MS + n * 120 * MS;
            for (unsigned k = 0; k < N_RESP; k++)
                r->resp[k] = r->start + 40 * MS + ((t + n) % 3) * MS + (k < 3 ? k * 9 * MS : 19 * MS);
        }
}

/* The h2 script of the exchange, every write at its wire instant. */
static void script(h2_script *s, const req *rs, size_t n)
{
    event ev[64];
    size_t ne = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        ev[ne++] = (event){rs[i].start + SEND_LAG, i, N_RESP};
        for (size_t k = 0; k < N_RESP; k++) {
            ev[ne++] = (event){rs[i].resp[k] - RECV_LAG, i, k};
            if (rs[i].resp[k] > last) last = rs[i].resp[k];
        }
    }
    qsort(ev, ne, sizeof *ev, by_instant);
    h2_script_init(s);
    h2_frame(h2_write_at(s, TT_DIR_S2C, WALL0 + 11 * MS), TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_write *w = h2_write_at(s, TT_DIR_C2S, WALL0 + 12 * MS);
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    const char *const head[] = {":method", "POST", ":scheme", "http", ":authority", "127.0.0.1:8001", ":path",
                                "/inference.GRPCInferenceService/ModelStreamInfer", "content-type",
                                "application/grpc", "te", "trailers", NULL};
    const char *const resp[] = {":status", "200", "content-type", "application/grpc", NULL};
    bool opened[2] = {false, false}, answered[2] = {false, false};
    for (size_t e = 0; e < ne; e++) {
        const req *r = &rs[ev[e].req];
        uint32_t sid = 1 + 2 * r->thread;
        triton_msg m;
        if (ev[e].resp == N_RESP) {
            w = h2_write_at(s, TT_DIR_C2S, ev[e].ns);
            if (!opened[r->thread]) h2_headers(s, w, sid, 0, head);
            opened[r->thread] = true;
            m = triton_infer_request(MODEL, r->id);
        } else {
            w = h2_write_at(s, TT_DIR_S2C, ev[e].ns);
            if (!answered[r->thread]) h2_headers(s, w, sid, 0, resp);
            answered[r->thread] = true;
            m = triton_stream_response(MODEL, r->id, texts[ev[e].resp], ev[e].resp == N_RESP - 1);
        }
        triton_grpc_data(w, sid, 0, &m);
    }
    const char *const trailers[] = {"grpc-status", "0", NULL};
    for (unsigned t = 0; t < 2; t++) {
        if (!opened[t]) continue;
        h2_frame(h2_write_at(s, TT_DIR_C2S, last + 10 * MS), TT_H2_DATA, TT_H2_FLAG_END_STREAM, 1 + 2 * t, NULL, 0);
        h2_headers(s, h2_write_at(s, TT_DIR_S2C, last + 11 * MS), 1 + 2 * t, TT_H2_FLAG_END_STREAM, trailers);
    }
}

static int write_pcap(const char *path, const h2_script *s)
{
    tt_pw *pw = tt_pw_open(path, DLT_EN10MB, TT_PW_NANO);
    if (!pw) return -1;
    tt_pw_conn *c = tt_pw_conn_new(pw, "127.0.0.1", 40000, "127.0.0.1", 8001);
    int rc = c ? tt_pw_handshake(c, WALL0 + 10 * MS) : -1;
    uint64_t end = WALL0;
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        rc = tt_pw_send(c, s->w[i].dir, s->w[i].p, s->w[i].n, s->w[i].ns);
        if (s->w[i].ns > end) end = s->w[i].ns;
    }
    if (rc == 0) rc = tt_pw_fin(c, TT_DIR_C2S, end + MS);
    if (rc == 0) rc = tt_pw_fin(c, TT_DIR_S2C, end + 2 * MS);
    if (tt_pw_close(pw) != 0) rc = -1;
    return rc;
}

/* perf_analyzer's export (compact, its key order) and the truth. */
static int write_export(const char *export_path, const char *truth_path, const req *rs, size_t n,
                        unsigned before)
{
    FILE *f = fopen(export_path, "w"), *t = fopen(truth_path, "w");
    if (!f || !t) {
        if (f) fclose(f);
        if (t) fclose(t);
        return -1;
    }
    fprintf(f, "{\"experiments\":[{\"experiment\":{\"mode\":\"concurrency\",\"value\":%u},\"requests\":[",
            rs[n - 1].thread + 1);
    size_t rec = 0;
    for (size_t i = 0; i < n; i++) {
        const req *r = &rs[i];
        if (r->thread == 0 && r->n < before) continue;
        fprintf(f, "%s{\"timestamp\":%" PRIu64 ",\"request_inputs\":{\"text_input\":\"Say hi\",\"stream\":true,"
                   "\"exclude_input_in_output\":true},\"response_timestamps\":[",
                rec ? "," : "", r->start);
        for (size_t k = 0; k < N_RESP; k++) fprintf(f, "%s%" PRIu64, k ? "," : "", r->resp[k]);
        fprintf(f, "],\"response_outputs\":[");
        for (size_t k = 0; k < N_RESP; k++) fprintf(f, "%s{\"text_output\":\"%s\"}", k ? "," : "", texts[k]);
        fprintf(f, "]}");
        fprintf(t,
                "{\"record\":%zu,\"request_id\":\"%s\",\"start_ns\":%" PRIu64 ",\"wire_start_ns\":%" PRIu64
                ",\"ttft_ns\":%" PRIu64 ",\"wire_ttft_ns\":%" PRIu64 "}\n",
                rec, r->id, r->start, r->start + SEND_LAG, r->resp[0] - r->start,
                (r->resp[0] - RECV_LAG) - (r->start + SEND_LAG));
        rec++;
    }
    fprintf(f, "],\"window_boundaries\":[%" PRIu64 ",%" PRIu64 "]}],\"version\":\"\",\"service_kind\":\"triton\","
               "\"endpoint\":\"\"}\n",
            WALL0 + 90 * MS, WALL0 + 2000 * MS);
    int rc = ferror(f) || ferror(t) ? -1 : 0;
    if (fclose(f) != 0) rc = -1;
    if (fclose(t) != 0) rc = -1;
    return rc;
}

int main(int argc, char **argv)
{
    unsigned threads = 2, requests = 4, before = 1;
    static const struct option longs[] = {{"threads", required_argument, NULL, 't'},
                                          {"requests", required_argument, NULL, 'r'},
                                          {"before", required_argument, NULL, 'b'},
                                          {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (o == 't') threads = (unsigned)atoi(optarg);
        else if (o == 'r') requests = (unsigned)atoi(optarg);
        else if (o == 'b') before = (unsigned)atoi(optarg);
        else return 2;
    }
    if (argc - optind != 3 || threads < 1 || threads > 2 || requests < 1 || requests > 5 || before >= requests) {
        fprintf(stderr, "usage: tttritongen PCAP EXPORT TRUTH [--threads 1..2] [--requests 1..5] "
                        "[--before K < requests]\n");
        return 2;
    }
    req rs[10];
    size_t n = (size_t)threads * requests;
    plan(rs, threads, requests);
    h2_script s;
    script(&s, rs, n);
    int rc = write_pcap(argv[optind], &s);
    if (rc == 0) rc = write_export(argv[optind + 1], argv[optind + 2], rs, n, before);
    h2_script_free(&s);
    if (rc != 0) {
        fprintf(stderr, "tttritongen: cannot write the outputs\n");
        return 1;
    }
    return 0;
}
