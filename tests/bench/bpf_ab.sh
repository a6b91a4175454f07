#!/usr/bin/env bash
# bpf_ab.sh OLD_TOKENTAP NEW_TOKENTAP [ROUNDS]: what a change to the eBPF
# programs did to a traced syscall's cost, measured paired. Each round runs,
# back to back, `ttpingpong -t tcp --one-thread` (one thread plays both ends
# of a loopback TCP pair: 4 syscalls per round trip, no wakeups) untraced,
# then traced by each binary's `watch --pid` and by each binary's
# `watch --comm` of a name no process has (every program rejects at its
# first check: the floor of the tracepoints), and by each binary's `watch
# --pid` of another process (a sleeper: the ping-pong is then a bystander,
# what every other process of the host pays while a server is watched).
# Prints each round's ns per
# round trip, then per mode the median over rounds of (mode - off) / 4, and
# the median ratio new/old of the added cost under --pid. Every other round
# runs the new binary before the old.
# Knobs: AB_ROUNDTRIPS (30000), AB_BYTES (64). Root; the ping-pong runs on
# the last CPU, watch on CPU 0. Not part of `make bench` (it needs a
# previous build): build the old commit elsewhere (git worktree) and pass
# both binaries.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD_TOKENTAP NEW_TOKENTAP [ROUNDS]" >&2; exit 2; }
cd "$(dirname "$0")/../.."
old=$1 new=$2 rounds=${3:-9}
pingpong=${BUILD:-build}/tools/ttpingpong
for f in "$old" "$new" "$pingpong"; do [ -x "$f" ] || { echo "$0: $f is not an executable" >&2; exit 2; }; done
[ "$(id -u)" = 0 ] || { echo "$0: eBPF tracing needs root" >&2; exit 2; }
trips=${AB_ROUNDTRIPS:-30000} bytes=${AB_BYTES:-64}
pp_cpu=$(($(nproc) - 1))
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

ns_per_trip() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tcp"]["ns_per_round_trip"])' "$1"; }

sleep 3600 & sleeper=$!
# one MODE TOKENTAP: one ping-pong run, untraced (off), traced (pid), with
# every program rejecting (none), or beside a watched sleeper (other)
one() {
    local mode=$1 tt=${2:-} out="$work/pp.json"
    local args=(-m "$trips" -n "$bytes" -t tcp --one-thread)
    if [ "$mode" = off ]; then
        taskset -c "$pp_cpu" "$pingpong" "${args[@]}" > "$out"
    else
        taskset -c "$pp_cpu" "$pingpong" "${args[@]}" --wait-signal > "$out" 2> "$work/ready" &
        local pp=$!
        for _ in $(seq 100); do grep -q '^ready ' "$work/ready" && break; sleep 0.02; done
        local filter=(--comm tt-no-such-name)
        [ "$mode" = pid ] && filter=(--pid "$pp")
        [ "$mode" = other ] && filter=(--pid "$sleeper")
        taskset -c 0 "$tt" watch -q "${filter[@]}" > /dev/null 2> "$work/watch.err" &
        local wp=$!
        for _ in $(seq 600); do grep -q '^tokentap watch: tracing' "$work/watch.err" && break; sleep 0.05; done
        if ! grep -q '^tokentap watch: tracing' "$work/watch.err"; then
            # this runs in a command substitution: its own children are not
            # the main shell's jobs, so they are stopped here
            kill "$wp" "$pp" 2>/dev/null || true
            echo "$0: watch did not start: $(cat "$work/watch.err")" >&2
            exit 1
        fi
        kill -USR1 "$pp"; wait "$pp"
        kill -INT "$wp"; wait "$wp" || true   # 4 (no HTTP seen) is expected
    fi
    ns_per_trip "$out"
}

echo "off pid_old pid_new none_old none_new other_old other_new (ns per round trip)"
for round in $(seq "$rounds"); do
    # every other round runs the new binary first: the second of two runs
    # back to back tends to be the slower one here
    declare -A got=()
    order=("off" "pid $old" "pid $new" "none $old" "none $new" "other $old" "other $new")
    [ $((round % 2)) = 0 ] && order=("off" "pid $new" "pid $old" "none $new" "none $old" "other $new" "other $old")
    for run in "${order[@]}"; do
        # shellcheck disable=SC2086 # "MODE BINARY", split on purpose
        got[$run]=$(one $run) || exit 1
    done
    echo "${got[off]} ${got[pid $old]} ${got[pid $new]} ${got[none $old]} ${got[none $new]} ${got[other $old]} ${got[other $new]}" | tee -a "$work/rows"
    unset got
done
/usr/bin/python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [[float(x) for x in line.split()] for line in open(sys.argv[1])]
for k, name in enumerate(["pid, old", "pid, new", "none, old", "none, new", "other, old", "other, new"], 1):
    print("%-10s added ns per syscall, median: %.1f" % (name, statistics.median((r[k] - r[0]) / 4 for r in rows)))
for k, name in ((1, "pid"), (3, "none"), (5, "other")):
    print("%s: new/old added cost, median ratio: %.3f" % (name, statistics.median((r[k + 1] - r[0]) / (r[k] - r[0]) for r in rows)))
PY
