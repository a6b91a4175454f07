#!/usr/bin/env bash
# tokentap watch's kernel filters, each against clients whose requests must
# and must not appear (client vantage, x-request-id):
#  1. --pid with its descendants and several --pid: a parent traced with
#     --pid has a child forked before watch started and forks another after
#     (which forks a grandchild); every one of them makes a request, as does
#     a second process given by a second --pid; a process not named makes
#     one that must not appear. The stderr counts children followed.
#  2. --comm: two clients that name themselves (prctl PR_SET_NAME on the
#     main thread), only the named one seen.
#  3. --cgroup: a client that moves itself into a new cgroup v2 directory
#     and one that does not (skipped when no cgroup2 mount can take one).
# Root; skipped when the BPF programs cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work=$(mktemp -d); cg=
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 10 --itl-ms 2
spid=$SERVE_PID port=$SERVE_PORT

# client.py PORT GO_FILE ROLE...: wait for GO_FILE, then act; ROLE is
#   req:ID            make one streamed request with x-request-id ID
#   name:NAME         set the process name first
#   cgroup:DIR        move this process into cgroup DIR first
#   tree:ID           the fork test: see below
cat > "$work/client.py" <<'PY'
import ctypes, os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]

def request(rid):
    body = b'{"model":"m","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi"}]}'
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {rid}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head + body)
    while s.recv(65536):
        pass
    s.close()

def wait_go():
    for _ in range(300):
        if os.path.exists(go):
            return
        time.sleep(0.05)
    sys.exit("no go file")

def run_child(rid, then=None):
    pid = os.fork()
    if pid == 0:
        try:
            if then:
                then()
            request(rid)
        finally:
            os._exit(0)
    return pid

for role in sys.argv[3:]:
    kind, _, arg = role.partition(":")
    if kind == "name":
        ctypes.CDLL(None).prctl(15, arg.encode(), 0, 0, 0)
    elif kind == "cgroup":
        with open(os.path.join(arg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    elif kind == "req":
        wait_go()
        request(arg)
    elif kind == "tree":
        # a child forked now (before the tracer starts) waits for the go file
        old = run_child(f"{arg}-old", wait_go)
        wait_go()
        # forked after the tracer started; it forks a grandchild of its own
        def grand():
            g = run_child(f"{arg}-grand")
            os.waitpid(g, 0)
        new = run_child(f"{arg}-new", grand)
        for p in (old, new):
            os.waitpid(p, 0)
        request(f"{arg}-parent")
PY

watch_start() {  # NAME ARGS...
    local name=$1; shift
    "$TT" watch "$@" --duration 30 --vantage client --json -q -o "$work/$name.json" 2> "$work/$name.err" &
    wpid=$!
    wait_tracing "$work/$name.err"
}
watch_stop() {
    sleep 0.3
    kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/$1.err")"
}
# check NAME WANT...: the request ids the client vantage reported are exactly WANT
check() {
    local name=$1; shift
    /usr/bin/python3 - "$work/$name.json" "$@" <<'PY' || fail "$name: $(cat "$work/$name.err")"
import json, sys
rep = json.load(open(sys.argv[1]))
seen = sorted(r["request_id"] for r in rep["requests"])
want = sorted(sys.argv[2:])
assert seen == want, f"seen {seen}, want {want}"
for r in rep["requests"]:
    toks = r["vantages"]["client"]["token_events"]
    assert r["complete"] and toks == 12, (r["request_id"], r["complete"], toks)
PY
}

# 1. --pid: the process tree and a second pid; a third process unnamed
go="$work/go-pid"
/usr/bin/python3 "$work/client.py" "$port" "$go" tree:fk > "$work/tree.out" 2>&1 &
tree=$!
/usr/bin/python3 "$work/client.py" "$port" "$go" req:fk-second > /dev/null 2>&1 &
second=$!
/usr/bin/python3 "$work/client.py" "$port" "$go" req:fk-out > /dev/null 2>&1 &
out=$!
sleep 0.5 # the early child is forked
watch_start pid --pid "$tree" --pid "$second"
grep -q "tracing pid $tree,$second (and descendants)" "$work/pid.err" || fail "start line: $(cat "$work/pid.err")"
touch "$go"
wait $tree || fail "tree client: $(cat "$work/tree.out")"
wait $second; wait $out
watch_stop pid
check pid fk-old fk-new fk-grand fk-parent fk-second
children=$(sed -n 's/.* \([0-9]*\) children followed.*/\1/p' "$work/pid.err")
[ "${children:-0}" -ge 2 ] || fail "children followed: '${children}' in $(cat "$work/pid.err")"
echo "watch --pid: parent, child forked before start, child and grandchild forked after, second --pid seen; the other process not ($children children followed)"

# 2. --comm
go="$work/go-comm"
watch_start comm --comm ttcomm-yes
/usr/bin/python3 "$work/client.py" "$port" "$go" name:ttcomm-yes req:cm-yes &
c1=$!
/usr/bin/python3 "$work/client.py" "$port" "$go" name:ttcomm-no req:cm-no &
c2=$!
sleep 0.3; touch "$go"
wait $c1; wait $c2
watch_stop comm
check comm cm-yes
echo "watch --comm: the process named ttcomm-yes seen, ttcomm-no not"

# 3. --cgroup
root=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$root" ] && mkdir "$root/tokentap-test-$$" 2>/dev/null; then
    cg="$root/tokentap-test-$$"
    go="$work/go-cg"
    watch_start cgroup --cgroup "$cg"
    /usr/bin/python3 "$work/client.py" "$port" "$go" "cgroup:$cg" req:cg-in &
    c1=$!
    /usr/bin/python3 "$work/client.py" "$port" "$go" req:cg-out &
    c2=$!
    sleep 0.3; touch "$go"
    wait $c1; wait $c2
    watch_stop cgroup
    check cgroup cg-in
    echo "watch --cgroup: the client in $cg seen, the other not"
else
    echo "watch --cgroup: not tested (no cgroup2 mount that takes a new directory)"
fi
"$TT" watch --cgroup /tmp --duration 0.1 -q > /dev/null 2> "$work/bad.err" && fail "--cgroup /tmp accepted"
grep -q 'not a cgroup v2 directory' "$work/bad.err" || fail "--cgroup /tmp: $(cat "$work/bad.err")"
# record refuses a filter that names nothing, exit 3, and leaves no directory
rc=0; "$TT" record -o "$work/norec" --pid 999999999 --duration 0.2 2> "$work/norec.err" || rc=$?
[ $rc = 3 ] || fail "record --pid of no process: exit $rc: $(cat "$work/norec.err")"
[ ! -e "$work/norec" ] || fail "record left $work/norec behind after refusing its filter"
kill -TERM $spid; wait $spid || fail "serve exit $?"
