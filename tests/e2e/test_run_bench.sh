#!/usr/bin/env bash
# tokentap run --bench-result: the breakdown of a benchmark run under the
# probe, against the benchmark's own result file written by CMD.
# `tokentap serve` streams to vllm_like_client.py, which waits a KNOWN delay
# D (2 ms, spun from the instant its recv returned) before stamping each
# token with time.perf_counter_ns(), and writes vllm's --save-detailed JSON.
#  1. no root needed: `run --json --bench-result F --perfetto T -- client`:
#     every record joins its request by id at the client vantage; per
#     request the runs sum exactly to the reported TTFT and E2EL; the
#     median of client_lag_ns minus what the client really waited (at least D, OUT.waited) is within 2% of D or 50 us; the trace is JSON with
#     the reported tokens; the text report shows the TTFT breakdown.
#  2. as root (skipped when eBPF cannot load): the same with --server-port:
#     server, wire and client vantages, the five parts sum exactly; the
#     client->wire part of the uplink is not negative (the probe stamps a
#     send at entry, as eBPF does): its median >= -5 us (the pcap clock's
#     conversion to CLOCK_MONOTONIC is the noise).
#  3. a broken benchmark file is said on stderr, the report is still made
#     and the exit status stays CMD's; --bench-format alone is exit 2.
set -eu
. "$(dirname "$0")/lib.sh"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
client="$(dirname "$0")/vllm_like_client.py"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 5
port=$SERVE_PORT
delay_ns=2000000 n_req=6

# 1.
timeout 60 "$TT" run --json --bench-result "$work/v1.json" --perfetto "$work/trace.json" --report "$work/r1.json" -- \
    /usr/bin/python3 "$client" "$port" "$delay_ns" "$work/v1.json" "$n_req" rb- 2> "$work/r1.err" \
    || fail "run --bench-result exit $?: $(cat "$work/r1.err")"
timeout 60 "$TT" run --bench-result "$work/v1t.json" --bench-format vllm --bench-id-prefix rb- -- \
    /usr/bin/python3 "$client" "$port" "$delay_ns" "$work/v1t.json" 2 rb- > "$work/r1.txt" 2> "$work/r1t.err" \
    || fail "run --bench-result (text) exit $?: $(cat "$work/r1t.err")"
grep -q 'TTFT breakdown (ms), against reported' "$work/r1.txt" || fail "no TTFT breakdown in the text report"
grep -q '^client lag ' "$work/r1.txt" || fail "no client lag row: $(cat "$work/r1.txt")"

