#!/usr/bin/env bash
# Live loopback capture: a Python SSE server of the tests' own logs the wall
# instant before every write; curl streams from it while libpcap captures;
# tokentap analyze must find every token event, each within tolerance of the
# server's own write instant (the ground truth), and the same TTFT structure.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "live capture needs root (libpcap on lo)"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
/usr/bin/python3 tests/live/sse_server.py "$work/port" "$work/server.jsonl" &
server=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
start_capture "$work/live.pcap" "tcp port $port"
clients=()
for i in 1 2 3; do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: live-$i" \
        -d '{"model":"m","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi"}]}' \
        "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl-$i.out" &
    clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || fail "curl exit $?"; done
kill "$server"
stop_capture "$work/live.pcap"
"$BUILD/tokentap" analyze --json "$work/live.pcap" > "$work/report.json"
/usr/bin/python3 - "$work/report.json" "$work/server.jsonl" <<'PY'
import json, statistics, sys
rep = json.load(open(sys.argv[1]))
log = [json.loads(l) for l in open(sys.argv[2])]
reqs = {r["request_id"]: r for r in rep["requests"]}
assert set(reqs) == {"live-1", "live-2", "live-3"}, reqs.keys()
diffs = []
for rid, r in reqs.items():
    w = r["vantages"]["wire"]
    assert r["complete"], (rid, r)
    assert r["terminal_seen"], rid
    writes = [e["wall_ns"] for e in log if e["request_id"] == rid and e["kind"] == "token"]
    assert w["token_events"] == len(writes) == 12, (w["token_events"], len(writes))
    assert w["usage_completion_tokens"] == 12
    # token instants on the wire: first token, then ITLs
    wire = [w["first_token_mono_ns"]]
    for gap in w["itl_ns"]:
        wire.append(wire[-1] + gap)
    assert wire[-1] == w["last_token_mono_ns"]
    assert w["e2el_ns"] - w["ttft_ns"] == sum(w["itl_ns"])
    for a, b in zip(wire, writes):
        diffs.append(a - b)
med = statistics.median(diffs)
print(f"live: {len(diffs)} token events, wire minus server-write median {med/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
assert all(d >= -1_000_000 for d in diffs), "a token seen on the wire long before the server wrote it"
assert 0 <= med < 2_000_000, med
PY
