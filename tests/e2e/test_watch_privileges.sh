#!/usr/bin/env bash
# watch's privileges once it is set up (issue 14: least privilege), read
# from the watcher's own /proc/PID/task/TID/status, every thread (the
# metrics server's thread included):
#  1. TOKENTAP_NO_TLS=1 `watch --port P --metrics 127.0.0.1:0 --user nobody`:
#     every uid and gid nobody's, no other group, NoNewPrivs 1, CapPrm,
#     CapEff, CapBnd, CapInh, CapAmb all empty (CAP_BPF alone on a kernel
#     before 6.5 with unprivileged eBPF disabled), said on stderr; and it
#     still works: 6 streamed requests to `tokentap serve` made after the
#     drop are on /metrics (tokentap_requests_total and the server TTFT
#     histogram's count) and in watch's final report (-o a file in a
#     directory only root may write: opened before the drop), the kernel's
#     counters still read.
#  2. without --user (TOKENTAP_NO_TLS=1): still uid 0, no capability left,
#     NoNewPrivs 1.
#  3. TLS followed, `watch --pid SHELL --user nobody`: the main thread keeps
#     exactly cap_dac_read_search, cap_sys_ptrace and cap_sys_admin
#     (permitted, effective, bounding), the other threads nothing; the
#     shell, traced from before watch, forks curl after the drop: curl's
#     HTTPS request is whole at the client_tls vantage (a uprobe attached
#     after the drop). With node: `watch --comm node --user nobody`, a node
#     client started after the drop has its executable attached (its maps
#     and executable read through /proc) and its request whole.
#  4. --user naming no user: one line, exit 3, before anything is loaded.
#  5. as the systemd unit runs it (docs/production.md: root with only
#     CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_PTRACE and
#     CAP_DAC_READ_SEARCH, under setpriv): no CAP_SETPCAP to narrow the
#     bounding set, so it stays the five, said on stderr; permitted and
#     effective are the three kept, no_new_privs set, and it traces. With
#     --user as well: no CAP_SETUID, so one line naming the step and exit 3
#     (it does not carry on half dropped).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF, and switching users"
command -v curl >/dev/null || skip "curl not installed"
id nobody > /dev/null 2>&1 || skip "no user nobody"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
chmod 700 "$work"
need_bpf "$work"
nobody_uid=$(id -u nobody) nobody_gid=$(id -g nobody)

# expected_caps TLS: the capability mask (hex) watch keeps, as documented,
# within the bounding set this test itself runs with.
expected_caps() {
    /usr/bin/python3 - "$1" <<'PY'
import os, re, sys
tls = sys.argv[1] == "tls"
bnd = int(re.search(r"\nCapBnd:\s*([0-9a-f]+)", open("/proc/self/status").read()).group(1), 16)
CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_BPF = 2, 19, 21, 39
want = 0
if tls:
    want = 1 << CAP_DAC_READ_SEARCH | 1 << CAP_SYS_PTRACE | 1 << CAP_SYS_ADMIN
else:
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    old = not m or (int(m.group(1)), int(m.group(2))) < (6, 5)
    try:
        disabled = int(open("/proc/sys/kernel/unprivileged_bpf_disabled").read())
    except OSError:
        disabled = 1
    if old and disabled:
        want = 1 << CAP_BPF
print("%016x" % (want & bnd))
PY
}

# check_threads PID UID GID MAIN_CAPS OTHER_CAPS [BOUNDING]: every thread of
# PID runs as UID:GID (all four ids, no other group), NoNewPrivs 1, the
# main thread with MAIN_CAPS permitted and effective, the others with
# OTHER_CAPS, every one with BOUNDING (default MAIN_CAPS) as its bounding
# set, none inheritable or ambient; prints the number of threads.
check_threads() {
    /usr/bin/python3 - "$@" <<'PY' || fail "watch's credentials (above)"
import glob, re, sys
pid, uid, gid, main_caps, other_caps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 16), int(sys.argv[5], 16)
bounding = int(sys.argv[6], 16) if len(sys.argv) > 6 else main_caps
tasks = sorted(glob.glob(f"/proc/{pid}/task/*/status"))
assert tasks, "no threads"
for path in tasks:
    text = open(path).read()
    field = lambda k: re.search(rf"^{k}:[ \t]*(.*)$", text, re.M).group(1).split()
    main = path.split("/")[4] == pid
    caps = main_caps if main else other_caps
    assert field("Uid") == [uid] * 4, (path, field("Uid"))
    assert field("Gid") == [gid] * 4, (path, field("Gid"))
    assert field("Groups") in ([gid], []), (path, field("Groups"))
    assert field("NoNewPrivs") == ["1"], (path, "NoNewPrivs", field("NoNewPrivs"))
    got = {k: int(field(k)[0], 16) for k in ("CapPrm", "CapEff", "CapBnd", "CapInh", "CapAmb")}
    want = {"CapPrm": caps, "CapEff": caps, "CapBnd": bounding, "CapInh": 0, "CapAmb": 0}
    assert got == want, (path, {k: "%x" % v for k, v in got.items()}, {k: "%x" % v for k, v in want.items()})