check() { # REPORT VANTAGES WAITED [TRACE]: the checks of 1 (and 2 when all vantages are there)
    /usr/bin/python3 - "$1" "$2" "$delay_ns" "$n_req" "${4:-}" "$3" <<'PY'
import json, statistics, sys
path, want, delay, n, trace = sys.argv[1], set(sys.argv[2].split(",")), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
waited = json.load(open(sys.argv[6]))
rep = json.load(open(path))
bench = rep["benchmark"]
assert bench["format"] == "vllm" and bench["records"] == n and bench["matched"] == n, bench
assert bench["by_key"]["id"] == n, bench["by_key"]
full = want == {"client", "wire", "server"}
parts = ("send_lag_ns", "uplink_ns", "server_queue_ns", "server_ttft_ns", "downlink_ns", "client_queue_ns",
         "client_lag_ns")
e2el_parts = ("send_lag_ns", "uplink_ns", "server_queue_ns", "server_e2el_ns", "downlink_ns", "client_queue_ns",
              "client_lag_ns")
reqs = [r for r in rep["requests"] if r["reported"]]
assert len(reqs) == n, len(reqs)
lags, client_to_wire = [], []
for r in reqs:
    rid, rp, d = r["request_id"], r["reported"], r["decomposition"]
    assert rid == f"rb-{rp['index']}", (rid, rp["index"])
    assert set(r["vantages"]) == want, (rid, sorted(r["vantages"]))
    assert d["reference"] == "reported" and d["ttft_ns"] == rp["ttft_ns"], (rid, d)
    assert sum(x["ns"] for x in d["runs"]) == rp["ttft_ns"], (rid, d["runs"], rp["ttft_ns"])
    assert sum(x["ns"] for x in d["e2el"]["runs"]) == rp["e2el_ns"], rid
    v = r["vantages"]
    assert d["send_lag_ns"] == v["client"]["req_first_mono_ns"] - rp["start_mono_ns"], rid
    if full:
        assert all(d[p] is not None for p in parts) and d["missing"] == [], (rid, d)
        assert sum(d[p] for p in parts) == rp["ttft_ns"], rid
        assert sum(d["e2el"][p] for p in e2el_parts) == rp["e2el_ns"], rid
        assert d["server_ttft_ns"] == v["server"]["ttft_ns"], rid
        client_to_wire.append(v["wire"]["req_first_mono_ns"] - v["client"]["req_first_mono_ns"])
    else:
        assert sorted(d["missing"]) == ["server", "wire"], d["missing"]
    assert r["disagreements"] == [], (rid, r["disagreements"])
    assert waited[rp["index"]] >= delay, (rid, waited[rp["index"]])
    lags.append(d["client_lag_ns"] - waited[rp["index"]])
med = statistics.median(lags)
tol = max(0.02 * delay, 50_000)
if trace:
    ev = json.load(open(trace))["traceEvents"]
    rtok = [e for e in ev if e["ph"] == "i" and e["cat"] == "reported-token"]
    assert len(rtok) == n * 20, len(rtok)
uplink = ""
if client_to_wire:
    up = statistics.median(client_to_wire)
    uplink = f"; client->wire uplink median {up/1e3:.1f} us"
    assert up >= -5_000, ("the client's send is stamped after the wire saw it", client_to_wire)
print(f"run --bench-result ({','.join(sorted(want))}): {n} requests joined by id; parts sum exactly; "
      f"client lag minus what the client waited (at least {delay/1e3:.0f} us): median {med/1e3:.1f} us "
      f"(tolerance {tol/1e3:.0f} us){uplink}")
assert abs(med) <= tol, (med, delay)
PY
}
check "$work/r1.json" client "$work/v1.json.waited" "$work/trace.json" || fail "client-only breakdown: $(cat "$work/r1.err")"

# 2.
bpf_rc=0
[ "$(id -u)" = 0 ] && { TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$work/bpf.err" || bpf_rc=$?; }
if [ "$(id -u)" = 0 ] && { [ $bpf_rc = 0 ] || [ $bpf_rc = 4 ]; }; then
    timeout 60 "$TT" run --json --server-port "$port" --bench-result "$work/v2.json" --report "$work/r2.json" -- \
        /usr/bin/python3 "$client" "$port" "$delay_ns" "$work/v2.json" "$n_req" rb- 2> "$work/r2.err" \
        || fail "run --server-port --bench-result exit $?: $(cat "$work/r2.err")"
    check "$work/r2.json" client,server,wire "$work/v2.json.waited" || fail "three-vantage breakdown: $(cat "$work/r2.err")"
else
    echo "run --bench-result: server and wire vantages not tried (not root, or eBPF cannot load)"
fi

# 3.
rc=0
"$TT" run --bench-result "$work/bad.json" -- bash -c "echo '{\"ttfts\": \"nope\"}' > '$work/bad.json';
    /usr/bin/python3 '$client' $port 0 '$work/unused.json' 1 rb-" > "$work/r3.txt" 2> "$work/r3.err" || rc=$?
[ $rc = 0 ] || fail "a broken benchmark file changed the exit status to $rc: $(cat "$work/r3.err")"
grep -q '^tokentap run: --bench-result .*bad.json: .*the report is made without it' "$work/r3.err" \
    || fail "no one-line reason for the broken file: $(cat "$work/r3.err")"
grep -q 'Serving Benchmark Result\|requests' "$work/r3.txt" || fail "no report without the benchmark file"
rc=0; "$TT" run --bench-format vllm -- true 2> /dev/null || rc=$?
[ $rc = 2 ] || fail "--bench-format without --bench-result: exit $rc, want 2"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve exit $?"
