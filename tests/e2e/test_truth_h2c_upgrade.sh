#!/usr/bin/env bash
# h2c upgrade from HTTP/1.1 (RFC 7540 3.2) read from a loopback capture:
# `tokentap serve --http2 --profile vllm --log` answers three clients on
# one port: curl --http2 over http:// (a POST with Upgrade: h2c: 101, then
# the streamed answer over HTTP/2 on stream 1), `nghttp -u` (it upgrades
# with OPTIONS *, answered 404 on stream 1, then POSTs on a later stream of
# the same connection), and curl --http1.1 (plain HTTP/1.1, no upgrade).
# `tokentap analyze` of the capture must give each request as one complete
# request (status, method, path and stream id as serve logged them) and each streamed
# one's token events must match the serve log's token writes for that
# (peer, stream id): the same count, none seen more than 1 ms before serve
# wrote it, the median within 2 ms after (test_truth_http2.sh's
# tolerances). Then the same under `tokentap record` (when eBPF loads):
# server.pcap within 50 us (median) of serve's writes, client.pcap's and
# wire.pcap's after them, median < 2 ms.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "live capture needs root (libpcap on lo)"
command -v nghttp >/dev/null || skip "nghttp not installed (Debian nghttp2-client)"
command -v curl >/dev/null || skip "curl not installed"
curl --version | grep -qw HTTP2 || skip "curl without HTTP/2"
[ -x "$BUILD/tools/ttcapture" ] || fail "$BUILD/tools/ttcapture not built"
work_dir

printf '%s' '{"model":"m1","stream":true,"max_tokens":12,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}' \
    > "$work/body.json"
# clients DIR PORT
clients() {
    timeout 20 curl -sS --http2 -o "$1/curl-up.out" -D "$1/curl-up.hdr" -H 'content-type: application/json' \
        -H 'x-request-id: up-curl' --data-binary @"$work/body.json" \
        "http://127.0.0.1:$2/v1/chat/completions" 2> "$1/curl-up.err" || fail "curl --http2: $(cat "$1/curl-up.err")"
    grep -q '^HTTP/1.1 101' "$1/curl-up.hdr" && grep -q '^HTTP/2 200' "$1/curl-up.hdr" \
        || fail "curl --http2 did not upgrade: $(cat "$1/curl-up.hdr")"
    grep -q '^data: \[DONE\]' "$1/curl-up.out" || fail "curl --http2: no [DONE]"
    timeout 20 nghttp -u -v -d "$work/body.json" -H ':method: POST' -H 'content-type: application/json' \
        -H 'x-request-id: up-nghttp' "http://127.0.0.1:$2/v1/chat/completions" > "$1/nghttp.out" 2> "$1/nghttp.err" \
        || fail "nghttp -u: $(cat "$1/nghttp.err")"
    grep -q 'HTTP Upgrade success' "$1/nghttp.out" || fail "nghttp -u did not upgrade: $(head -20 "$1/nghttp.out")"
    grep -q '^data: \[DONE\]' "$1/nghttp.out" || fail "nghttp -u: no [DONE]"
    timeout 20 curl -sS --http1.1 -o "$1/curl-h1.out" -D "$1/curl-h1.hdr" -H 'content-type: application/json' \
        -H 'x-request-id: h1-curl' --data-binary @"$work/body.json" \
        "http://127.0.0.1:$2/v1/chat/completions" 2> "$1/curl-h1.err" || fail "curl --http1.1: $(cat "$1/curl-h1.err")"
    grep -q '^HTTP/1.1 200' "$1/curl-h1.hdr" || fail "curl --http1.1: $(cat "$1/curl-h1.hdr")"
}

# 1. the wire: a loopback capture
mkdir "$work/cap"
start_serve "$work/cap" --profile vllm --http2 --seed 5 --ttft-ms 15 --itl-ms uniform:2:6
capture_during "$work/cap" "$SERVE_PORT" clients "$work/cap" "$SERVE_PORT"
stop_serve
checks=("$work/cap/serve.log $work/cap/wire.json wall 1000 2000")

