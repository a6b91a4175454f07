/* ttsynthrec - two recording directories of one synthetic exchange, as two
 * hosts with different clocks would have recorded it, for the bench of
 * `tokentap analyze SRV CLI` (tests/bench/run.sh, "Clocks of two hosts").
 *
 * N requests, one connection each, one every 36 ms (100,000 = an hour),
 * each a vllm-style chat stream: the response head 100 us after the
 * request, the first of K token events 20 ms after it, one every 5 ms,
 * then [DONE]. SRV/server.pcap holds the server vantage on the server's
 * clock; CLI/client.pcap the client vantage on a clock 7 s ahead and
 * drifting 30 ppm (transits 50-250 us each way, drawn per message). Both
 * as `tokentap record` writes them (pcap_synth.h), each with a manifest
 * whose clock_id differs, so that analyze fits the clocks from the traffic.
 *
 * usage: ttsynthrec SRV_DIR CLI_DIR N_REQUESTS TOKENS */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/pcap_synth.h"
#include "test_rng.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t transit_ns(void)
{
    return 50000 + tt_xorshift64(&rng) % 200000;
}

#define T0_NS 1000000000000ull /* the server's clock at the first request */
static uint64_t client_clock(uint64_t server_ns)
{
    return (uint64_t)((int64_t)server_ns + 7000000000ll + (int64_t)((double)((int64_t)server_ns - (int64_t)T0_NS) * 30e-6));
}

static void put(tt_synth *s, const tt_conn_info *ci, tt_vantage v, tt_direction d, tt_chunk_kind k, uint64_t *off,
                const char *data, uint64_t ns)
{
    size_t len = data ? strlen(data) : 0;
    tt_chunk c = {.conn = ci, .vantage = v, .dir = d, .kind = k, .mono_ns = ns, .offset = off ? off[d] : 0,
                  .data = (const uint8_t *)data, .len = len};
    tt_synth_chunk(s, &c);
    if (off) off[d] += len;
}

/* wall_minus_mono: the host's wall clock less its monotonic one (both
 * hosts' wall clocks agree, as NTP keeps them; their monotonic ones do not). */
