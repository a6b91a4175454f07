#!/usr/bin/env bash
# tokentap watch on a keep-alive connection: python3 http.client sends 4
# streamed requests one after the other on one connection. At both the
# server and the client vantage (watch --port traces both ends) every
# request must be there, on the one connection, with every token write in
# serve's log as a TOKEN event; server-vantage instants (write enter) within
# 50 us (median) of the log's, client-vantage instants (read exit) after
# the log's. A second watch, not quiet, with --interval 0.5: its rolling
# summary lines count the 4 requests with TTFT and ITL medians, and Ctrl-C
# makes it write the full text report. Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 15 --itl-ms 3
spid=$SERVE_PID port=$SERVE_PORT

"$TT" watch --port "$port" --duration 30 --events --json -q -o "$work/events.json" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
"$TT" watch --port "$port" --interval 0.5 -o "$work/report.txt" 2> "$work/summary.err" &
spid2=$!
for _ in $(seq 50); do grep -q '^tokentap watch: tracing' "$work/summary.err" 2>/dev/null && break; sleep 0.1; done

/usr/bin/python3 - "$port" <<'PY' || fail "client failed"
import http.client, json, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
for i in range(1, 5):
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 15,
                       "messages": [{"role": "user", "content": "hi"}]})
    conn.request("POST", "/v1/chat/completions", body=body,
                 headers={"Content-Type": "application/json", "x-request-id": f"ka-{i}"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    assert b"[DONE]" in resp.read()
    assert not resp.will_close, "serve closed the keep-alive connection"
conn.close()
PY
sleep 1.2
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
kill -INT $spid2; wait $spid2 || fail "watch (summary) exit $?: $(cat "$work/summary.err")"
grep -Eq '^tokentap watch: \[[0-9.]+s\] \| server: 4 requests done \(0 incomplete\), TTFT median [0-9.]+ ms, ITL median [0-9.]+ ms \| client: 4 requests done \(0 incomplete\), TTFT median [0-9.]+ ms, ITL median [0-9.]+ ms \| lost: 0 records' \
    "$work/summary.err" || fail "no summary line with the 4 requests: $(cat "$work/summary.err")"
[ "$(grep -c '^server 127.0.0.1' "$work/summary.err")" = 4 ] || fail "not 4 per-request lines: $(cat "$work/summary.err")"
grep -q 'Serving Benchmark Result' "$work/report.txt" && grep -q 'ka-4' "$work/report.txt" || fail "no full report after Ctrl-C"
echo "watch --interval 0.5: summary line with both vantages' medians, a line per request, the full report on Ctrl-C"
kill -TERM $spid; wait $spid || fail "serve exit $?"
grep -q ' 0 ring-buffer drops' "$work/watch.err" || fail "ring buffer dropped records: $(cat "$work/watch.err")"

/usr/bin/python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
text = open(f"{work}/events.json").read()
docs, at, dec = {}, 0, json.JSONDecoder()
while at < len(text):
    if text[at].isspace():
        at += 1
        continue
    doc, at = dec.raw_decode(text, at)
    docs[doc["vantage"]] = doc
assert set(docs) == {"server", "client"}, sorted(docs)
log = [json.loads(l) for l in open(f"{work}/serve.log")]
want = [f"ka-{i}" for i in range(1, 5)]
peers = {e["peer"] for e in log if e["type"] == "request" and e["request_id"] in want}
assert len(peers) == 1, f"serve saw the requests on {len(peers)} connections"
ordinals = [e["ordinal"] for e in log if e["type"] == "request" and e["request_id"] in want]
assert ordinals == [1, 2, 3, 4], ordinals
d_server, d_client = [], []
for v, doc in docs.items():
    reqs = {r["request_id"]: r for r in doc["requests"]}
    assert sorted(reqs) == want, (v, sorted(reqs))
    for rid in want:
        writes = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
                  and any(k == "token" for _, k in e["events"])]
        toks = [e["first_mono_ns"] for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
        assert len(writes) == 15 and len(toks) == 15, (v, rid, len(writes), len(toks))
        if v == "server":
            d_server += [t - w for t, w in zip(toks, writes)]
        else:
            assert all(t > w for t, w in zip(toks, writes)), (v, rid)
            d_client += [t - w for t, w in zip(toks, writes)]
med_s, med_c = statistics.median(d_server), statistics.median(d_client)
print(f"watch keep-alive: 4 requests on one connection (serve's ordinals 1-4), 15/15 token writes each at the "
      f"server and client vantages; server minus log median {med_s/1e3:.1f} us, client minus log median "
      f"{med_c/1e3:.1f} us")
assert abs(med_s) <= 50_000, med_s
PY
