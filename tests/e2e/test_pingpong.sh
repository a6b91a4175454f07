#!/usr/bin/env bash
# build/tools/ttpingpong (tests/bench/bpf.sh's load): a short run over both
# transports prints one JSON line with sane numbers (4 syscalls per round
# trip for a small message, at least 4 for one larger than a socket buffer,
# round trips between 100 ns and 100 ms); --devnull counts its reads and writes;
# --wait-signal waits for SIGUSR1;
# bad arguments exit 2. No root needed.
set -eu
. "$(dirname "$0")/lib.sh"
PP="$BUILD/tools/ttpingpong"
[ -x "$PP" ] || fail "$PP is not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

timeout 60 "$PP" -m 2000 -n 64 > "$work/small.json" || fail "ttpingpong exit $?"
timeout 60 "$PP" -m 50 -n 1000000 -t tcp > "$work/large.json" || fail "ttpingpong -n 1000000 exit $?"
timeout 60 "$PP" --devnull 1000 -n 128 > "$work/devnull.json" || fail "ttpingpong --devnull exit $?"

"$PP" -m 500 -t unix --wait-signal > "$work/wait.json" 2> "$work/wait.err" &
pp=$!
for _ in $(seq 100); do grep -q '^ready ' "$work/wait.err" && break; sleep 0.05; done
[ "$(cat "$work/wait.err")" = "ready $pp" ] || fail "no 'ready $pp' line: $(cat "$work/wait.err")"
sleep 0.2
[ ! -s "$work/wait.json" ] || fail "started before SIGUSR1"
kill -USR1 "$pp"
rc=0; wait "$pp" || rc=$?
[ $rc = 0 ] || fail "ttpingpong --wait-signal exit $rc"

for bad in "-m 0" "-n 0" "-t udp" "-x" "-m" "--devnull 0" "--devnull"; do
    rc=0; "$PP" $bad > /dev/null 2>&1 || rc=$?
    [ $rc = 2 ] || fail "ttpingpong $bad: exit $rc, want 2"
done

/usr/bin/python3 - "$work" "$pp" <<'PY'
import json, sys
work, pid = sys.argv[1], int(sys.argv[2])
def load(name):
    lines = open(f"{work}/{name}.json").read().splitlines()
    assert len(lines) == 1, (name, lines)
    return json.loads(lines[0])
small, large, wait, devnull = load("small"), load("large"), load("wait"), load("devnull")
assert small["bytes"] == 64 and small["warmup"] == 200, small
for t in ("unix", "tcp"):
    r = small[t]
    assert r["rounds"] == 2000 and r["syscalls"] == 8000 and r["syscalls_per_round_trip"] == 4, (t, r)
    assert 100 <= r["ns_per_round_trip"] <= 100e6, (t, r)
    assert abs(r["ns_per_syscall"] * 4 - r["ns_per_round_trip"]) <= 1, (t, r)
assert "unix" not in large and large["tcp"]["rounds"] == 50, large
assert large["tcp"]["syscalls"] >= 200, large
assert wait["pid"] == pid and "tcp" not in wait and wait["unix"]["rounds"] == 500, wait
d = devnull["devnull"]
assert "tcp" not in devnull and d["bytes"] == 128 and d["calls"] == 2000 and 10 <= d["ns_per_call"] <= 1e7, devnull
print("pingpong: unix %.0f ns, tcp %.0f ns per round trip of 64 bytes; 1 MB over tcp: %.1f syscalls per round trip"
      % (small["unix"]["ns_per_round_trip"], small["tcp"]["ns_per_round_trip"], large["tcp"]["syscalls_per_round_trip"]))
PY