static int write_manifest(const char *dir, const char *file, const char *vantage, uint64_t start, uint64_t end,
                          const char *clock_id, uint64_t wall_minus_mono)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const uint64_t wall = wall_minus_mono;
    fprintf(f,
            "{\"tokentap\": {\"version\": \"synthetic\", \"schema\": \"tokentap.record/1\", \"command\": \"record\"},\n"
            " \"start_mono_ns\": %llu, \"end_mono_ns\": %llu, \"start_wall_ns\": %llu, \"end_wall_ns\": %llu,\n"
            " \"wall_to_mono_offset_ns\": {\"start\": %llu, \"end\": %llu},\n"
            " \"clock_id\": \"%s\", \"pids\": [], \"comms\": [], \"port\": 8000, \"comm\": null, \"cgroup\": null,\n"
            " \"iface\": \"synthetic\",\n"
            " \"files\": {\"%s\": \"%s\", \"wire\": null, \"wire_skipped\": \"synthetic recording\"}}\n",
            (unsigned long long)start, (unsigned long long)end, (unsigned long long)(start + wall),
            (unsigned long long)(end + wall), (unsigned long long)wall, (unsigned long long)wall, clock_id, vantage,
            file);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ttsynthrec SRV_DIR CLI_DIR N_REQUESTS TOKENS\n");
        return 2;
    }
    long n = atol(argv[3]), k = atol(argv[4]);
    if (n <= 0 || k <= 0) {
        fprintf(stderr, "ttsynthrec: N_REQUESTS and TOKENS must be positive\n");
        return 2;
    }
    char err[256], path[4096];
    tt_synth *srv = NULL, *cli = NULL;
    for (int d = 0; d < 2; d++) {
        if (mkdir(argv[1 + d], 0700) != 0) {
            fprintf(stderr, "ttsynthrec: %s: %s\n", argv[1 + d], strerror(errno));
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s", argv[1 + d], d ? "client.pcap" : "server.pcap");
        tt_synth **s = d ? &cli : &srv;
        if (!(*s = tt_synth_open(path, err, sizeof err))) {
            fprintf(stderr, "ttsynthrec: %s\n", err);
            return 1;
        }
    }
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    static const char token[] = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                                "\"delta\":{\"content\":\" tok\"},\"finish_reason\":null}]}\n\n";
    static const char done[] = "data: [DONE]\n\n";
    char request[512];
    uint64_t last = T0_NS;
    for (long i = 0; i < n; i++) {
        tt_conn_info ci = {.conn_id = (uint64_t)i + 1};
        ci.client = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 1}, .port = (uint16_t)(10000 + i % 50000)};
        ci.server = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 2}, .port = 8000};
        const char body[] = "{\"model\":\"m\",\"stream\":true,\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        snprintf(request, sizeof request,
                 "POST /v1/chat/completions HTTP/1.1\r\nHost: 10.0.0.2:8000\r\nx-request-id: sr-%ld\r\n"
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                 i, strlen(body), body);
        uint64_t s_req = T0_NS + (uint64_t)i * 36000000ull; /* the server reads the request */
        uint64_t c_req = client_clock(s_req - transit_ns());
        uint64_t so[2] = {0, 0}, co[2] = {0, 0};
        put(srv, &ci, TT_VANTAGE_SERVER, TT_DIR_C2S, TT_CHUNK_DATA, so, request, s_req);
        put(cli, &ci, TT_VANTAGE_CLIENT, TT_DIR_C2S, TT_CHUNK_DATA, co, request, c_req);
        uint64_t s_at = s_req + 100000;
        put(srv, &ci, TT_VANTAGE_SERVER, TT_DIR_S2C, TT_CHUNK_DATA, so, head, s_at);
        put(cli, &ci, TT_VANTAGE_CLIENT, TT_DIR_S2C, TT_CHUNK_DATA, co, head, client_clock(s_at + transit_ns()));
        for (long t = 0; t <= k; t++) {
            s_at = s_req + 20000000ull + (uint64_t)t * 5000000ull;
            const char *ev = t < k ? token : done;
            put(srv, &ci, TT_VANTAGE_SERVER, TT_DIR_S2C, TT_CHUNK_DATA, so, ev, s_at);
            put(cli, &ci, TT_VANTAGE_CLIENT, TT_DIR_S2C, TT_CHUNK_DATA, co, ev, client_clock(s_at + transit_ns()));
        }
        uint64_t s_end = s_at + 10000, c_end = client_clock(s_end + transit_ns());
        put(srv, &ci, TT_VANTAGE_SERVER, TT_DIR_S2C, TT_CHUNK_FIN, so, NULL, s_end);
        put(cli, &ci, TT_VANTAGE_CLIENT, TT_DIR_S2C, TT_CHUNK_FIN, co, NULL, c_end);
        put(cli, &ci, TT_VANTAGE_CLIENT, TT_DIR_C2S, TT_CHUNK_FIN, co, NULL, c_end + 1000);
        put(srv, &ci, TT_VANTAGE_SERVER, TT_DIR_C2S, TT_CHUNK_FIN, so, NULL, s_end + 200000);
        put(srv, &ci, TT_VANTAGE_SERVER, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, NULL, s_end + 200000);
        put(cli, &ci, TT_VANTAGE_CLIENT, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, NULL, c_end + 1000);
        if (s_end + 200000 > last) last = s_end + 200000;
    }
    int rc = tt_synth_close(srv) | tt_synth_close(cli);
    const uint64_t wall = 1700000000000000000ull;
    rc |= write_manifest(argv[1], "server.pcap", "server", T0_NS - 1000000, last, "synthetic-server-host/time:[1]",
                         wall);
    rc |= write_manifest(argv[2], "client.pcap", "client", client_clock(T0_NS) - 1000000, client_clock(last),
                         "synthetic-client-host/time:[2]", wall - 7000000000ull);
    if (rc) {
        fprintf(stderr, "ttsynthrec: writing the recordings failed\n");
        return 1;
    }
    printf("{\"requests\": %ld, \"tokens\": %ld}\n", n, k);
    return 0;
}
