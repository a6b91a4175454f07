#!/usr/bin/env bash
# tokentap record against tokentap serve: server.pcap, client.pcap and
# wire.pcap plus manifest.json in the recording directory; every file opens
# in tshark (when installed); `tokentap analyze --json DIR` carries every
# request at all three vantages with every token counted; server-vantage
# token instants within 50 us (median) of serve's logged write instants; the
# wire (converted with the manifest's offset) within 1 ms (median) of the
# server vantage. The DIR reports carry the lint findings: JSON "findings"
# holds what `tokentap lint --json DIR` finds, each item naming its vantage
# and its joined request; the text lists each finding once per request with
# the vantages that saw it. Root; skipped when the BPF programs cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 5
spid=$SERVE_PID port=$SERVE_PORT

dir="$work/rec"
"$TT" record -o "$dir" --port "$port" --duration 4 2> "$work/record.err" &
rpid=$!
for _ in $(seq 50); do grep -q '^tokentap record: recording' "$work/record.err" 2>/dev/null && break; sleep 0.1; done
grep -q '^tokentap record: recording' "$work/record.err" || fail "record did not start: $(cat "$work/record.err")"
sleep 0.2
clients=()
for i in 1 2 3; do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: rec-$i" \
        -d '{"model":"m","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"hi"}]}' \
        "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl-$i.out" &
    clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || fail "curl exit $?"; done
wait $rpid || fail "record exit $?: $(cat "$work/record.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"

[ "$(stat -c %a "$dir")" = 700 ] || fail "DIR mode $(stat -c %a "$dir")"
for f in server.pcap client.pcap wire.pcap manifest.json; do
    [ -f "$dir/$f" ] || fail "no $f: $(cat "$work/record.err")"
    [ "$(stat -c %a "$dir/$f")" = 600 ] || fail "$f mode $(stat -c %a "$dir/$f")"
done
if command -v tshark >/dev/null; then
    for f in server client wire; do
        tshark -r "$dir/$f.pcap" > "$work/tshark-$f.out" 2> "$work/tshark-$f.err" || fail "tshark -r $f.pcap: $(cat "$work/tshark-$f.err")"
        [ -s "$work/tshark-$f.out" ] || fail "tshark read no packet from $f.pcap"
    done
fi
"$TT" analyze --json "$dir" > "$work/multi.json" || fail "analyze DIR exit $?"
"$TT" analyze "$dir" > "$work/multi.txt" || fail "analyze DIR (text) exit $?"
rc=0; "$TT" lint --json --fail-on none "$dir" > "$work/lint.json" || rc=$?
[ $rc = 0 ] || fail "lint DIR exit $rc"
off=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_to_mono_offset_ns"]["start"])' "$dir/manifest.json")
"$TT" analyze --json --events "$dir/server.pcap" > "$work/server-events.json"
"$TT" analyze --json --events --wall-to-mono-offset "$off" "$dir/wire.pcap" > "$work/wire-events.json"

/usr/bin/python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
multi = json.load(open(f"{work}/multi.json"))
man = json.load(open(f"{work}/rec/manifest.json"))
assert man["drops"]["ebpf"]["ringbuf_drops"] == 0, man["drops"]
want = {f"rec-{i}" for i in (1, 2, 3)}
reqs = {r["request_id"]: r for r in multi["requests"] if r["request_id"]}
assert set(reqs) == want, sorted(reqs)
for rid, r in reqs.items():
    assert r["joined"], rid
    for v in ("server", "client", "wire"):
        assert v in r["vantages"], (rid, sorted(r["vantages"]))
        assert r["vantages"][v]["token_events"] == 20, (rid, v, r["vantages"][v]["token_events"])
log = [json.loads(l) for l in open(f"{work}/serve.log")]
def tokens(path):
    rep = json.load(open(path))
    return {r["request_id"]: [e["first_mono_ns"] for e in r["events"] if e["kind"] == "TOKEN"] for r in rep["requests"]}
server, wire = tokens(f"{work}/server-events.json"), tokens(f"{work}/wire-events.json")
d_log, d_wire = [], []
for rid in sorted(want):
    writes = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    assert len(writes) == len(server[rid]) == len(wire[rid]) == 20, (rid, len(writes), len(server[rid]), len(wire[rid]))
    d_log += [s - w for s, w in zip(server[rid], writes)]
    d_wire += [w - s for w, s in zip(wire[rid], server[rid])]
    first = reqs[rid]["vantages"]
    assert first["server"]["first_token_mono_ns"] == server[rid][0], rid

# findings: the same as lint's, each with its vantage and joined request
def key(f):
    return (f["vantage"], f["request_id"], f["id"], f["count"], f["event_index"], f["offset"], f["mono_ns"])
lint = json.load(open(f"{work}/lint.json"))
got, want_f = sorted(map(key, multi["findings"])), sorted(map(key, lint["findings"]))
assert got == want_f, (got, want_f)
for f in multi["findings"]:
    r = multi["requests"][f["joined_request"]]
    assert r["request_id"] == f["request_id"] and f["vantage"] in r["vantages"], (f, r["request_id"])
for v in ("server", "client", "wire"):
    s = multi["per_vantage"][v]["findings_summary"]
    assert s["findings"] == sum(1 for f in multi["findings"] if f["vantage"] == v), (v, s)
role = {(f["request_id"], f["vantage"]) for f in multi["findings"] if f["id"] == "role-only-first-chunk"}
assert role == {(rid, v) for rid in want for v in ("server", "client", "wire")}, sorted(role)
text = open(f"{work}/multi.txt").read()
section = text[text.index("- Disagreements -"):]
section = section[section.index("- Findings -"):section.index("\ntokentap analyze ")]
block = section[section.index("[info] role-only-first-chunk: 3 requests\n"):].split("\n")[1:4]
assert sorted(l.split()[0] for l in block) == sorted(want), block
assert all(l.split(None, 1)[1] == "client x1, wire x1, server x1" for l in block), block

med_log, med_wire = statistics.median(d_log), statistics.median(d_wire)
print(f"record: 3 streams x 20 tokens at server, client and wire; server minus serve log median {med_log/1e3:.1f} us; "
      f"wire minus server median {med_wire/1e3:.1f} us; {len(got)} findings as lint's, joined")
assert abs(med_log) <= 50_000, med_log
assert abs(med_wire) <= 1_000_000, med_wire
PY
