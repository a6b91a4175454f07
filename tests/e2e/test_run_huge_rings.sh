#!/usr/bin/env bash
# tokentap run as root holds the probe's rings in a private tmpfs with huge
# pages (userspace/source/ring_dir.h), so the traced program's first lap of
# its 16 MiB ring takes a few page faults instead of one per 4 KiB page,
# and keeps four spare rings made ahead that new processes take, so that
# no program zeroes its ring's first 2 MiB page itself.
#  1. by default: CMD sees a tmpfs mounted on its ring directory (mode
#     0700, huge=within_size); ttprobe_bench's first lap (16 MiB of
#     records) takes at most 1024 page faults (4097 on 4 KiB pages), and its
#     records all arrive (none dropped). Where strace is: three processes
#     started together, then two more one after the other, each take a
#     spare (five renames of a spare.ring.N, no ring file of their own
#     sized with ftruncate): the three found different ones, and the
#     collector made new ones after they were taken.
#  2. TOKENTAP_HUGE_RINGS=0: no mount, no spare, and the first lap takes a
#     fault per 4 KiB page again (at least 3072): the check of 1 can fail.
#  3. after each run no tokentap mount is left and the directory is gone.
# Skipped when this kernel or container refuses a tmpfs with huge=within_size
# (then run uses the plain directory, as 2 does).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "mounting the rings' tmpfs needs root"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
[ -x "$BUILD/tools/ttprobe_bench" ] || fail "$BUILD/tools/ttprobe_bench not built"
# A sanitizer build of the tool cannot have ASan first in its library list
# once the probe is preloaded: tell ASan that is expected.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
work=$(mktemp -d)
trap 'mountpoint -q "$work/m" 2>/dev/null && umount "$work/m"; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mkdir "$work/m"
mount -t tmpfs -o huge=within_size,mode=0700 tt-test "$work/m" 2>/dev/null || skip "no tmpfs with huge pages here"
umount "$work/m"

# one_run NAME [ENV...]: ttprobe_bench under run; CMD first notes its mounts.
one_run() {
    local name=$1; shift
    env "$@" "$TT" run --report /dev/null -- sh -c \
        "grep 'tokentap-run\.' /proc/self/mountinfo > '$work/$name.mounts' || true;
         exec '$BUILD/tools/ttprobe_bench' 100 500" > "$work/$name.out" 2> "$work/$name.err" \
        || fail "$name: run exit $?: $(cat "$work/$name.err")"
    ! grep -q 'tokentap-run\.' /proc/self/mountinfo || fail "$name: a ring tmpfs is still mounted after run"
    ! ls -d /dev/shm/tokentap-run.* 2>/dev/null | grep -q . || fail "$name: a ring directory is left: $(ls -d /dev/shm/tokentap-run.*)"
    grep -q 'ring full: 0 records (0 bytes) dropped' "$work/$name.err" || fail "$name: records dropped: $(cat "$work/$name.err")"
}
faults_of() { sed -n 's/.*first_lap_faults=\([0-9]*\).*/\1/p' "$work/$1.out"; }

# 1.
one_run huge
grep -q ' - tmpfs tokentap .*mode=700.*huge=within_size' "$work/huge.mounts" \
    || fail "CMD saw no huge-page tmpfs on its ring directory: $(cat "$work/huge.mounts")"
f=$(faults_of huge)
[ -n "$f" ] || fail "no first_lap_faults from ttprobe_bench: $(cat "$work/huge.out")"
[ "$f" -le 1024 ] || fail "first lap took $f page faults with huge pages (want <= 1024)"
spares=na
if command -v strace > /dev/null; then
    b="'$BUILD/tools/ttprobe_bench' 2 100 > /dev/null"
    # -ff: a file per process, so that two renames at once are not split
    # into strace's "<unfinished ...>" and "resumed" lines
    "$TT" run --report /dev/null -- strace -ff -qq -o "$work/strace" -e trace=renameat2,ftruncate sh -c \
        "$b & $b & $b & wait; $b && $b" \
        2> "$work/spares.err" || fail "five processes under run: exit $?: $(cat "$work/spares.err")"
    cat "$work"/strace.* > "$work/strace"
    spares=$(grep -c 'spare\.ring\.[0-3]", .*ring\.[0-9]*\.[0-9]*", RENAME_NOREPLACE) = 0' "$work/strace" || true)
    [ "$spares" = 5 ] || fail "want each of the five processes to take a spare ring, saw $spares: $(cat "$work/strace")"
    ! grep -q 'ftruncate(' "$work/strace" || fail "a process sized a ring of its own: $(cat "$work/strace")"
fi
# 2.
one_run plain TOKENTAP_HUGE_RINGS=0
[ ! -s "$work/plain.mounts" ] || fail "mounted with TOKENTAP_HUGE_RINGS=0: $(cat "$work/plain.mounts")"
g=$(faults_of plain)
[ -n "$g" ] && [ "$g" -ge 3072 ] || fail "first lap took ${g:-no} page faults on 4 KiB pages (want >= 3072)"
echo "PASS: run's rings on huge pages: first lap $f page faults (TOKENTAP_HUGE_RINGS=0: $g);" \
     "spare rings taken by five processes (three started together): $spares"
