#!/usr/bin/env bash
# The breakdown against a benchmark with a known client lag.
# `tokentap record` watches `tokentap serve` while a raw-socket python3
# client (vllm_like_client.py, shared with test_run_bench.sh) streams 8
# chat completions, one connection each, x-request-id <prefix><index> as
# vllm sends it. For every token event it reads, the
# client waits a KNOWN delay D (2 ms, spun from the instant its recv
# returned) before taking its own time.perf_counter_ns() stamp, and writes
# its TTFT, ITL and latency in vllm's --save-result --save-detailed layout
# (tests/data/import/vllm_detailed.json). Then `tokentap analyze DIR
# --bench-result FILE --json --perfetto TRACE`:
#  - every record joins its request by id, at all three vantages;
#  - per request the runs, and the seven parts (the two socket queues
#    included: record's eBPF vantages have the kernel's ready instants), sum exactly to the reported
#    TTFT (and E2EL); the median of client_lag_ns minus what the client really waited (at least D, OUT.waited) is within 2% of D or 50 us;
#  - the trace is valid JSON with one token instant per token event and
#    vantage, one reported-token instant per reported token, 9 TTFT segments
#    per request; the text report shows the breakdown; a broken benchmark
#    file is exit 3.
# Root; skipped when the BPF programs cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 5
spid=$SERVE_PID port=$SERVE_PORT

dir="$work/rec"
"$TT" record -o "$dir" --port "$port" --duration 30 2> "$work/record.err" &
rpid=$!
for _ in $(seq 50); do grep -q '^tokentap record: recording' "$work/record.err" 2>/dev/null && break; sleep 0.1; done
grep -q '^tokentap record: recording' "$work/record.err" || fail "record did not start: $(cat "$work/record.err")"
sleep 0.2

delay_ns=2000000 n_req=8
timeout 60 /usr/bin/python3 "$(dirname "$0")/vllm_like_client.py" "$port" "$delay_ns" "$work/vllm.json" "$n_req" \
    || fail "client failed"
sleep 0.3
kill -INT $rpid; wait $rpid || fail "record exit $?: $(cat "$work/record.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"

"$TT" analyze --json --bench-result "$work/vllm.json" --perfetto "$work/trace.json" "$dir" > "$work/report.json" \
    || fail "analyze --bench-result exit $?"
"$TT" analyze --bench-result "$work/vllm.json" --bench-format vllm "$dir" > "$work/report.txt" || fail "text exit $?"
grep -q 'TTFT breakdown (ms), against reported' "$work/report.txt" || fail "no TTFT breakdown in the text report"
grep -q '^client lag ' "$work/report.txt" || fail "no client lag row"
grep -q 'reported     client       wire     server' "$work/report.txt" || fail "no side-by-side columns"
echo '{"ttfts": "nope"}' > "$work/bad.json"
rc=0; "$TT" analyze --bench-result "$work/bad.json" --bench-format vllm "$dir" > /dev/null 2> "$work/bad.err" || rc=$?
[ $rc = 3 ] || fail "a broken benchmark file: exit $rc, want 3"
grep -q '^tokentap analyze: ' "$work/bad.err" || fail "no one-line reason for the broken file"

/usr/bin/python3 - "$work" "$delay_ns" "$n_req" <<'PY'
import json, statistics, sys
work, delay, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rep = json.load(open(f"{work}/report.json"))
waited = json.load(open(f"{work}/vllm.json.waited"))
bench = rep["benchmark"]
assert bench["format"] == "vllm" and bench["records"] == n and bench["matched"] == n, bench
assert bench["by_key"]["id"] == n, bench["by_key"]
parts = ("send_lag_ns", "uplink_ns", "server_queue_ns", "server_ttft_ns", "downlink_ns", "client_queue_ns",
         "client_lag_ns")
e2el_parts = ("send_lag_ns", "uplink_ns", "server_queue_ns", "server_e2el_ns", "downlink_ns", "client_queue_ns",
              "client_lag_ns")
lags, tokens = [], 0
reqs = [r for r in rep["requests"] if r["reported"]]
assert len(reqs) == n, len(reqs)
for r in reqs:
    rid, rp, d = r["request_id"], r["reported"], r["decomposition"]
    assert rid == f"bd-{rp['index']}", (rid, rp["index"])
    assert set(r["vantages"]) == {"server", "client", "wire"}, (rid, sorted(r["vantages"]))
    assert r["join"]["benchmark"]["key"] == "id", r["join"]
    assert d["reference"] == "reported" and d["ttft_ns"] == rp["ttft_ns"], (rid, d["reference"])
    assert sum(x["ns"] for x in d["runs"]) == rp["ttft_ns"], (rid, d["runs"], rp["ttft_ns"])
    assert all(d[p] is not None for p in parts), (rid, d)
    assert sum(d[p] for p in parts) == rp["ttft_ns"], rid
    assert d["missing"] == [], d["missing"]
    assert d["uplink_split_ns"]["client_to_wire"] + d["uplink_split_ns"]["wire_to_server"] == d["uplink_ns"]
    e = d["e2el"]
    assert sum(x["ns"] for x in e["runs"]) == rp["e2el_ns"] == sum(e[p] for p in e2el_parts), rid
    it = d["itl"]
    assert it["n"] == 19 and it["near"] == "client" and it["far"] == "server", it
    assert len(it["near_minus_far_ns"]) == 19 and it["reported_n"] == 19, it
    assert r["disagreements"] == [], (rid, r["disagreements"])
    # the parts are the vantages' own instants
    v = r["vantages"]
    assert d["server_ttft_ns"] == v["server"]["ttft_ns"], rid
    assert d["uplink_ns"] + d["server_queue_ns"] == v["server"]["req_first_mono_ns"] - v["client"]["req_first_mono_ns"], rid
    assert d["downlink_ns"] + d["client_queue_ns"] == v["client"]["first_token_mono_ns"] - v["server"]["first_token_mono_ns"], rid
    assert d["send_lag_ns"] == v["client"]["req_first_mono_ns"] - rp["start_mono_ns"], rid
    assert waited[rp["index"]] >= delay, (rid, waited[rp["index"]])
    lags.append(d["client_lag_ns"] - waited[rp["index"]])
    tokens += sum(v[x]["token_events"] for x in v)
med = statistics.median(lags)
tol = max(0.02 * delay, 50_000)
ov = rep["summary"]["overhead"]
assert ov["reference"] == "reported" and ov["client_lag_ns"]["n"] == n, ov["client_lag_ns"]

trace = json.load(open(f"{work}/trace.json"))
ev = trace["traceEvents"]
inst = [e for e in ev if e["ph"] == "i"]
tok = [e for e in inst if e["cat"] == "token"]
rtok = [e for e in inst if e["cat"] == "reported-token"]
slices = [e for e in ev if e["ph"] == "X" and e["cat"] == "ttft-part"]
assert len(tok) == tokens == n * 3 * 20, (len(tok), tokens)
assert len(rtok) == n * 20, len(rtok)
assert len(slices) == n * 9, len(slices)
assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in slices)
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert names == {"reported (benchmark)", "client", "wire", "server", "TTFT parts"}, names
print(f"breakdown: {n} requests joined to their vllm records by id at 3 vantages; parts sum exactly; "
      f"client lag minus what the client waited (at least {delay/1e3:.0f} us): median {med/1e3:.1f} us "
      f"(tolerance {tol/1e3:.0f} us); "
      f"trace: {len(tok)} token instants, {len(slices)} TTFT parts")
assert abs(med) <= tol, (med, delay)
PY
