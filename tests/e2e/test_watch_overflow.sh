#!/usr/bin/env bash
# The ring buffer driven to overflow, with watch and with record: the ring
# shrunk to 8 KiB (the hidden --ring-kb), serve coalescing 60 events per
# write (~10 KiB, more than the ring can ever hold) so that every write of
# the long streams is refused, while short streams (one small write) get
# through. The refused records must be counted (watch's stderr, the report's
# gaps, record's manifest) and every request they cut must be marked
# incomplete: no request may be reported complete with fewer tokens than
# serve wrote. Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 5 --itl-ms 0 --coalesce 60
spid=$SERVE_PID port=$SERVE_PORT

requests() {  # PREFIX: two long and two short streams, one after the other
    for r in long-1:240 short-1:4 long-2:240 short-2:4; do
        curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $1-${r%:*}" \
            -d "{\"model\":\"m\",\"stream\":true,\"max_tokens\":${r#*:},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
            "http://127.0.0.1:$port/v1/chat/completions" > /dev/null || fail "curl exit $?"
    done
}

"$TT" watch --port "$port" --ring-kb 8 --duration 30 --json -q -o "$work/watch.json" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
requests w
sleep 0.2
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"

"$TT" record -o "$work/rec" --port "$port" --ring-kb 8 --duration 30 2> "$work/record.err" &
rpid=$!
for _ in $(seq 50); do grep -q '^tokentap record: recording' "$work/record.err" 2>/dev/null && break; sleep 0.1; done
grep -q '^tokentap record: recording' "$work/record.err" || fail "record did not start: $(cat "$work/record.err")"
requests r
sleep 0.2
kill -INT $rpid; wait $rpid || fail "record exit $?: $(cat "$work/record.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"
for v in server client; do
    "$TT" analyze --json "$work/rec/$v.pcap" > "$work/rec-$v.json" || fail "analyze $v.pcap exit $?"
done

/usr/bin/python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
log = [json.loads(l) for l in open(f"{work}/serve.log")]
def logged(rid):
    return sum(1 for e in log if e["type"] == "write" and e["request_id"] == rid
               for _, k in e["events"] if k == "token")
def docs(path):
    text, at, dec, out = open(path).read(), 0, json.JSONDecoder(), {}
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        d, at = dec.raw_decode(text, at)
        out[d["vantage"]] = d
    return out
def check(label, doc, prefix):
    v = doc["vantage"]
    reqs = {r["request_id"]: r for r in doc["requests"] if r["request_id"]}
    complete = 0
    for kind in ("long-1", "long-2", "short-1", "short-2"):
        rid = f"{prefix}-{kind}"
        want = logged(rid)
        r = reqs.get(rid)
        if r is None:
            assert kind.startswith("long"), (label, v, rid, "a short stream went missing")
            continue
        toks = r["vantages"][v]["token_events"]
        if r["complete"]:
            assert toks == want, (label, v, rid, "complete with", toks, "of", want)
            complete += 1
        if kind.startswith("long"):
            assert not r["complete"], (label, v, rid, "a stream whose writes were refused reported complete")
    if label == "watch":
        assert doc["source"]["gaps"] > 0, (label, v, doc["source"])
    return complete
w = docs(f"{work}/watch.json")
err = open(f"{work}/watch.err").read()
drops = int(re.search(r"(\d+) ring-buffer drops", err).group(1))
assert drops > 0, err
nw = sum(check("watch", d, "w") for d in w.values())
man = json.load(open(f"{work}/rec/manifest.json"))
rdrops = man["drops"]["ebpf"]["ringbuf_drops"]
assert rdrops > 0 and man["drops"]["ebpf"]["gaps"] > 0, man["drops"]
nr = sum(check("record", d, "r") for v in ("server", "client") for d in docs(f"{work}/rec-{v}.json").values())
print(f"overflow: 8 KiB ring, 10 KiB writes: watch counted {drops} refused records, record's manifest {rdrops}; "
      f"every long stream incomplete at every vantage, {nw} + {nr} short ones complete with every token")
PY