print(len(tasks))
PY
}

# 4. (first: it needs nothing running)
rc=0; "$TT" watch --user tt-no-such-user --duration 1 > "$work/nouser.out" 2> "$work/nouser.err" || rc=$?
[ $rc = 3 ] || fail "--user with no such user: exit $rc, $(cat "$work/nouser.err")"
[ "$(cat "$work/nouser.err")" = "tokentap watch: --user tt-no-such-user: no such user" ] \
    || fail "--user with no such user said: $(cat "$work/nouser.err")"

# 1.
none=$(expected_caps off) tls=$(expected_caps tls)
start_serve "$work" --profile vllm --ttft-ms 5 --itl-ms 2 --tokens 6
mkdir -m 700 "$work/rootonly"
TOKENTAP_NO_TLS=1 "$TT" watch --port "$SERVE_PORT" --metrics 127.0.0.1:0 --user nobody --interval 0 --json \
    -o "$work/rootonly/report.json" > /dev/null 2> "$work/user.err" &
wpid=$!
wait_tracing "$work/user.err"
grep -q "^tokentap watch: privileges dropped: uid $nobody_uid gid $nobody_gid (nobody), no_new_privs, capabilities kept: " \
    "$work/user.err" || fail "no line on the privileges: $(cat "$work/user.err")"
threads=$(check_threads $wpid "$nobody_uid" "$nobody_gid" "$none" "$none")
[ "$threads" -ge 2 ] || fail "the metrics thread is missing: $threads thread(s)"
mport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/user.err")
for i in 1 2 3 4 5 6; do
    curl -sS -N --max-time 10 -o /dev/null -H 'content-type: application/json' -H "x-request-id: pv-$i" \
        -d '{"model":"m-priv","stream":true,"messages":[{"role":"user","content":"x"}]}' \
        "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" || fail "curl $i failed"
done
for _ in $(seq 50); do
    curl -sS --max-time 5 "http://127.0.0.1:$mport/metrics" > "$work/page.txt" || true
    grep -q '^tokentap_requests_total{vantage="server",outcome="complete"} 6$' "$work/page.txt" && break
    sleep 0.1
done
grep -q '^tokentap_requests_total{vantage="server",outcome="complete"} 6$' "$work/page.txt" \
    || fail "/metrics after the drop: $(grep requests_total "$work/page.txt")"
ttft=$(awk '/^gen_ai_server_time_to_first_token_seconds_count\{.*vantage="server"/ {n += $NF} END {print n + 0}' "$work/page.txt")
[ "$ttft" = 6 ] || fail "/metrics after the drop: $ttft server TTFTs, not 6"
kill -INT $wpid; wait $wpid || fail "watch --user nobody exit $?: $(cat "$work/user.err")"
grep -q 'kernel: [1-9][0-9]* events' "$work/user.err" || fail "the kernel's counters not read: $(tail -2 "$work/user.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work/rootonly/report.json" <<'PY' || fail "watch's report after the drop"
import sys
from json_docs import by_vantage
docs = by_vantage(sys.argv[1])
reqs = [r for r in docs["server"]["requests"] if r.get("request_id", "").startswith("pv-")]
assert len(reqs) == 6, [r.get("request_id") for r in docs["server"]["requests"]]
assert all(r["complete"] and r["vantages"]["server"]["token_events"] == 6 for r in reqs), reqs
PY

# 2.
TOKENTAP_NO_TLS=1 "$TT" watch --port "$SERVE_PORT" --duration 30 > /dev/null 2> "$work/root.err" &
wpid=$!
wait_tracing "$work/root.err"
check_threads $wpid 0 0 "$none" "$none" > /dev/null
kill -INT $wpid; wait $wpid || true
grep -q "privileges dropped: uid 0 gid 0, no_new_privs, capabilities kept: " "$work/root.err" \
    || fail "no line on the privileges as root: $(cat "$work/root.err")"

# 5.
five=$(/usr/bin/python3 -c 'import re; print("%016x" % ((1 << 39 | 1 << 38 | 1 << 21 | 1 << 19 | 1 << 2) &
    int(re.search(r"\nCapBnd:\s*([0-9a-f]+)", open("/proc/self/status").read()).group(1), 16)))')
