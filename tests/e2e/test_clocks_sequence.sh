#!/usr/bin/env bash
# Two hosts matched by TCP sequence numbers (docs/clocks.md): `tokentap
# serve` in network namespace tt-srv behind a veth pair, recorded there by
# `record --pid` (server vantage, the server host's wire); a Python client
# in the root namespace sends 8 requests on one keep-alive connection,
# without x-request-id, and its host is recorded by `record --pid` (client
# vantage, the client host's wire) that starts only after the second
# request: the client host's recording has 6 requests, as ordinals 0..5 of
# a connection where the server's has 0..7. The client host's recording is
# then rewritten 5 s ahead (tests/tools/retime_recording.py: eBPF stamps
# both on one clock, so the truth is exactly -5 s).
#  1. `analyze --json SRV CLI`: the 6 requests matched by TCP sequence
#     number (none by ordinal, which would pair each with the one two
#     before it), in every pair of vantages: client/server, client/wire,
#     wire/server and the two wires; the true offset inside offset +-
#     uncertainty; the wires' bounds make the interval no wider than with
#     the socket vantages alone (the same recordings without wire.pcap).
#     The text report says which matched how.
#  2. the 6 are joined at server, client, wire and client_wire (the client
#     host's wire) by sequence number too (by ordinal the client's first
#     would meet the server's first, two requests earlier); their uplink and
#     downlink lie within their uncertainty (+ 2 us) of the same two
#     recordings before the rewrite (one clock: method same-host, no fit),
#     and so do the three stretches of each: client -> its wire and the
#     server's wire -> server stay on one host (no uncertainty, within
#     50 ns), wire -> wire crosses (its uncertainty). The text report has
#     the wire-to-wire rows.
#  3. the client host's recording cut short (its client.pcap and wire.pcap
#     truncated inside a record at 60 %): exit 5, each damaged file said
#     once, and the report of what came before still puts the truth inside
#     the interval from the requests left.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "network namespaces, eBPF"
command -v ip >/dev/null || skip "ip not installed"
work=$(mktemp -d)
ns=tt-sq-$$ va=ttsa$$ vb=ttsb$$
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    wait 2>/dev/null || true
    netns_pair_del "$ns" "$va"
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
need_bpf "$work"
netns_pair "$ns" "$va" "$vb" 10.232.0

ip netns exec "$ns" "$TT" serve --listen 10.232.0.2:0 --profile vllm --ttft-ms 10 --itl-ms 2 --tokens 6 \
    > "$work/serve.out" 2> "$work/serve.err" &
spid=$!
port=$(wait_listening "$work/serve.out")
[ -n "$port" ] || fail "serve did not start: $(cat "$work/serve.err")"
ip netns exec "$ns" "$TT" record -o "$work/srv" --pid "$spid" -i "$vb" > /dev/null 2> "$work/srv.err" &
rsrv=$!
for _ in $(seq 50); do grep -q "recording into" "$work/srv.err" 2>/dev/null && break; sleep 0.1; done
grep -q 'recording into' "$work/srv.err" || fail "record srv: $(cat "$work/srv.err")"

# the client: 2 requests, then waits for the go file, then 6 more, one connection
/usr/bin/python3 - "$port" "$work/go" > "$work/client.out" 2> "$work/client.err" <<'PY' &
import http.client, json, os, sys, time
port, go = int(sys.argv[1]), sys.argv[2]
body = json.dumps({"model": "m", "stream": True, "max_tokens": 6, "messages": [{"role": "user", "content": "x"}]})
conn = http.client.HTTPConnection("10.232.0.2", port)
for i in range(8):
    if i == 2:
        deadline = time.time() + 10
        while not os.path.exists(go) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
    conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status
print("done")
PY
cpid=$!
sleep 1
"$TT" record -o "$work/cli-raw" --pid "$cpid" -i "$va" --port "$port" > /dev/null 2> "$work/cli.err" &
rcli=$!
for _ in $(seq 50); do grep -q "recording into" "$work/cli.err" 2>/dev/null && break; sleep 0.1; done
grep -q 'recording into' "$work/cli.err" || fail "record cli: $(cat "$work/cli.err")"
touch "$work/go"
wait "$cpid" || fail "client: $(cat "$work/client.err")"
sleep 0.5
kill -INT "$rsrv" "$rcli"
wait "$rsrv" || fail "record srv: $(cat "$work/srv.err")"
wait "$rcli" || fail "record cli: $(cat "$work/cli.err")"
/usr/bin/python3 "$(dirname "$0")/../tools/retime_recording.py" "$work/cli-raw" "$work/cli" 5000000000 0 \
    || fail "retime failed"

