#!/usr/bin/env bash
# The uplink and downlink on /metrics (issue 14: "the decomposition parts
# as histograms ... what the vantages in use allow"): `watch --port P
# --metrics --events --json` over serve and 10 curl requests on one host,
# both ends traced. Each request's server and client views are paired live
# by connection and TCP sequence number (export/live_join.c):
# tokentap_downlink_seconds{vantage="joined"} counts the 10 requests and its
# sum equals, to the microsecond, the sum over the same requests of the
# client's first-token ready instant minus the server's first-token write,
# both read from watch's own event listing; tokentap_uplink_seconds counts
# 10, each within (0, 50 ms) on loopback.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work_dir
need_bpf "$work"
ready_instants || skip "no ready instants on this kernel"
start_serve "$work" --profile vllm --ttft-ms 3 --itl-ms 1 --tokens 6
TOKENTAP_NO_TLS=1 "$TT" watch --port "$SERVE_PORT" --metrics 127.0.0.1:0 -q --events --json -o "$work/events.json" \
    > /dev/null 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
mport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/watch.err")
body='{"model":"m-links","stream":true,"max_tokens":6,"messages":[{"role":"user","content":"x"}]}'
for i in $(seq 10); do
    curl -sN -o /dev/null -H 'content-type: application/json' -H "x-request-id: ln-$i" -d "$body" \
        "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" || fail "curl $i"
done
for _ in $(seq 50); do
    curl -sS "http://127.0.0.1:$mport/metrics" > "$work/page.txt"
    grep -q '^tokentap_downlink_seconds_count{.*} 10$' "$work/page.txt" && break
    sleep 0.1
done
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY'
import re, sys
from json_docs import by_vantage
work = sys.argv[1]
page = open(f"{work}/page.txt").read()
def one(name):
    vals = [(m.group(1), float(m.group(2))) for m in re.finditer(r'^%s\{([^}]*)\} (\S+)$' % name, page, re.M)]
    assert len(vals) == 1 and 'vantage="joined"' in vals[0][0] and 'gen_ai_request_model="m-links"' in vals[0][0], (name, vals)
    return vals[0][1]
docs = by_vantage(f"{work}/events.json")
def first_token(vantage):
    out = {}
    for r in docs[vantage]["requests"]:
        tokens = [e for e in r["events"] if e["kind"] == "TOKEN"]
        out[r["request_id"]] = tokens[0]
    return out
server, client = first_token("server"), first_token("client")
ids = sorted(k for k in server if k and k.startswith("ln-"))
assert len(ids) == 10 and all(k in client for k in ids), (ids, sorted(client))
own = sum(client[k]["ready_ns"] - server[k]["dispatch_mono_ns"] for k in ids)
count, total = one("tokentap_downlink_seconds_count"), one("tokentap_downlink_seconds_sum")
assert count == 10 and abs(total * 1e9 - own) <= 1000, (count, total * 1e9, own)
up_count, up_sum = one("tokentap_uplink_seconds_count"), one("tokentap_uplink_seconds_sum")
def instants(vantage, key):
    return {r["request_id"]: r[key] for r in docs[vantage]["requests"]}
ready, sent = instants("server", "req_ready_mono_ns"), instants("client", "req_first_mono_ns")
assert up_count == 10 and 0 < up_sum < 10 * 0.05, (up_count, up_sum, [(k, ready.get(k), sent.get(k)) for k in ids])
print("links: 10 requests paired live; downlink sum %.1f us = the event listing's %.1f us; uplink mean %.1f us"
      % (total * 1e6, own / 1e3, up_sum / up_count * 1e6))
PY
