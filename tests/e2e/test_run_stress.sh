#!/usr/bin/env bash
# tokentap run under stress (tests/tools/ttprobe_stress.c), no root needed.
#  1. threads, forks taken while they run, SIGUSR1 all along whose handler
#     write()s on a TCP socket, dup+close half way, MSG_PEEK, EAGAIN probes:
#     the program's checks pass (echoes intact, errno always as the real
#     call left it) and the probe accounts for every TCP byte every process
#     moved, exactly, with nothing dropped.
#  2. a full ring (--ring-kb 64) under a fast stream: records are dropped and
#     counted, delivered + dropped bytes = bytes moved, and the program is
#     not held back by the full ring: both flood runs pinned to one CPU (the
#     flood's two threads spread over two CPUs run 2-3 times slower, with or
#     without the probe, as their socket bounces between caches), the median
#     of 3 runs stays within 1.5x the runs without the probe, plus 50 ms (a
#     guard against blocking; the probe's cost is measured by make bench,
#     tests/bench/probe.sh). Unpinned when taskset is missing: 3x + 200 ms.
#  3. TOKENTAP_PROBE_PREFAULT=1 (a 256 KiB ring, 64 pages of 4 KiB:
#     TOKENTAP_HUGE_RINGS=0): the ring's first lap takes (almost) no page
#     fault in the program's thread, where without it each page of the ring
#     faults once.
#  4. the ring made while other threads record: 8 threads open the
#     process's first TCP connections together, and strace's fault
#     injection stretches the making of the ring (its ftruncate, a call
#     nothing else in the program makes; TOKENTAP_HUGE_RINGS=0, so no
#     spare) to 20 ms: the other threads wait for it and nothing is
#     dropped (without the wait 14 of 16 records were lost). Stretched to
#     300 ms, past the probe's 50 ms bound: the threads go on without
#     waiting longer, and their records are dropped and counted (delivered
#     + dropped = moved). As root, on run's huge-page tmpfs, the same with
#     the spare ring taken instead (its rename stretched).
set -eu
. "$(dirname "$0")/lib.sh"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
STRESS="$BUILD/tools/ttprobe_stress"
[ -x "$STRESS" ] || fail "$STRESS not built"
# A sanitizer build of the tool cannot have ASan first in its library list
# once the probe is preloaded: tell ASan that is expected.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
work=$(mktemp -d); trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$2" | head -1; }
run_bytes() { sed -n 's/.* connections, [0-9]* records, \([0-9]*\) bytes;.*/\1/p' "$1"; }
run_drops() { sed -n 's/.*ring full: [0-9]* records (\([0-9]*\) bytes) dropped.*/\1/p' "$1"; }
run_drop_records() { sed -n 's/.*ring full: \([0-9]*\) records.*/\1/p' "$1"; }

# 1.
"$TT" run -- "$STRESS" stress 4 3 150 > "$work/stress.out" 2> "$work/stress.err" \
    || fail "stress exit $?: $(cat "$work/stress.out" "$work/stress.err")"
moved=$(field tcp_bytes "$work/stress.out")
seen=$(run_bytes "$work/stress.err")
signals=$(field signals "$work/stress.out")
[ -n "$moved" ] && [ "$moved" -gt 0 ] || fail "no byte count from the tool: $(cat "$work/stress.out")"
[ "$(run_drop_records "$work/stress.err")" = 0 ] || fail "records dropped: $(cat "$work/stress.err")"
[ "$seen" = "$moved" ] || fail "the probe saw $seen bytes, the processes moved $moved: $(cat "$work/stress.err")"
grep -q 'process images' "$work/stress.err" || fail "no summary: $(cat "$work/stress.err")"
images=$(sed -n 's/.*probe: \([0-9]*\) process images.*/\1/p' "$work/stress.err")
[ "$images" -ge 4 ] || fail "expected the parent and 3 forked children, saw $images rings"

# 2.
pin=() slack_num=3 slack_den=1 slack_ns=200000000
if command -v taskset > /dev/null; then pin=(taskset -c 0) slack_num=3 slack_den=2 slack_ns=50000000; fi
plain=() probed=()
for i in 1 2 3; do
    "${pin[@]}" "$STRESS" flood 8000000 > "$work/plain$i.out" || fail "flood exit $?"
    plain+=("$(field elapsed_ns "$work/plain$i.out")")
    "$TT" run --ring-kb 64 -- "${pin[@]}" "$STRESS" flood 8000000 > "$work/flood$i.out" 2> "$work/flood$i.err" \
        || fail "flood under run exit $?: $(cat "$work/flood$i.err")"
    probed+=("$(field elapsed_ns "$work/flood$i.out")")
    total=$(field tcp_bytes "$work/flood$i.out")
    got=$(run_bytes "$work/flood$i.err") dropped=$(run_drops "$work/flood$i.err")
    [ $((got + dropped)) = "$total" ] || fail "delivered $got + dropped $dropped != moved $total"