# the same recordings without their wires
for d in srv cli; do
    mkdir -m 700 "$work/$d-nowire"
    cp "$work/$d"/*.pcap "$work/$d/manifest.json" "$work/$d-nowire/"
    rm "$work/$d-nowire/wire.pcap"
done

# 1. and 2.
"$TT" analyze --json -o "$work/two.json" "$work/srv" "$work/cli" 2> "$work/two.err" \
    || fail "analyze: $(cat "$work/two.err")"
"$TT" analyze --json -o "$work/nowire.json" "$work/srv-nowire" "$work/cli-nowire" 2> "$work/nowire.err" \
    || fail "analyze without wires: $(cat "$work/nowire.err")"
"$TT" analyze --json -o "$work/truth.json" "$work/srv" "$work/cli-raw" 2> "$work/truth.err" \
    || fail "analyze one clock: $(cat "$work/truth.err")"
"$TT" analyze "$work/srv" "$work/cli" > "$work/two.txt" 2>&1 || fail "analyze (text)"
grep -q 'client (.*cli) with server (.*srv): 0 requests by x-request-id, 6 by TCP sequence number, 0 by connection' \
    "$work/two.txt" || fail "the text does not say how requests matched: $(grep -A6 '^clocks' "$work/two.txt")"
grep -q '^  client wire -> server wire ' "$work/two.txt" && grep -q '^  server wire -> client wire ' "$work/two.txt" \
    || fail "no wire-to-wire rows in the text: $(grep -A12 'TTFT breakdown' "$work/two.txt")"
/usr/bin/python3 - "$work/two.json" "$work/nowire.json" "$work/truth.json" <<'PY'
import json, sys
two, nowire, truth = (json.load(open(p)) for p in sys.argv[1:4])
assert truth["clocks"][1]["method"] == "same-host", truth["clocks"][1]
cli = two["clocks"][1]
assert cli["method"] == "traffic", cli
assert cli["requests_matched"] == {"id": 0, "sequence": 6, "connection": 0}, cli["requests_matched"]
pairs = {(p["client_side"], p["server_side"]): p for p in cli["vantage_pairs"]}
assert set(pairs) == {("client", "server"), ("client", "wire"), ("wire", "server"), ("wire", "wire")}, pairs
for k, p in pairs.items():
    assert p["requests_matched"]["sequence"] == 6 and p["requests_matched"]["connection"] == 0, (k, p)
    assert p["bounds"] >= 6 * 2, (k, p)
u = cli["uncertainty_ns"]
assert abs(cli["offset_ns"] - (-5_000_000_000)) <= u, cli
u_sockets = nowire["clocks"][1]["uncertainty_ns"]
assert u <= u_sockets, ("the wires' bounds made it wider", u, u_sockets)
def joined(doc):
    return [r for r in doc["requests"] if set(r["vantages"]) >= {"server", "client", "wire", "client_wire"}]

def key(r):
    return r["connection"]["client"], r["connection"]["ordinal"]  # the server's ordinal (the first vantage)

reqs, truth_reqs = joined(two), {key(r): r for r in joined(truth)}
assert len(reqs) == 6 and len(truth_reqs) == 6, [sorted(r["vantages"]) for r in two["requests"]]
worst = 0
for r in reqs:
    assert r["join"]["keys"]["client"] == "sequence" and r["join"]["keys"]["client_wire"] == "sequence", r["join"]
    d, t = r["decomposition"], truth_reqs[key(r)]["decomposition"]
    for half in ("uplink", "downlink"):
        split, tsplit = d[half + "_split_ns"], t[half + "_split_ns"]
        assert len(split) == 3 and None not in split.values(), split
        unc = d[half + "_split_uncertainty_ns"]
        assert set(unc) == {"wire_to_wire"}, unc  # the only stretch between the hosts' clocks
        for seg, ns in split.items():
            slack = unc[seg] + 2000 if seg in unc else 50
            assert abs(ns - tsplit[seg]) <= slack, (key(r), half, seg, ns, tsplit[seg], slack)
    assert d["reference"] == "client" and d["server_ttft_ns"] == t["server_ttft_ns"], (d, t)
    for part in ("uplink", "downlink"):
        err = abs(d[part + "_ns"] - t[part + "_ns"])
        assert err <= d[part + "_uncertainty_ns"] + 2000, (key(r), part, d[part + "_ns"], t[part + "_ns"],
                                                           d[part + "_uncertainty_ns"])
        worst = max(worst, err)
print("sequence match: 6 of 6 requests by TCP sequence number in 4 vantage pairs; offset %.6f s +- %.1f us "
      "(truth -5 s; %.1f us with the socket vantages alone); uplink/downlink within %.1f us of one clock's"
      % (cli["offset_ns"] / 1e9, u / 1e3, u_sockets / 1e3, worst / 1e3))
PY

# 3.
mkdir -m 700 "$work/cut"
cp "$work/cli"/* "$work/cut/"
for f in client.pcap wire.pcap; do truncate -s $(( $(stat -c %s "$work/cut/$f") * 6 / 10 )) "$work/cut/$f"; done
rc=0; "$TT" analyze --json -o "$work/cut.json" "$work/srv" "$work/cut" 2> "$work/cut.err" || rc=$?
[ $rc = 5 ] || fail "cut short: exit $rc, wanted 5: $(cat "$work/cut.err")"
[ "$(grep -c 'truncated capture' "$work/cut.err")" = 2 ] || fail "each damaged file said once: $(cat "$work/cut.err")"
/usr/bin/python3 - "$work/cut.json" <<'PY' || fail "cut short: $(head -c 800 "$work/cut.json")"
import json, sys
c = json.load(open(sys.argv[1]))["clocks"][1]
m = c["requests_matched"]
assert c["method"] == "traffic" and 0 < m["sequence"] < 6 and m["connection"] == 0, c
assert abs(c["offset_ns"] - (-5_000_000_000)) <= c["uncertainty_ns"], c
PY
echo "clocks: two hosts matched by TCP sequence numbers, both wires bounding"
