#!/usr/bin/env bash
# Where watch stamps a send (bpf/README.md, socktap_send.bpf.h): write and
# sendto are stamped in tcp_sendmsg_locked by default (on a kernel with that
# tracepoint), at their syscall entry with TOKENTAP_NO_SEND_STAMP=1. Either
# way a send that has to wait for send-buffer space is stamped before the
# wait, not when the kernel took its bytes: send_stall_server.py fills its
# socket, then sends 3000 more tokens and a last one, "B", with a blocking
# write (connection 1), send (connection 2), writev (3) and sendmsg (4) of
# two buffers while its client sleeps 0.5 s; B's instant at the
# server vantage must be within 20 ms of the server's own clock reading just
# before that call, which returned at least 0.3 s later. Then test_watch.sh
# and test_watch_iovec.sh pass with the sends stamped at syscall entry, and
# watch says which way it stamps. Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work_dir
need_bpf "$work"
here=$(dirname "$0")

# stall_case NAME [ENV=VALUE...]: the two stalled sends under watch --pid
stall_case() {
    local name=$1 dir="$work/$1"
    shift
    mkdir -p "$dir"
    /usr/bin/python3 "$here/send_stall_server.py" "$dir/server.log" > "$dir/port" &
    local spid=$!
    for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
    local port; port=$(cat "$dir/port")
    [ -n "$port" ] || fail "$name: send_stall_server.py did not start"
    env "$@" "$TT" watch --pid $spid --duration 30 --events --json -q -o "$dir/events.json" 2> "$dir/watch.err" &
    local wpid=$!
    wait_tracing "$dir/watch.err"
    for i in 1 2 3 4; do
        /usr/bin/python3 - "$port" "stall-$i" <<'PY' || fail "$name: client $i failed"
import socket, sys, time
port, rid = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
s.connect(("127.0.0.1", port))
s.sendall(f"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: {rid}\r\n\r\n".encode())
time.sleep(0.5)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
assert got.endswith(b"data: [DONE]\n\n"), got[-80:]
PY
    done
    wait $spid || fail "$name: send_stall_server.py exit $?"
    kill -INT $wpid; wait $wpid || true
    /usr/bin/python3 - "$dir" "$name" <<'PY' || fail "$name: $(cat "$dir/watch.err")"
import json, sys
d, name = sys.argv[1:3]
rep = json.load(open(f"{d}/events.json"))
reqs = {r["request_id"]: r for r in rep["requests"]}
for line in open(f"{d}/server.log"):
    s = json.loads(line)
    rid = f"stall-{s['conn']}"
    assert rid in reqs, (rid, sorted(reqs))
    toks = [e for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(toks) == s["tokens"], (rid, len(toks), s["tokens"])
    blocked = s["after_ns"] - s["before_ns"]
    assert blocked >= 300_000_000, f"{rid}: the {s['syscall']} did not wait for buffer space ({blocked} ns)"
    lag = toks[-1]["first_mono_ns"] - s["before_ns"]
    print(f"{name}: {s['syscall']} blocked {blocked / 1e6:.0f} ms; its token stamped {lag / 1e3:.1f} us "
          f"after the server's clock before the call ({len(toks)} tokens)")
    assert 0 <= lag <= 20_000_000, f"{rid}: the blocked {s['syscall']} was stamped {lag} ns after its call began"
PY
}

stall_case stamped
err=$work/stamped/watch.err
if [ -e /sys/kernel/tracing/events/tcp/tcp_sendmsg_locked ] || [ -e /sys/kernel/debug/tracing/events/tcp/tcp_sendmsg_locked ]; then
    grep -q 'sends stamped at syscall entry' "$err" && fail "the kernel has tcp_sendmsg_locked, yet watch stamps sends at entry: $(head -1 "$err")"
fi
stall_case entry TOKENTAP_NO_SEND_STAMP=1
err=$work/entry/watch.err
grep -q 'sends stamped at syscall entry' "$err" || fail "TOKENTAP_NO_SEND_STAMP=1: watch does not say it stamps at entry: $(head -1 "$err")"

TOKENTAP_NO_SEND_STAMP=1 bash "$here/test_watch.sh" || fail "test_watch.sh failed with sends stamped at entry"
TOKENTAP_NO_SEND_STAMP=1 bash "$here/test_watch_iovec.sh" || fail "test_watch_iovec.sh failed with sends stamped at entry"
echo "PASS: test_watch_send_stamp (blocked sends stamped before the wait both ways; test_watch and test_watch_iovec with sends stamped at entry)"
