#!/usr/bin/env bash
# tokentap run with the root vantages, and without root.
#  1. root, --server-port of tokentap serve, -o DIR: curl's requests are seen
#     at the server (eBPF), the wire (libpcap) and the client (the probe),
#     joined by x-request-id in one JSON document; every token write of
#     serve's log is a TOKEN event at each vantage, in causal order per token
#     (server <= wire <= client); DIR holds server.pcap, client.pcap,
#     wire.pcap and manifest.json, and `tokentap analyze DIR` reads it.
#  2. not root (setpriv to nobody): one line names the vantages not taken,
#     the client vantage is reported, CMD's exit status passes through.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "the server and wire vantages need root"
command -v curl >/dev/null || skip "curl not installed"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
work=$(mktemp -d); chmod 755 "$work"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
need_bpf "$work"
start_serve "$work" --profile vllm --ttft-ms 10 --itl-ms 3
port=$SERVE_PORT
req='{"model":"m","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"hi"}]}'

"$TT" run --server-port "$port" -o "$work/rec" --json --events --report "$work/events.json" -- \
    sh -c "curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H 'x-request-id: ro-1' -d '$req' \
           http://127.0.0.1:$port/v1/chat/completions > /dev/null && exit 5" 2> "$work/run.err" && rc=0 || rc=$?
[ $rc = 5 ] || fail "run exit $rc (want CMD's 5): $(cat "$work/run.err")"
for f in server.pcap client.pcap wire.pcap manifest.json; do [ -s "$work/rec/$f" ] || fail "DIR lacks $f"; done
"$TT" analyze --json "$work/rec" > "$work/analyze.json" 2> "$work/analyze.err" || fail "analyze DIR exit $?: $(cat "$work/analyze.err")"

# 2. as nobody: a binary and probe nobody can read
nb="$work/nobody"; mkdir -m 755 "$nb"; cp "$TT" "$BUILD/libtokentap-probe.so" "$nb/"
rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups "$nb/tokentap" run --server-port "$port" --json --events \
    -- sh -c "curl -sS -N --max-time 10 -H 'Content-Type: application/json' \
    -H 'x-request-id: nr-1' -d '$req' http://127.0.0.1:$port/v1/chat/completions > /dev/null; exit 3" \
    > "$work/nobody.json" 2> "$work/nobody.err" || rc=$?
[ $rc = 3 ] || fail "run as nobody exit $rc (want 3): $(cat "$work/nobody.err")"
grep -q 'not root: the server vantage (eBPF) and the wire vantage (libpcap) are not taken' "$work/nobody.err" \
    || fail "no line about the vantages not taken: $(cat "$work/nobody.err")"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve exit $?"

/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
log = [json.loads(l) for l in open(f"{work}/serve.log")]
def writes(rid):
    return [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
            and any(k == "token" for _, k in e["events"])]
# --json --events with several vantages: one listing per vantage, one after the other
docs, text, dec = [], open(f"{work}/events.json").read(), json.JSONDecoder()
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    d, i = dec.raw_decode(text, i)
    docs.append(d)
by_v = {d["vantage"]: d for d in docs}
assert {"server", "client", "wire"} <= set(by_v), sorted(by_v)
w = writes("ro-1")
assert len(w) == 20, len(w)
toks = {}
for v in ("server", "wire", "client"):
    reqs = [r for r in by_v[v]["requests"] if r["request_id"] == "ro-1"]
    assert len(reqs) == 1, (v, len(reqs))
    toks[v] = [e["dispatch_mono_ns"] for e in reqs[0]["events"] if e["kind"] == "TOKEN"]
    assert len(toks[v]) == 20, (v, len(toks[v]))
for s, wi, c in zip(toks["server"], toks["wire"], toks["client"]):
    assert s <= wi <= c, (s, wi, c)
an = json.load(open(f"{work}/analyze.json"))
assert set(an["vantage_list"]) == {"server", "client", "wire"}, an["vantage_list"]
nb = json.load(open(f"{work}/nobody.json"))
assert nb["vantage"] == "client", nb["vantage"]
nreq = [r for r in nb["requests"] if r["request_id"] == "nr-1"]
assert len(nreq) == 1 and sum(e["kind"] == "TOKEN" for e in nreq[0]["events"]) == 20
print("tokentap run as root: 20 tokens at server, wire and client, causal per token, DIR analyzed back;"
      " as nobody: the client vantage alone, with the vantages not taken named")
PY
