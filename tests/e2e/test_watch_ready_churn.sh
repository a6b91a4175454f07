#!/usr/bin/env bash
# Ready instants under connection churn: 300 requests to serve, one after
# the other, two on each connection, closed after them (Python's
# http.client), with `watch --pid SERVE --vantage server --json`. The kernel
# reuses a closed socket's memory for the next one, so the same struct sock
# address is followed, forgotten at close and followed again hundreds of
# times: the counting filter in front of ready_socks (bpf/socktap_ready.bpf.h,
# ready_sock_hint) must come back to the same count each time, or a socket
# that is followed is turned away: its second request has no ready instant
# (the first one's socket is also found through its listening port).
# Pass: every one of the 300 requests is at the server vantage with its
# request's ready instant (req_ready_mono_ns) at or before the request's
# last byte was read, watch placed every ready instant it saw, and the
# kernel turned no socket away (0 "sockets not followed": a socket the
# filter missed is put in ready_socks again, which fails and is counted).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work_dir
need_bpf "$work"
ready_instants || skip "no ready instants on this kernel"
start_serve "$work" --profile vllm --ttft-ms 0 --itl-ms 0 --tokens 3
TOKENTAP_NO_TLS=1 "$TT" watch --pid "$SERVE_PID" --vantage server -q --json -o "$work/watch.json" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
/usr/bin/python3 - "$SERVE_PORT" <<'PY' || fail "the client failed"
import http.client, json, sys
port = int(sys.argv[1])
body = json.dumps({"model": "m", "stream": True, "max_tokens": 3, "messages": [{"role": "user", "content": "x"}]})
for conn in range(150):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for i in (2 * conn, 2 * conn + 1):
        c.request("POST", "/v1/chat/completions", body, {"content-type": "application/json", "x-request-id": "churn-%d" % i})
        r = c.getresponse()
        assert r.status == 200, r.status
        r.read()
    c.close()
PY
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
grep -q ' ready instants (0 not placed, 0 sockets not followed)' "$work/watch.err" ||
    fail "ready instants lost: $(grep -o '[0-9]* ready instants ([^)]*)' "$work/watch.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY' || fail "ready instants"
import sys
from json_docs import by_vantage
reqs = {r["request_id"]: r for r in by_vantage(f"{sys.argv[1]}/watch.json")["server"]["requests"]}
ids = ["churn-%d" % i for i in range(300)]
missing = [k for k in ids if k not in reqs]
assert not missing, ("requests not seen", missing[:5], len(missing))
views = {k: reqs[k]["vantages"]["server"] for k in ids}
no_ready = [k for k in ids if not views[k].get("req_ready_mono_ns")]
assert not no_ready, ("requests without a ready instant", no_ready[:5], len(no_ready))
late = [k for k in ids if views[k]["req_ready_mono_ns"] > views[k]["req_last_mono_ns"]]
assert not late, ("ready instants after the request's last byte was read", late[:5])
conns = {reqs[k]["connection"]["client"] for k in ids}
assert len(conns) == 150, ("connections", len(conns))
print("ready churn: 300 requests on 150 connections, one after the other, each with its ready instant")
PY
