#!/usr/bin/env bash
# tokentap run: the LD_PRELOAD probe's client vantage, no root needed.
#  1. curl (under sh, so exec and fork are followed) streams 2 requests from
#     tokentap serve under `tokentap run`: each output byte-identical to the
#     same requests made without the probe (a second serve, same seed); every
#     token write in serve's log is a TOKEN event at the client vantage, after
#     serve wrote it; no ring file is left behind.
#  2. python3 aiohttp streams 4 requests and stamps every read with
#     time.perf_counter_ns() as the bytes reach its protocol: the probe's
#     instant of the read that completed each token event is <= that stamp
#     and within 50 us of it (median).
#  3. -o DIR: tokentap analyze DIR reads client.pcap back: the same requests
#     and token instants as the live report.
#  4. CMD's exit status passes through (exit N, signal N -> 128+N, 127 for a
#     command that does not exist).
#  5. a close-delimited response (python3 http.server, Connection: close, no
#     Content-Length): curl reads to end of file, so the request is complete
#     at the client vantage, live and in `run -o DIR` read back by analyze.
set -eu
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl not installed"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
shm_before=$(ls -d /dev/shm/tokentap-run.* 2>/dev/null | wc -l)

req() { # req ID PORT: one streamed chat completion
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $1" \
        -d '{"model":"m","stream":true,"max_tokens":25,"messages":[{"role":"user","content":"hi"}]}' \
        "http://127.0.0.1:$2/v1/chat/completions"
}

# 1. the same two requests without and with the probe, each from a fresh serve
mkdir "$work/plain" "$work/probe"
start_serve "$work/plain" --profile vllm --ttft-ms 10 --itl-ms 3 --created 1700000000 --seed 7
req cu-1 "$SERVE_PORT" > "$work/plain/c1.out"; req cu-2 "$SERVE_PORT" > "$work/plain/c2.out"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || true
start_serve "$work/probe" --profile vllm --ttft-ms 10 --itl-ms 3 --created 1700000000 --seed 7
spid=$SERVE_PID port=$SERVE_PORT
export -f req
"$TT" run --json --events --report "$work/probe/events.json" -- \
    bash -c "req cu-1 $port > '$work/probe/c1.out' && req cu-2 $port > '$work/probe/c2.out'" \
    2> "$work/probe/run.err" || fail "run exit $?: $(cat "$work/probe/run.err")"
cmp "$work/plain/c1.out" "$work/probe/c1.out" || fail "curl's output differs under the probe (1)"
cmp "$work/plain/c2.out" "$work/probe/c2.out" || fail "curl's output differs under the probe (2)"
grep -q 'ring full: 0 records' "$work/probe/run.err" || fail "records dropped: $(cat "$work/probe/run.err")"

# 2. aiohttp with its own read log
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null && have_aiohttp=1 || have_aiohttp=
if [ -n "$have_aiohttp" ]; then
"$TT" run --json --events --report "$work/probe/aio.json" -- /usr/bin/python3 "$(dirname "$0")/aiohttp_read_log_client.py" "$port" \
    "$work/probe/client.jsonl" 2> "$work/probe/aio.err" || fail "run (aiohttp) exit $?: $(cat "$work/probe/aio.err")"
fi

# 3. -o DIR, read back by analyze
"$TT" run -o "$work/rec" --report /dev/null -- bash -c "req cu-3 $port > /dev/null" 2> "$work/rec.err" \
    || fail "run -o exit $?: $(cat "$work/rec.err")"
[ "$(stat -c %a "$work/rec")" = 700 ] || fail "DIR mode $(stat -c %a "$work/rec")"
"$TT" analyze --json "$work/rec" > "$work/rec.json" 2> "$work/rec_analyze.err" \
    || fail "analyze DIR exit $?: $(cat "$work/rec_analyze.err")"
"$TT" run --json --events --report "$work/rec_live.json" -o "$work/rec2" -- bash -c "req cu-4 $port > /dev/null" \
    2> "$work/rec2.err" || fail "run -o (2) exit $?: $(cat "$work/rec2.err")"
"$TT" analyze --json --events "$work/rec2" > "$work/rec2.json" 2> "$work/rec2_analyze.err" \
    || fail "analyze DIR (2) exit $?: $(cat "$work/rec2_analyze.err")"
kill -TERM "$spid"; wait "$spid" || fail "serve exit $?"