# 2. the server's and the client's syscalls: tokentap record (eBPF)
if bpf_loads "$work"; then
    mkdir "$work/rec"
    start_serve "$work/rec" --profile vllm --http2 --seed 6 --ttft-ms 15 --itl-ms uniform:2:6
    record_during "$work/rec" "$SERVE_PORT" clients "$work/rec" "$SERVE_PORT"
    stop_serve
    checks+=("$work/rec/serve.log $work/rec/server.json mono 50 50"
             "$work/rec/serve.log $work/rec/client.json mono 50 2000"
             "$work/rec/serve.log $work/rec/wire.json wall 1000 2000")
else
    echo "note: eBPF cannot load here, the record half is skipped: $(head -1 "$work/probe.err")"
fi

for c in "${checks[@]}"; do
    # shellcheck disable=SC2086
    set -- $c
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$@" <<'PY' || fail "$2"
import json, sys
from serve_truth import fail, judge, load_log, token_instants, token_writes
log_path, rep_path, clk, early_us, med_us = sys.argv[1:6]
rep = json.load(open(rep_path))
reqs, writes, shift = load_log(log_path, clk)
# serve: curl's upgraded POST (stream 1), nghttp's OPTIONS (stream 1) and
# POST (a later stream), curl's HTTP/1.1 POST (no stream id)
kinds = sorted((l["method"], l.get("stream_id", 0) == 1, "stream_id" in l) for l in reqs)
want = sorted([("POST", True, True), ("OPTIONS", True, True), ("POST", False, True), ("POST", False, False)])
if kinds != want:
    fail(f"serve log requests {kinds}, want {want}")
if len(rep["requests"]) != 4:
    fail(f"analyze reports {len(rep['requests'])} requests, want 4: "
         f"{[(r['method'], r['path'], r.get('incomplete_reasons')) for r in rep['requests']]}")
by_peer = {}
for l in reqs:
    by_peer.setdefault(l["peer"], []).append(l)
mine = {}
for r in rep["requests"]:
    mine.setdefault(r["connection"]["client"], []).append(r)
if sorted(map(len, by_peer.values())) != [1, 1, 2] or sorted(map(len, mine.values())) != [1, 1, 2]:
    fail(f"requests per connection: serve {[len(v) for v in by_peer.values()]}, tokentap {[len(v) for v in mine.values()]}")
diffs, streamed = [], 0
for peer, sl in by_peer.items():
    tl = mine.get(peer)
    if tl is None:
        fail(f"no request of {peer} in the report (have {sorted(mine)})")
    sl.sort(key=lambda l: l.get("stream_id", 0))
    tl.sort(key=lambda r: r["connection"]["ordinal"])
    for s, r in zip(sl, tl):
        sid = s.get("stream_id", 0)
        what = f"{peer} stream {sid} {s['method']} {s['path']}"
        (w,) = r["vantages"].values()
        if not r["complete"]:
            fail(f"{what}: incomplete {r.get('incomplete_reasons')}")
        if r["connection"]["stream_id"] != s.get("stream_id"):
            fail(f"{what}: tokentap's stream_id {r['connection']['stream_id']}")
        if r.get("status") != s["status"] or r["method"] != s["method"]:
            fail(f"{what}: tokentap {r.get('status')} {r['method']} {r['path']}")
        if s["method"] == "OPTIONS":
            if r["path"] != "*" or w["token_events"] != 0:
                fail(f"{what}: tokentap {r['path']}, {w['token_events']} token events")
            continue
        if r["path"] != "/v1/chat/completions" or not r["terminal_seen"]:
            fail(f"{what}: tokentap {r['path']} terminal {r['terminal_seen']}")
        if r["request_id"] not in ("", None, s["request_id"]):
            fail(f"{what}: request id {r['request_id']} != {s['request_id']}")
        tok = token_writes(writes, shift, lambda e: e["peer"] == peer and e.get("stream_id", 0) == sid)
        if w["token_events"] != len(tok) or len(tok) != 12:
            fail(f"{what}: {w['token_events']} token events, serve wrote {len(tok)}")
        if w["usage_completion_tokens"] != 12:
            fail(f"{what}: usage {w['usage_completion_tokens']}")
        diffs += [a - b for a, b in zip(token_instants(w), tok)]
        streamed += 1
if streamed != 3:
    fail(f"{streamed} streamed requests checked, want 3")
judge(f"{rep_path.split('/')[-2]}/{rep_path.split('/')[-1]}: 4 requests (curl upgraded, nghttp -u OPTIONS + POST, "
      "curl HTTP/1.1)", diffs, int(early_us), int(med_us))
PY
done
echo "PASS: test_truth_h2c_upgrade"
