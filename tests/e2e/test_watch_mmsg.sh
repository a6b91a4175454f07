#!/usr/bin/env bash
# tokentap watch with sendmmsg/recvmmsg at the client vantage: ttmmsg
# (tests/tools/ttmmsg.c) sends its request as three messages of one
# sendmmsg and reads the stream with recvmmsg into several messages of two
# iovec entries each. Every token write in serve's log must be a TOKEN event
# at the client vantage (the request, sent by sendmmsg, carries its
# x-request-id), with the text ttmmsg itself read. Then a read into 12
# messages: past the 8-message bound the bytes are missing, and watch must
# say so (truncated syscalls, gaps, an incomplete request), never report a
# clean stream. The mmsg messages are copied by syscall programs, which
# watch loads only with TOKENTAP_NO_SOCK_STATE=1 (bpf/socktap_state.bpf.h);
# by default their bytes are counted at the socket hooks: the last part
# checks that every byte ttmmsg moved is counted, none claimed as read, and
# that watch says how to have them copied. Root; skipped when BPF cannot
# load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
[ -x "$BUILD/tools/ttmmsg" ] || skip "no $BUILD/tools/ttmmsg"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 3
spid=$SERVE_PID port=$SERVE_PORT

watch_start() {  # NAME EXTRA_ARGS...
    local name=$1; shift
    TOKENTAP_NO_SOCK_STATE=1 "$TT" watch --port "$port" --duration 30 --vantage client --json -q -o "$work/$name.json" "$@" 2> "$work/$name.err" &
    wpid=$!
    wait_tracing "$work/$name.err"
}
watch_stop() {
    sleep 0.2
    kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/$1.err")"
    grep -q ' 0 ring-buffer drops' "$work/$1.err" || fail "ring buffer dropped records: $(cat "$work/$1.err")"
}

watch_start mm --events --text
"$BUILD/tools/ttmmsg" "$port" mm-1 "$work/mm-1.raw" 4 16 40 > "$work/mm-1.out" || fail "ttmmsg exit $?"
"$BUILD/tools/ttmmsg" "$port" mm-2 "$work/mm-2.raw" 3 200 40 > "$work/mm-2.out" || fail "ttmmsg exit $?"
watch_stop mm

watch_start cut
"$BUILD/tools/ttmmsg" "$port" cut-1 "$work/cut-1.raw" 12 4 40 > "$work/cut-1.out" || fail "ttmmsg exit $?"
watch_stop cut

# the default: counted at the socket hooks, not copied
"$TT" watch --port "$port" --duration 30 --vantage client --json -q -o "$work/count.json" 2> "$work/count.err" &
wpid=$!
wait_tracing "$work/count.err"
"$BUILD/tools/ttmmsg" "$port" count-1 "$work/count-1.raw" 4 16 40 > "$work/count-1.out" || fail "ttmmsg exit $?"
sleep 0.2
kill -INT $wpid
rc=0; wait $wpid || rc=$?
[ $rc = 0 ] || [ $rc = 4 ] || fail "watch exit $rc: $(cat "$work/count.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"

/usr/bin/python3 - "$work" "$(dirname "$0")" <<'PY'
import json, re, sys
sys.path.insert(0, sys.argv[2])
import sse_response
work = sys.argv[1]

def client_text(path):
    return sse_response.chat_text(open(path, "rb").read())

log = [json.loads(l) for l in open(f"{work}/serve.log")]
rep = json.load(open(f"{work}/mm.json"))
assert rep["vantage"] == "client", rep["vantage"]
reqs = {r["request_id"]: r for r in rep["requests"]}
assert set(reqs) == {"mm-1", "mm-2"}, sorted(reqs)
for rid in ("mm-1", "mm-2"):
    calls = open(f"{work}/{rid}.out").read().split()
    writes = [e for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    toks = [e for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(writes) == 40 and len(toks) == 40, (rid, len(writes), len(toks))
    seen = "".join(e.get("text", "") for e in toks)
    mine = client_text(f"{work}/{rid}.raw")
    assert seen == mine and seen, (rid, seen[:80], mine[:80])
    print(f"watch mmsg: {rid}: {calls[1]} recvmmsg calls, {calls[3]} messages; 40/40 token events, "
          f"text identical to the client's own ({len(seen)} chars)")
cut = open(f"{work}/cut.err").read()
line = [l for l in cut.splitlines() if "truncated syscalls" in l][0]
ntrunc = int(line.split(" truncated syscalls")[0].rsplit(" ", 1)[1])
assert ntrunc > 0, line
rep = json.load(open(f"{work}/cut.json"))
assert [r["request_id"] for r in rep["requests"]] == ["cut-1"], rep["requests"]
r = rep["requests"][0]
assert not r["complete"] and r["incomplete_reasons"], "a stream with bytes missing was reported complete"
cut_toks = r["vantages"]["client"]["token_events"]
assert cut_toks < 40, "a stream with bytes missing was reported whole"
print(f"watch mmsg: 12 messages of 8 bytes per recvmmsg: {ntrunc} records for bytes past the 8-message bound, "
      f"turned into gaps; {cut_toks} of 40 token events claimed, the request incomplete ({r['incomplete_reasons']})")

err = open(f"{work}/count.err").read()
m = re.search(r"(\d+) sendfile or mmsg calls not copied \((\d+) bytes\)", err)
# ttmmsg: "calls C messages M bytes B" (its recvmmsg side); the request went out by sendmmsg
c = open(f"{work}/count-1.out").read().split()
received = int(c[5])
assert m and int(m.group(2)) > received, (received, err)
assert "TOKENTAP_NO_SOCK_STATE=1 copies them" in err, err
toks = 0
try:
    rep = json.load(open(f"{work}/count.json"))
    toks = sum(r["vantages"].get("client", {}).get("token_events", 0) for r in rep["requests"])
except (OSError, ValueError):
    pass
assert toks == 0, toks
print(f"watch mmsg, default: {m.group(1)} messages counted at the socket hooks, {m.group(2)} bytes "
      f"({received} of them read by recvmmsg), no token event claimed, the way to copy them said")
PY