unit_caps=(setpriv --bounding-set=-all,+bpf,+perfmon,+sys_admin,+sys_ptrace,+dac_read_search --inh-caps=-all --)
"${unit_caps[@]}" "$TT" watch --port "$SERVE_PORT" > /dev/null 2> "$work/unit.err" &
wpid=$!
wait_tracing "$work/unit.err"
check_threads $wpid 0 0 "$tls" "$tls" "$five" > /dev/null
grep -q "capabilities kept: cap_dac_read_search,cap_sys_ptrace,cap_sys_admin (to attach .*; bounding set left as it was (no cap_setpcap to change it)$" \
    "$work/unit.err" || fail "under the unit's capabilities: $(cat "$work/unit.err")"
curl -sS -N --max-time 10 -o /dev/null -H 'content-type: application/json' -H "x-request-id: pv-unit" \
    -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}' \
    "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" || fail "curl under the unit's capabilities failed"
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch under the unit's capabilities exit $?: $(cat "$work/unit.err")"
grep -q '^server .* status=200 tokens=6 ttft=' "$work/unit.err" || fail "not traced under the unit's capabilities"
rc=0; "${unit_caps[@]}" "$TT" watch --port "$SERVE_PORT" --user nobody --duration 5 > /dev/null 2> "$work/unit-user.err" || rc=$?
[ $rc = 3 ] || fail "--user without CAP_SETUID: exit $rc, $(cat "$work/unit-user.err")"
[ "$(cat "$work/unit-user.err")" = "tokentap watch: --user nobody: setgroups: Operation not permitted" ] \
    || fail "--user without CAP_SETUID said: $(cat "$work/unit-user.err")"

# 3.
command -v openssl >/dev/null || { echo "TLS part skipped: no openssl"; exit 0; }
curl -V | head -1 | grep -q OpenSSL || { echo "TLS part skipped: curl is not built with OpenSSL"; exit 0; }
self_signed_cert "$work"
/usr/bin/python3 "$(dirname "$0")/tls_sse_server.py" 8 10 "$work/c.pem" "$work/k.pem" "$work/server.log" \
    > "$work/port" 2> "$work/srv.err" &
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port"); [ -n "$port" ] || fail "the HTTPS server did not start: $(cat "$work/srv.err")"
rm -f "$work/go"
bash -c "while [ ! -e '$work/go' ]; do sleep 0.05; done; (sleep 1; exec curl -sS -N -k --max-time 10 \
    -H 'x-request-id: pv-tls' -d '{\"model\":\"m\",\"stream\":true}' https://127.0.0.1:$port/v1/chat/completions \
    > /dev/null)" &
shpid=$!
"$TT" watch --pid "$shpid" --user nobody --metrics 127.0.0.1:0 > /dev/null 2> "$work/tls.err" &
wpid=$!
wait_tracing "$work/tls.err"
check_threads $wpid "$nobody_uid" "$nobody_gid" "$tls" 0 > /dev/null
grep -q "capabilities kept: cap_dac_read_search,cap_sys_ptrace,cap_sys_admin (to attach TLS uprobes to programs" \
    "$work/tls.err" || fail "the kept capabilities not said: $(cat "$work/tls.err")"
touch "$work/go"
wait $shpid || fail "the shell's curl failed"
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch --pid --user nobody exit $?: $(cat "$work/tls.err")"
expect_whole client_tls "$work/tls.err" "curl forked after the drop"
if command -v node > /dev/null; then
    rm -f "$work/go"
    "$TT" watch --comm node --user nobody > /dev/null 2> "$work/node.err" &
    wpid=$!
    wait_tracing "$work/node.err"
    node "$(dirname "$0")/node_https_client.js" "$port" pv-node "$work/go" > "$work/node.out" 2> "$work/node.cerr" &
    npid=$!
    wait_tls_attached "$work/node.err" $npid
    grep -q "TLS library attached (pid $npid): .*/exe" "$work/node.err" \
        || fail "node started after the drop not attached: $(cat "$work/node.err")"
    touch "$work/go"
    wait $npid || fail "node client: $(cat "$work/node.cerr")"
    sleep 0.3
    kill -INT $wpid; wait $wpid || fail "watch --comm node --user nobody exit $?: $(cat "$work/node.err")"
    expect_whole client_tls "$work/node.err" "node started after the drop"
fi
echo "privileges: nobody, no_new_privs, $threads threads checked; kept without TLS: $none, with TLS: $tls; requests after the drop on /metrics and in the report; TLS attached after the drop"
