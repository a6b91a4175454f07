#!/usr/bin/env bash
# HTTP/2 with prior knowledge (h2c) read from a loopback capture: `tokentap
# serve --http2 --profile vllm --log` answers `nghttp` (one stream) and
# `h2load -n 20 -c 1 -m 10` (20 streams, 10 at a time, on one connection);
# `tokentap analyze` of the capture must give every stream as one complete
# request (status 200, terminal event) whose token events match the serve
# log's token writes for that stream (peer and stream id): the same count,
# each seen on the wire no earlier than 1 ms before serve wrote it and the
# median within 2 ms after (test_serve_capture.sh's tolerance). Then the
# same clients under `tokentap record` (when eBPF loads): server.pcap's
# token instants within 50 us (median) of serve's writes, as
# test_record.sh; client.pcap's and wire.pcap's after them, median < 2 ms.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "live capture needs root (libpcap on lo)"
command -v nghttp >/dev/null || skip "nghttp not installed (Debian nghttp2-client)"
command -v h2load >/dev/null || skip "h2load not installed (Debian nghttp2-client)"
[ -x "$BUILD/tools/ttcapture" ] || fail "$BUILD/tools/ttcapture not built"
work_dir

printf '%s' '{"model":"m1","stream":true,"max_tokens":12,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}' \
    > "$work/body.json"
# clients DIR PORT: nghttp (x-request-id h2-one), then h2load's 20 streams
clients() {
    timeout 20 nghttp -d "$work/body.json" -H ':method: POST' -H 'content-type: application/json' \
        -H 'x-request-id: h2-one' "http://127.0.0.1:$2/v1/chat/completions" > "$1/nghttp.out" 2> "$1/nghttp.err" \
        || fail "nghttp: $(cat "$1/nghttp.err")"
    timeout 30 h2load -n 20 -c 1 -m 10 -d "$work/body.json" -H 'content-type: application/json' \
        "http://127.0.0.1:$2/v1/chat/completions" > "$1/h2load.out" 2>&1 || fail "h2load: $(cat "$1/h2load.out")"
    grep -q '^requests: 20 total, 20 started, 20 done, 20 succeeded' "$1/h2load.out" \
        || fail "h2load: $(grep -E '^requests' "$1/h2load.out")"
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
if len(reqs) != 21:
    fail(f"{len(reqs)} request lines in the serve log, want 21")
if len(rep["requests"]) != 21:
    fail(f"analyze reports {len(rep['requests'])} requests, want 21: {[r.get('incomplete_reasons') for r in rep['requests']]}")
# a connection's streams in id order are its requests in tokentap's order
by_peer = {}
for l in reqs:
    by_peer.setdefault(l["peer"], []).append(l)
mine = {}
for r in rep["requests"]:
    mine.setdefault(r["connection"]["client"], []).append(r)
if sorted(len(v) for v in by_peer.values()) != [1, 20] or sorted(map(len, mine.values())) != [1, 20]:
    fail(f"requests per connection: serve {[len(v) for v in by_peer.values()]}, tokentap {[len(v) for v in mine.values()]}")
diffs = []
for peer, sl in by_peer.items():
    tl = mine.get(peer)
    if tl is None:
        fail(f"no request of {peer} in the report (have {sorted(mine)})")
    sl.sort(key=lambda l: l["stream_id"])
    tl.sort(key=lambda r: r["connection"]["ordinal"])
    for s, r in zip(sl, tl):
        what = f"{peer} stream {s['stream_id']}"
        (w,) = r["vantages"].values()
        if not r["complete"] or not r["terminal_seen"]:
            fail(f"{what}: complete {r['complete']} {r.get('incomplete_reasons')} terminal {r['terminal_seen']}")
        if r.get("status") not in (None, 200) or r["path"] != "/v1/chat/completions" or r["method"] != "POST":
            fail(f"{what}: {r.get('status')} {r['method']} {r['path']}")
        if s["request_id"] and s["request_id"] != "h2-one" and r["request_id"] not in ("", None, s["request_id"]):
            fail(f"{what}: request id {r['request_id']} != {s['request_id']}")
        tok = token_writes(writes, shift, lambda e: e["peer"] == peer and e["stream_id"] == s["stream_id"])
        if w["token_events"] != len(tok) or len(tok) != 12:
            fail(f"{what}: {w['token_events']} token events, serve wrote {len(tok)}")
        if w["usage_completion_tokens"] != 12:
            fail(f"{what}: usage {w['usage_completion_tokens']}")
        diffs += [a - b for a, b in zip(token_instants(w), tok)]
judge(f"{rep_path.split('/')[-2]}/{rep_path.split('/')[-1]}: 21 streams (nghttp 1, h2load 20 on one connection)",
      diffs, int(early_us), int(med_us))
PY
done
echo "PASS: test_truth_http2"
