#!/usr/bin/env bash
# The heap of `tokentap analyze CAPTURE` (the text report and --json; issue
# 16); prints a markdown subsection on stdout for docs/performance.md (run.sh
# appends it to the analyze section). A capture of 4,000,000 token events
# (HEAP_BENCH_STREAMS x 500; default 8000 streams, about 1.45 GB) analyzed
# with each request's events released once filed (the default for both)
# and kept (TOKENTAP_KEEP_EVENTS=1), runs alternated HEAP_BENCH_RUNS times
# (default 3), the median of each: the text report pinned to one core with
# --jobs 1 and unpinned with the default --jobs, and --json pinned. Peak RSS from /usr/bin/time; the
# file is read through a window of 256 KiB per thread (not mapped), so the
# heap is the peak RSS, shared libraries included.
# The capture is removed afterwards.
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/machine.sh
BUILD=${BUILD:-build}
runs=${HEAP_BENCH_RUNS:-3}
streams=${HEAP_BENCH_STREAMS:-8000}
TT=$BUILD/tokentap GEN=$BUILD/tools/ttpcapgen
for f in "$TT" "$GEN"; do [ -e "$f" ] || { echo "bench heap: $f is not built" >&2; exit 1; }; done
[ -x /usr/bin/time ] || { echo "bench heap: /usr/bin/time is not installed" >&2; exit 1; }
work=$(mktemp -d "${HEAP_BENCH_DIR:-$BUILD}/heap.XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

cap=$work/heap.pcap
gen_cmd="$GEN -o $cap --dialect openai-chat --streams $streams --tokens 500 --concurrency 64 --seed 1"
echo "bench heap: $gen_cmd" >&2
$gen_cmd > /dev/null
sync "$cap"
bytes=$(stat -c %s "$cap")
jobs_default=$(nproc)
cat "$cap" > /dev/null # warm the page cache

# one KEEP PIN: a line "KIB SECONDS" (peak RSS, wall) of one analyze; the report must be the released one's.
# PIN 1: taskset -c 0 --jobs 1, 0: default jobs, J: --json pinned
one() {
    local keep=$1 pin=$2
    local -a cmd=("$TT" analyze -o "$work/out.$keep" "$cap")
    [ "$pin" = 1 ] && cmd=(taskset -c 0 "$TT" analyze --jobs 1 -o "$work/out.$keep" "$cap")
    [ "$pin" = J ] && cmd=(taskset -c 0 "$TT" analyze --jobs 1 --json -o "$work/out.$keep" "$cap")
    /usr/bin/time -f "%M %e" -o "$work/time" env TOKENTAP_KEEP_EVENTS=$keep "${cmd[@]}" ||
        { echo "bench heap: analyze failed (keep=$keep pin=$pin)" >&2; exit 1; }
    cat "$work/time"
}
declare -A rss wall
for _ in $(seq "$runs"); do
    for pin in 1 0 J; do
        for keep in 0 1; do
            read -r kib s < <(one "$keep" "$pin")
            rss[$pin$keep]+="$kib"$'\n'
            wall[$pin$keep]+="$s"$'\n'
        done
        cmp -s "$work/out.0" "$work/out.1" || { echo "bench heap: reports differ with events kept" >&2; exit 1; }
    done
done
"$TT" analyze -o "$work/out.0" "$cap"
events=$(awk -F: '/^Total token events:/ {gsub(/ /,"",$2); print $2}' "$work/out.0")
row() { # row PIN KEEP LABEL
    local r w
    r=$(printf '%s' "${rss[$1$2]}" | median)
    w=$(printf '%s' "${wall[$1$2]}" | median)
    awk -v r="$r" -v b="$bytes" -v w="$w" -v l="$3" \
        'BEGIN {printf "| %s | %.0f | %.2f |\n", l, r / 1024, w}'
}
echo "### Heap of the text report and --json"
echo
echo "Measured by tests/bench/heap.sh on $(date -u +%Y-%m-%d): $(machine_line). Capture:"
echo "\`${gen_cmd/$cap/FILE}\`"
echo "($bytes bytes, $events token events). The text report and --json let go of"
echo "each request's events once it is filed (its ITLs pooled into the quantile of"
echo "docs/metrics.md, its lint findings kept, for --json its object spooled to a"
echo "temporary file); TOKENTAP_KEEP_EVENTS=1 keeps them, as --events, --perfetto,"
echo "--bench-result, recordings and lint do."
echo "The file is read through a window of 256 KiB per thread, not mapped: the peak RSS"
echo "is the heap, with the shared libraries' resident pages (about 7 MiB)."
echo "Medians of $runs runs, the six conditions alternated."
echo
echo "| command | peak RSS, MiB | seconds |"
echo "|---|---|---|"
row 1 0 "\`taskset -c 0 tokentap analyze --jobs 1 FILE\` (events released)"
row 1 1 "\`TOKENTAP_KEEP_EVENTS=1 taskset -c 0 tokentap analyze --jobs 1 FILE\`"
row 0 0 "\`tokentap analyze FILE\` (--jobs $jobs_default, events released)"
row 0 1 "\`TOKENTAP_KEEP_EVENTS=1 tokentap analyze FILE\` (--jobs $jobs_default)"
row J 0 "\`taskset -c 0 tokentap analyze --jobs 1 --json -o OUT FILE\` (events released)"
row J 1 "\`TOKENTAP_KEEP_EVENTS=1 taskset -c 0 tokentap analyze --jobs 1 --json -o OUT FILE\`"
echo
echo "Target (issue 16): at most 64 MB of heap for the text report of 4 M events."