# 4. exit statuses
rc=0; "$TT" run -- sh -c 'exit 7' 2> /dev/null || rc=$?; [ $rc = 7 ] || fail "exit 7 came back as $rc"
rc=0; "$TT" run -- sh -c 'kill -KILL $$' 2> /dev/null || rc=$?; [ $rc = 137 ] || fail "SIGKILL came back as $rc"
rc=0; "$TT" run -- "$work/no-such-command" 2> /dev/null || rc=$?; [ $rc = 127 ] || fail "a missing command came back as $rc"
rc=0; "$TT" run 2> /dev/null || rc=$?; [ $rc = 2 ] || fail "no command came back as $rc"
# 5. close-delimited
/usr/bin/python3 "$(dirname "$0")/close_sse_server.py" 5 2 > "$work/close_port" 2> "$work/close_srv.err" &
close_srv=$!
for _ in $(seq 50); do [ -s "$work/close_port" ] && break; sleep 0.1; done
cport=$(cat "$work/close_port"); [ -n "$cport" ] || fail "the close-delimited server did not start: $(cat "$work/close_srv.err")"
"$TT" run -o "$work/rec3" --json --report "$work/close_live.json" -- bash -c "req cd-1 $cport > /dev/null" \
    2> "$work/close.err" || fail "run (close-delimited) exit $?: $(cat "$work/close.err")"
"$TT" analyze --json "$work/rec3" > "$work/close_back.json" 2> "$work/close_analyze.err" \
    || fail "analyze DIR (close-delimited) exit $?: $(cat "$work/close_analyze.err")"
kill "$close_srv"; wait "$close_srv" 2>/dev/null || true

shm_after=$(ls -d /dev/shm/tokentap-run.* 2>/dev/null | wc -l)
[ "$shm_after" -le "$shm_before" ] || fail "ring directories left in /dev/shm"

/usr/bin/python3 - "$work" "$have_aiohttp" <<'PY'
import json, statistics, sys
work, have_aiohttp = sys.argv[1], sys.argv[2]
log = [json.loads(l) for l in open(f"{work}/probe/serve.log")]
def token_writes(rid):
    return [e for e in log if e["type"] == "write" and e["request_id"] == rid
            and any(k == "token" for _, k in e["events"])]
def check(rep, want, n_tokens):
    assert rep["vantage"] == "client", rep["vantage"]
    reqs = {r["request_id"]: r for r in rep["requests"]}
    assert set(reqs) == want, sorted(reqs)
    out = {}
    for rid in sorted(want):
        writes = token_writes(rid)
        toks = [e["dispatch_mono_ns"] for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
        assert len(writes) == n_tokens, (rid, len(writes))
        assert len(toks) == len(writes), (rid, len(toks), len(writes))
        assert all(t > w["mono_ns"] for t, w in zip(toks, writes)), f"{rid}: a token seen before serve wrote it"
        out[rid] = toks
    return out
check(json.load(open(f"{work}/probe/events.json")), {"cu-1", "cu-2"}, 25)
msg = "tokentap run: curl under bash, output identical with and without the probe, 50 token writes seen"
if have_aiohttp:
    toks = check(json.load(open(f"{work}/probe/aio.json")), {f"cl-{i}" for i in range(4)}, 30)
    reads = [json.loads(l) for l in open(f"{work}/probe/client.jsonl")]
    diffs = []
    for rid, ts in toks.items():
        mine = sorted(r["recv_ns"] for r in reads if r["request_id"] == rid)
        for t in ts:
            later = [r for r in mine if r >= t]
            assert later, f"{rid}: no client read stamped after the probe's instant {t}"
            diffs.append(later[0] - t)
    med = statistics.median(diffs)
    msg += (f"; aiohttp's own read stamp minus the probe's instant over {len(diffs)} tokens: median "
            f"{med/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
    assert med <= 50_000, med
rec = json.load(open(f"{work}/rec.json"))
ids = [r.get("request_id") for r in rec["requests"]]
assert ids == ["cu-3"], ids
live = json.load(open(f"{work}/rec_live.json"))
back = json.load(open(f"{work}/rec2.json"))
lt = [e["dispatch_mono_ns"] for r in live["requests"] for e in r["events"] if e["kind"] == "TOKEN"]
bt = [e["dispatch_mono_ns"] for r in back["requests"] for e in r["events"] if e["kind"] == "TOKEN"]
assert len(lt) == 25 and lt == bt, (len(lt), len(bt))
msg += "; -o DIR analyzed back with the same 25 token instants"
for name in ("close_live", "close_back"):
    rep = json.load(open(f"{work}/{name}.json"))
    got = [(r["request_id"], r["complete"], r["incomplete_reasons"]) for r in rep["requests"]]
    assert got == [("cd-1", True, None)], (name, got)
    toks = rep["requests"][0].get("token_events", rep["requests"][0].get("vantages", {}).get("client", {}).get("token_events"))
    assert toks == 5, (name, toks)
msg += "; a close-delimited response complete, live and in analyze DIR"
print(msg)
PY