done
[ "$(run_drop_records "$work/flood1.err")" -gt 0 ] || fail "a 64 KiB ring under a 16 MB stream dropped nothing"
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
mp=$(median "${plain[@]}") mq=$(median "${probed[@]}")
[ "$mq" -le $((mp * slack_num / slack_den + slack_ns)) ] || fail "the full ring held the program back: median $mq ns vs $mp ns"
# 3.
for pf in 0 1; do
    TOKENTAP_HUGE_RINGS=0 TOKENTAP_PROBE_PREFAULT=$pf "$TT" run --ring-kb 256 -- "$BUILD/tools/ttprobe_bench" 2 100 > "$work/pf$pf.out" \
        2> "$work/pf$pf.err" || fail "ttprobe_bench under run (prefault $pf) exit $?: $(cat "$work/pf$pf.err")"
done
faults0=$(field first_lap_faults "$work/pf0.out") faults1=$(field first_lap_faults "$work/pf1.out")
[ -n "$faults0" ] && [ "$faults0" -ge 60 ] || fail "without the prefault the first lap took ${faults0:-no} faults, not 64 or so"
[ -n "$faults1" ] && [ "$faults1" -le 8 ] || fail "with TOKENTAP_PROBE_PREFAULT=1 the first lap took ${faults1:-no} faults"
# 4.
race() { # CALL HUGE DELAY-US: the race under `run`, the ring's making stretched by DELAY-US at CALL
    local out="$work/race$1$3"
    TOKENTAP_HUGE_RINGS=$2 "$TT" run -- strace -f -qq -o /dev/null -e trace="$1" -e inject="$1":delay_enter="$3" \
        "$STRESS" race 8 > "$out.out" 2> "$out.err" || true
    grep -q '^tcp_bytes=8000$' "$out.out" || fail "race ($1, $3 us): $(cat "$out.out" "$out.err")"
    [ "$3" -gt 50000 ] || { [ "$(run_drop_records "$out.err")" = 0 ] && [ "$(run_bytes "$out.err")" = 8000 ]; } \
        || fail "threads recording while the ring was made ($1, $3 us) lost records: $(cat "$out.err")"
    got=$(run_bytes "$out.err") dropped=$(run_drops "$out.err")
    [ "$3" -le 50000 ] || { [ "$(run_drop_records "$out.err")" -gt 0 ] && [ $((got + dropped)) = 8000 ]; } \
        || fail "a ring made in $3 us ($1): want drops counted, delivered + dropped = 8000: $(cat "$out.err")"
}
if command -v strace > /dev/null; then
    race ftruncate 0 20000
    race ftruncate 0 300000
    race_note="; 8 threads racing the ring's making: nothing lost at 20 ms, $(run_drop_records "$work/raceftruncate300000.err") records dropped and counted at 300 ms"
    if [ "$(id -u)" = 0 ]; then
        TOKENTAP_HUGE_RINGS=1 "$TT" run -- strace -f -qq -o "$work/spare.strace" -e trace=renameat2 "$STRESS" race 8 \
            > /dev/null 2>&1 || true
        if grep -q 'spare\.ring.* = 0' "$work/spare.strace"; then
            race renameat2 1 20000
            race renameat2 1 300000
            race_note="$race_note; the same with the spare ring taken: $(run_drop_records "$work/racerenameat2300000.err") dropped at 300 ms"
        else
            race_note="$race_note; no spare ring here (no huge-page tmpfs): its race not run"
        fi
    fi
else
    race_note="; strace missing: the ring-making race not run"
fi
echo "tokentap run stress: $moved bytes over threads, 3 forks and $signals signal-handler writes all seen" \
     "(errno kept); full ring: $(run_drop_records "$work/flood1.err") records dropped and counted," \
     "flood median $((mq / 1000000)) ms with the probe vs $((mp / 1000000)) ms without;" \
     "first lap's page faults $faults0, prefaulted $faults1$race_note"
