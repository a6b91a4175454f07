#!/usr/bin/env bash
# gRPC through every vantage: `tokentap serve --http2 --profile triton-grpc
# --log` answers a grpcio client (tests/e2e/grpc_triton_client.py, the
# protocol genai-perf's triton service kind speaks) making two
# ModelStreamInfer calls at once on one connection: one with three requests
# 20 ms apart, one with two requests sent together (their responses
# interleave: tokentap routes them by the id they echo). `tokentap analyze`
# of a loopback capture, then of `tokentap record`'s server, client and
# wire pcaps (when eBPF loads), must give each request message as one
# complete request (dialect triton-grpc, framing grpc, its id as
# request_id, the call's stream_id) whose token events match serve's
# token writes for that request: the same count, the terminal (the final
# flag) seen, each instant no earlier than the write (1 ms slack at the
# wire, whose clock is the capture's) and the median within the tolerances
# of test_truth_http2.sh. grpcio's own receipt instants (CLOCK_MONOTONIC)
# bound the client vantage from above: no token event there after grpcio
# had the message. Then over TLS (serve --http2 --tls: ALPN h2, grpcio's
# secure channel): serve under `tokentap record --pid`, whose server_tls
# vantage (OpenSSL uprobes) holds the plaintext calls, checked the same
# way (grpcio's own TLS is BoringSSL inside the module: no client_tls).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "live capture needs root (libpcap on lo)"
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio / python3-protobuf not installed"
command -v protoc >/dev/null || skip "protoc not installed (Debian protobuf-compiler)"
[ -x "$BUILD/tools/ttcapture" ] || fail "$BUILD/tools/ttcapture not built"
work_dir
protoc -I tests/golden/grpc_dialect --python_out="$work" tests/golden/grpc_dialect/triton.proto \
    || fail "protoc could not compile triton.proto"
cat > "$work/spec.json" <<'JSON'
{"calls": [
 {"gap_ms": 20, "requests": [{"id": "g1a", "max_tokens": 6, "how": "input"},
                             {"id": "g1b", "max_tokens": 4, "how": "sampling"},
                             {"id": "g1c", "max_tokens": 5, "how": "input"}]},
 {"requests": [{"id": "g2a", "max_tokens": 7, "how": "input"}, {"id": "g2b", "max_tokens": 3, "how": "input"}]}
]}
JSON
client() { # DIR
    timeout 60 /usr/bin/python3 "$(dirname "$0")/grpc_triton_client.py" "$work" "127.0.0.1:$SERVE_PORT" \
        "$work/spec.json" "$1" > "$1/client.out" 2>&1 || fail "grpc client: $(cat "$1/client.out")"
}

# 1. the wire: a loopback capture
mkdir "$work/cap"
start_serve "$work/cap" --http2 --profile triton-grpc --seed 5 --ttft-ms 15 --itl-ms uniform:2:6
capture_during "$work/cap" "$SERVE_PORT" client "$work/cap"
stop_serve
checks=("$work/cap wire.json wall 1000 2000")

# 2. the server's and the client's syscalls: tokentap record (eBPF)
if bpf_loads "$work"; then
    mkdir "$work/rec"
    start_serve "$work/rec" --http2 --profile triton-grpc --seed 6 --ttft-ms 15 --itl-ms uniform:2:6
    record_during "$work/rec" "$SERVE_PORT" client "$work/rec"
    stop_serve
    checks+=("$work/rec server.json mono 50 50" "$work/rec client.json mono 50 2000" "$work/rec wire.json wall 1000 2000")

    # 3. gRPC over TLS: the server's TLS vantage
    mkdir "$work/tls"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls/k.pem" -out "$work/tls/c.pem" -days 1 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" > /dev/null 2>&1 \
        || fail "openssl could not make a certificate"
    start_serve "$work/tls" --http2 --tls "$work/tls/c.pem" "$work/tls/k.pem" --profile triton-grpc --seed 7 \
        --ttft-ms 15 --itl-ms uniform:2:6
    "$TT" record -o "$work/tls/dir" --pid "$SERVE_PID" --duration 60 2> "$work/tls/record.err" &
    rpid=$!
    for _ in $(seq 100); do grep -q '^tokentap record: recording' "$work/tls/record.err" 2>/dev/null && break; sleep 0.1; done
    grep -q '^tokentap record: recording' "$work/tls/record.err" || fail "record did not start: $(cat "$work/tls/record.err")"
    sleep 0.2
    GRPC_TLS_CA="$work/tls/c.pem" client "$work/tls"
    sleep 0.3
    kill -INT "$rpid"; wait "$rpid" || fail "record exit $?: $(cat "$work/tls/record.err")"
    stop_serve
    "$TT" analyze --json "$work/tls/dir/server_tls.pcap" > "$work/tls/server_tls.json" || fail "analyze server_tls.pcap exit $?"
    checks+=("$work/tls server_tls.json mono 50 50")
else
    echo "note: eBPF cannot load here, the record half is skipped: $(head -1 "$work/probe.err")"
fi

for c in "${checks[@]}"; do
    # shellcheck disable=SC2086
    set -- $c
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$@" <<'PY' || fail "$1/$2"
import json, sys
from serve_truth import fail, judge, load_log, token_instants, token_writes
d, rep_name, clk, early_us, med_us = sys.argv[1:6]
rep = json.load(open(f"{d}/{rep_name}"))
reqs, writes, shift = load_log(f"{d}/serve.log", clk)
ids = sorted(l["request_id"] for l in reqs)
if ids != ["g1a", "g1b", "g1c", "g2a", "g2b"]:
    fail(f"serve logged requests {ids}")
mine = {r["request_id"]: r for r in rep["requests"]}
if sorted(mine) != ids:
    fail(f"tokentap reports requests {sorted(mine)}: {[(r['request_id'], r.get('incomplete_reasons')) for r in rep['requests']]}")
calls = json.load(open(f"{d}/calls.json"))["calls"]
got_at = {}
for call in calls:
    for resp in call["responses"]:
        got_at.setdefault(resp["id"], []).append(resp["t"])
diffs = []
for s in reqs:
    rid = s["request_id"]
    r = mine[rid]
    (w,) = r["vantages"].values()
    what = f"request {rid}"
    if not r["complete"] or not r["terminal_seen"]:
        fail(f"{what}: complete {r['complete']} {r.get('incomplete_reasons')} terminal {r['terminal_seen']}")
    if r["dialect"] != "triton-grpc" or r["framing"] != "grpc" or r["status"] != 200:
        fail(f"{what}: {r['dialect']} {r['framing']} {r['status']}")
    if r["connection"]["stream_id"] != s["stream_id"]:
        fail(f"{what}: stream_id {r['connection']['stream_id']}, serve says {s['stream_id']}")
    if r["grpc_status"] not in (None, 0):
        fail(f"{what}: grpc_status {r['grpc_status']}")
    tok = token_writes(writes, shift, lambda e: e["stream_id"] == s["stream_id"] and e.get("request_id") == rid)
    if not tok or w["token_events"] != len(tok):
        fail(f"{what}: {w['token_events']} token events, serve wrote {len(tok)}")
    seen = token_instants(w)
    diffs += [a - b for a, b in zip(seen, tok)]
    if clk == "mono" and rep_name == "client.json":
        late = [a - b for a, b in zip(seen, got_at[rid])]
        if max(late) > 0:
            fail(f"{what}: a token event at the client's socket {max(late)} ns after grpcio had the message")
judge(f"{rep_name}: 5 requests on 2 calls", diffs, int(early_us), int(med_us))
PY
done
echo "PASS: test_truth_grpc"
