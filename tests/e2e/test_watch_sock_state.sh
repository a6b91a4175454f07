#!/usr/bin/env bash
# connect, accept and close from the TCP socket's state changes
# (bpf/socktap_state.bpf.h), so that watch attaches no syscall tracepoint
# by default, which would send every syscall of every process through the
# kernel's slow path. Checked here:
# - bpftool lists no syscalls:* tracepoint among watch's attachments, and
#   does with TOKENTAP_NO_SOCK_STATE=1 (which watch says on its first line);
# - watch --port on serve and five clients, each a new connection, each
#   ended its own way: curl (close), python closing by close(), by
#   os.closerange (close_range: no fd in the record), by exiting with the
#   socket open, and by a reset (SO_LINGER 0: serve's socket is already
#   closed when serve releases it). Every connection must be said
#   connected by its client and accepted by serve (5 and 5), every one
#   closed at both ends (10), and every request complete at both vantages;
# - watch --comm on serve, listening since before watch started: its
#   connection still says ACCEPT (the port read from /proc at start); and
#   --cgroup with serve moved into a new cgroup (its processes' ports);
# - the same states over IPv6 loopback.
# Root; skipped when BPF cannot load or the kernel lacks the tracepoints.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
cg=
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
need_bpf "$work"
command -v bpftool > /dev/null || skip "bpftool not installed"
bpftool btf dump file /sys/kernel/btf/vmlinux format raw | grep -q "'btf_trace_inet_sock_set_state'" \
    || skip "this kernel has no sock:inet_sock_set_state tracepoint"

# attachments: LIST_FILE ENV... (watch --comm of nothing for a second)
attachments() {
    local out=$1; shift
    env "$@" TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 3 -q > /dev/null 2> "$out.err" &
    local w=$!
    for _ in $(seq 50); do grep -q 'tracing' "$out.err" 2> /dev/null && break; sleep 0.1; done
    bpftool perf list | awk -v p="$w" '$2 == p' > "$out"
    kill -INT $w; wait $w || true
    [ -s "$out" ] || fail "no attachment of watch listed by bpftool: $(cat "$out.err")"
}
attachments "$work/default.att" TOKENTAP_X=0
attachments "$work/classic.att" TOKENTAP_NO_SOCK_STATE=1
if grep -q 'tracepoint *sys_' "$work/default.att"; then
    grep -q 'btf_trace_tcp_destroy_sock' < <(bpftool btf dump file /sys/kernel/btf/vmlinux format raw) \
        || skip "no tcp:tcp_destroy_sock tracepoint: watch keeps connect, accept and close on syscall tracepoints"
    fail "watch attached syscall tracepoints by default: $(grep 'tracepoint *sys_' "$work/default.att" | tr '\n' ' ')"
fi
grep -q 'raw_tracepoint *inet_sock_set_state' "$work/default.att" || fail "no inet_sock_set_state program: $(cat "$work/default.att")"
grep -q 'tracepoint *sys_enter_connect' "$work/classic.att" \
    || fail "TOKENTAP_NO_SOCK_STATE=1: no sys_enter_connect program: $(cat "$work/classic.att")"
grep -q '(connect, accept and close at syscall tracepoints)' "$work/classic.att.err" \
    || fail "TOKENTAP_NO_SOCK_STATE=1: watch does not say so: $(head -1 "$work/classic.att.err")"
! grep -q 'at syscall tracepoints' "$work/default.att.err" || fail "watch says syscall tracepoints by default"
echo "watch sock state: no syscall tracepoint attached by default ($(wc -l < "$work/default.att") attachments)," \
     "sys_enter_connect and the rest with TOKENTAP_NO_SOCK_STATE=1"

# post BASE_URL ID: one streamed request by curl (x-request-id ID)
post() {
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $2" \
        -d '{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
        "$1/v1/chat/completions" > /dev/null || fail "curl ($2) exit $?"
}
# watch_one NAME BASE_URL ID WATCH_ARGS...: watch (stderr in NAME.err) while curl makes one request
watch_one() {
    local name=$1 url=$2 id=$3; shift 3
    "$TT" watch "$@" --duration 30 -q 2> "$work/$name.err" &
    local w=$!
    wait_tracing "$work/$name.err"
    post "$url" "$id"
    sleep 0.5
    kill -INT $w; wait $w || fail "watch ($name) exit $?: $(cat "$work/$name.err")"
}

start_serve "$work" --profile vllm --ttft-ms 5 --itl-ms 2
spid=$SERVE_PID port=$SERVE_PORT
"$TT" watch --port "$port" --duration 30 --json -q -o "$work/report.json" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
post "http://127.0.0.1:$port" st-curl
for how in close closerange exit reset; do
    /usr/bin/python3 - "$port" "$how" <<'PY' || fail "client ($how) failed"
