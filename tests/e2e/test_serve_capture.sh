#!/usr/bin/env bash
# tokentap serve under a live loopback capture: vllm and tabby profiles,
# concurrent streams; `tokentap analyze` of the capture must find every token
# the serve log says was written (tabby: CRLF events split right, usage read
# from the final frame that still carries a choice), each token seen on the
# wire no earlier than serve wrote it and within tolerance after.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "live capture needs root (libpcap on lo)"
command -v curl >/dev/null || skip "curl not installed"
[ -x "$BUILD/tools/ttcapture" ] || fail "$BUILD/tools/ttcapture not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

for p in vllm tabby; do
    "$TT" serve --listen 127.0.0.1:0 --profile $p --log "$work/$p.log" --ttft-ms 15 --itl-ms uniform:3:8 \
        --seed 3 > "$work/$p.out" 2> "$work/$p.err" &
    echo $! > "$work/$p.pid"
done
vport=$(wait_listening "$work/vllm.out")
tport=$(wait_listening "$work/tabby.out")
[ -n "$vport" ] && [ -n "$tport" ] || fail "serve did not start: $(cat "$work"/*.err)"
start_capture "$work/serve.pcap" "tcp port $vport or tcp port $tport"
clients=()
for i in 1 2 3; do
    for p in vllm tabby; do
        port=$vport; [ $p = tabby ] && port=$tport
        curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $p-$i" \
            -d "{\"model\":\"m\",\"stream\":true,\"max_tokens\":$((10 * i)),\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
            "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl-$p-$i.out" &
        clients+=($!)
    done
done
curl -sS -N --max-time 10 -H "x-request-id: vllm-comp" -d '{"stream":true,"max_tokens":7,"prompt":"x"}' \
    "http://127.0.0.1:$vport/v1/completions" > "$work/curl-vllm-comp.out" &
clients+=($!)
for c in "${clients[@]}"; do wait "$c" || fail "curl exit $?"; done
stop_capture "$work/serve.pcap"
for p in vllm tabby; do kill -TERM "$(cat "$work/$p.pid")"; wait "$(cat "$work/$p.pid")" || fail "$p serve exit $?"; done
"$TT" analyze --json "$work/serve.pcap" > "$work/report.json" || fail "analyze exit $?"
/usr/bin/python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
rep = json.load(open(f"{work}/report.json"))
reqs = {r["request_id"]: r for r in rep["requests"]}
log = []
for p in ("vllm", "tabby"):
    lines = [json.loads(l) for l in open(f"{work}/{p}.log")]
    clock = lines[0]
    assert clock["type"] == "clock", clock
    for e in lines[1:]:   # the capture's instants are wall clock: move the log's there
        if "mono_ns" in e:
            e["mono_ns"] += clock["realtime_ns"] - clock["mono_ns"]
    log += lines
want = {f"{p}-{i}": 10 * i for p in ("vllm", "tabby") for i in (1, 2, 3)}
want["vllm-comp"] = 7
assert set(reqs) == set(want), sorted(reqs)
diffs = []
for rid, n in want.items():
    r = reqs[rid]
    w = r["vantages"]["wire"]
    assert r["complete"] and r["terminal_seen"], (rid, r)
    writes = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    assert len(writes) == n, (rid, len(writes))
    assert w["token_events"] == n, (rid, w["token_events"], n)
    if rid != "vllm-comp":
        assert w["usage_completion_tokens"] == n, (rid, w.get("usage_completion_tokens"))
    wire = [w["first_token_mono_ns"]]
    for gap in w["itl_ns"]:
        wire.append(wire[-1] + gap)
    assert len(wire) == n
    for a, b in zip(wire, writes):
        diffs.append(a - b)
med = statistics.median(diffs)
print(f"serve capture: {len(want)} streams (vllm, tabby), {len(diffs)} tokens found; wire minus serve write "
      f"median {med/1e3:.1f} us, min {min(diffs)/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
assert min(diffs) >= -1_000_000, "a token on the wire more than 1 ms before serve wrote it"
assert 0 <= med < 2_000_000, med
PY
