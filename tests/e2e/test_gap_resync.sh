#!/usr/bin/env bash
# A gap costs only the request it falls in (docs/framing.md, "Lost bytes").
# 40 streamed requests over 10 keep-alive connections of 4 (ttload against
# serve), captured on loopback; then the same capture with 1 % of the
# packets that carry payload left out (at least 6), and 2 more of the
# requests' packets and 2 of the response heads' (tests/tools/pcap_drop.py,
# fixed seed). `analyze --json` of both: a request
# no lost packet fell in (its connection's packets between its first request
# byte and its last response byte, from the whole capture) is measured in
# the lossy one and exactly as in the whole one (TTFT, every ITL, E2EL,
# token count); a request one fell in is incomplete with the reason gap, or
# absent when its request was lost; a response whose request was lost is
# reported on its own (no request id, request-not-captured), never paired
# with a later request; a request whose response head was lost is
# no-response, and the next response goes to the next request. At least one request after a cut one on the same connection must
# be measured, or the test proves nothing.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "packet capture on lo"
work_dir
start_serve "$work" --profile vllm --ttft-ms 5 --itl-ms 2 --tokens 16
start_capture "$work/whole.pcap" "tcp port $SERVE_PORT"
"$BUILD/tools/ttload" -c 10 -n 40 -T 16 "127.0.0.1:$SERVE_PORT" > "$work/load.out" 2>&1 || fail "ttload: $(cat "$work/load.out")"
stop_capture "$work/whole.pcap"
tests/tools/pcap_drop.py "$work/whole.pcap" "$work/lossy.pcap" --fraction 0.01 --seed 11 --min 6 \
    --to-port "$SERVE_PORT:2" --heads-from "$SERVE_PORT:2" > "$work/dropped.jsonl" || fail "pcap_drop"
"$TT" analyze --json -o "$work/whole.json" "$work/whole.pcap" 2> "$work/whole.err" || fail "analyze whole: $(cat "$work/whole.err")"
"$TT" analyze --json -o "$work/lossy.json" "$work/lossy.pcap" 2> "$work/lossy.err" || fail "analyze lossy: $(cat "$work/lossy.err")"
/usr/bin/python3 - "$work/whole.json" "$work/lossy.json" "$work/dropped.jsonl" <<'PY'
import json, sys
whole, lossy = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
dropped = [json.loads(line) for line in open(sys.argv[3])]
reqs = whole["requests"]
assert len(reqs) == 40 and all(r["complete"] for r in reqs), [(r["request_id"], r["incomplete_reasons"]) for r in reqs]

def port(r):
    return int(r["connection"]["client"].rsplit(":", 1)[1])

def touched(r):
    w = r["vantages"]["wire"]
    return any(port(r) in (d["sport"], d["dport"]) and w["req_first_mono_ns"] <= d["ts_ns"] <= w["resp_last_mono_ns"]
               for d in dropped)

got = {r["request_id"]: r for r in lossy["requests"] if r["request_id"]}
assert set(got) <= {r["request_id"] for r in reqs}, sorted(set(got) - {r["request_id"] for r in reqs})
KEYS = ("ttft_ns", "e2el_ns", "itl_ns", "token_events", "first_token_mono_ns", "resp_last_mono_ns")
cut, kept, absent, after_cut = [], [], [], []
cut_conns = {}
for r in sorted(reqs, key=lambda r: r["vantages"]["wire"]["req_first_mono_ns"]):
    rid, l = r["request_id"], got.get(r["request_id"])
    if touched(r):
        cut.append(rid)
        cut_conns.setdefault(port(r), rid)
        if l is None:
            absent.append(rid)
        else:
            assert not l["complete"] and "gap" in l["incomplete_reasons"], (rid, l["complete"], l["incomplete_reasons"])
        continue
    assert l is not None, ("not touched by a lost packet, yet not reported", rid)
    assert l["complete"], ("not touched by a lost packet, yet incomplete", rid, l["incomplete_reasons"], l["http_error"])
    w, lw = r["vantages"]["wire"], l["vantages"]["wire"]
    diff = [k for k in KEYS if w[k] != lw[k]]
    assert not diff, (rid, [(k, w[k], lw[k]) for k in diff])
    kept.append(rid)
    if port(r) in cut_conns:
        after_cut.append(rid)
orphans = [r for r in lossy["requests"] if not r["request_id"]]
for o in orphans:
    assert "request-not-captured" in o["incomplete_reasons"], o["incomplete_reasons"]
assert cut and after_cut, ("the loss cut nothing, or nothing after it on its connection", cut, after_cut)
assert absent and len(orphans) >= 1, ("no request was lost whole, or its response was paired", absent, len(orphans))
print("gap resync: %d packets left out of the capture cut %d of 40 requests (%d lost whole, their %d responses "
      "reported alone); the other %d measured exactly as without the loss, %d of them after a cut one on its connection"
      % (len(dropped), len(cut), len(absent), len(orphans), len(kept), len(after_cut)))
PY