import json, os, socket, struct, sys
port, how = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
body = json.dumps({"model": "m", "stream": True, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"x-request-id: st-{how}\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
got = b""
while not got.endswith(b"0\r\n\r\n"):
    chunk = s.recv(65536)
    assert chunk, got[-200:]
    got += chunk
assert b"[DONE]" in got
if how == "close":
    s.close()
elif how == "closerange":
    os.closerange(s.fileno(), s.fileno() + 1)
    s.detach()
elif how == "exit":
    sys.stdout.flush()
    os._exit(0)
else:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
PY
done
sleep 0.5
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"

# --comm on a server that was listening before watch started: its port is
# read from /proc at start, so its accepted connection still says ACCEPT
comm=$(cat "/proc/$spid/comm")
watch_one comm "http://127.0.0.1:$port" st-comm --comm "$comm" -o /dev/null
grep -q ' 1 connections (0 connected, 1 accepted, 1 closed)' "$work/comm.err" \
    || fail "watch --comm $comm: not one connection accepted and closed: $(cat "$work/comm.err")"
echo "watch sock state: --comm $comm, listening since before watch: its connection said accepted and closed"
# --cgroup the same way: serve moved into a new cgroup v2 directory, its
# listening port read from the processes of that cgroup at start
cgroot=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$cgroot" ] && mkdir "$cgroot/tokentap-state-$$" 2> /dev/null; then
    cg="$cgroot/tokentap-state-$$"
    echo "$spid" > "$cg/cgroup.procs" || fail "cannot move serve into $cg"
    watch_one cgroup "http://127.0.0.1:$port" st-cgroup --cgroup "$cg" -o /dev/null
    grep -q ' 1 connections (0 connected, 1 accepted, 1 closed)' "$work/cgroup.err" \
        || fail "watch --cgroup: not one connection accepted and closed: $(cat "$work/cgroup.err")"
    echo "watch sock state: --cgroup, serve listening since before watch: its connection said accepted and closed"
else
    echo "watch sock state: --cgroup not tested (no cgroup2 mount that takes a new directory)"
fi
kill -TERM $spid; wait $spid || fail "serve exit $?"
[ -z "$cg" ] || { rmdir "$cg" || fail "cannot remove $cg"; cg=; }

# IPv6: the same states, the 16-byte addresses in the records
grep -q '^0\{31\}1 .* lo$' /proc/net/if_inet6 2> /dev/null || skip "no IPv6 loopback (::1 on lo) here; the IPv4 parts passed"
"$TT" serve --listen '[::1]:0' --profile vllm --ttft-ms 5 --itl-ms 2 --log "$work/serve6.log" > "$work/serve6.out" 2> "$work/serve6.err" &
spid6=$!
port6=$(wait_listening "$work/serve6.out")
[ -n "$port6" ] || fail "serve on [::1] did not start: $(cat "$work/serve6.err")"
watch_one watch6 "http://[::1]:$port6" st-v6 --port "$port6" --json -o "$work/report6.json"
kill -TERM $spid6; wait $spid6 || fail "serve (IPv6) exit $?"
grep -q ' 2 connections (1 connected, 1 accepted, 2 closed)' "$work/watch6.err" \
    || fail "IPv6: not one connection connected, accepted and closed at both ends: $(cat "$work/watch6.err")"
/usr/bin/python3 - "$work/report6.json" "$(dirname "$0")" <<'PY' || fail "IPv6 request not complete at both vantages"
import sys
sys.path.insert(0, sys.argv[2])
import json_docs
docs = json_docs.by_vantage(sys.argv[1])
for v in ("server", "client"):
    (r,) = docs[v]["requests"]
    assert r["request_id"] == "st-v6" and r["complete"], (v, r["request_id"], r["incomplete_reasons"])
PY
echo "watch sock state: IPv6 loopback: 2 connections (1 connected, 1 accepted, 2 closed), the request complete at both vantages"

/usr/bin/python3 - "$work" "$(dirname "$0")" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[2])
import json_docs
work = sys.argv[1]
err = open(f"{work}/watch.err").read()
m = re.search(r"(\d+) connections \((\d+) connected, (\d+) accepted, (\d+) closed\)", err)
assert m, err
conns, connected, accepted, closed = map(int, m.groups())
assert (conns, connected, accepted, closed) == (10, 5, 5, 10), (m.group(0), err)
docs = json_docs.by_vantage(f"{work}/report.json")
for v in ("server", "client"):
    reqs = {r["request_id"]: r for r in docs[v]["requests"]}
    want = {"st-curl", "st-close", "st-closerange", "st-exit", "st-reset"}
    assert set(reqs) == want, (v, sorted(reqs))
    bad = {k: r["incomplete_reasons"] for k, r in reqs.items() if not r["complete"]}
    assert not bad, (v, bad)
print(f"watch sock state: {m.group(0)}: every connection's role said by connect and accept, every end closed "
      f"(close, close_range, exit, reset), 5 requests complete at both vantages")
PY
