#!/usr/bin/env bash
# The text report and the JSON document of `analyze CAPTURE` let go of each
# request's events once its ITLs, lint findings and JSON object are taken
# (report/release_digest.h). They must be what keeping every event writes
# (TOKENTAP_KEEP_EVENTS=1), byte for byte, with --jobs 1 and 2: every ttpcapgen dialect, HTTP/2, CRLF events and
# usage on the finish chunk (lint findings), lost packets and a capture
# joined part way (incomplete requests), a damaged capture (exit 5), --text
# and --percentiles, and one with more ITLs than the quantile keeps exactly
# (its sketch mode). Then the heap: on a capture of 500 000 token events,
# the peak RSS (the file is read through a window, not mapped) stays under
# 40 MiB with release and is less than half of what it is with the events
# kept, for the text report and for --json (not judged under ASan, whose
# allocator keeps what is freed in quarantine). No root needed.
set -eu
. "$(dirname "$0")/lib.sh"
work_dir

gen() { pcapgen 11 "$work/$1" "${@:2}"; } # gen NAME ARGS...: $work/NAME from ttpcapgen
caps=""
for d in openai-chat openai-completions responses anthropic tgi llamacpp ollama; do
    gen "$d.pcap" --dialect "$d" --streams 24 --tokens 20 --concurrency 8
    caps="$caps $d.pcap"
done
gen h2.pcapng --pcapng --http2 --streams-per-conn 4 --streams 48 --tokens 20 --concurrency 16
gen crlf.pcap --crlf --usage-with-choices --streams 20 --tokens 12 --concurrency 5 --ipv6
gen whole.pcap --streams 60 --tokens 30 --concurrency 20
gen sketch.pcap --streams 200 --tokens 400 --concurrency 32 # 79 800 ITLs: past the exact 65 536
tests/tools/pcap_drop.py "$work/whole.pcap" "$work/gaps.pcap" --fraction 0.03 --seed 5 --min 10 > /dev/null ||
    fail "pcap_drop"
/usr/bin/python3 tests/tools/pcap_skip.py "$work/whole.pcap" "$work/midway.pcap" 300 || fail "pcap_skip"
size=$(stat -c %s "$work/whole.pcap")
head -c $((size - 40)) "$work/whole.pcap" > "$work/damaged.pcap"
caps="$caps h2.pcapng crlf.pcap whole.pcap sketch.pcap gaps.pcap midway.pcap damaged.pcap"

compared=0
for cap in $caps; do
    for mode in "" --text "--percentiles 10,50,99.9" --json "--json --text"; do
        set +e
        env TOKENTAP_KEEP_EVENTS=1 "$TT" analyze --jobs 1 $mode -o "$work/kept.out" "$work/$cap" 2> "$work/kept.err"
        want=$?
        set -e
        [ "$want" = 0 ] || [ "$want" = 5 ] || fail "$cap $mode kept: exit $want: $(cat "$work/kept.err")"
        for jobs in 1 2; do
            for keep in 0 1; do
                [ "$jobs$keep" = 11 ] && continue
                set +e
                env TOKENTAP_KEEP_EVENTS=$keep "$TT" analyze --jobs $jobs $mode -o "$work/n.out" "$work/$cap" \
                    2> "$work/n.err"
                got=$?
                set -e
                [ "$got" = "$want" ] || fail "$cap $mode --jobs $jobs keep=$keep: exit $got, kept --jobs 1 $want"
                cmp -s "$work/kept.out" "$work/n.out" || fail "$cap $mode --jobs $jobs keep=$keep differs: \
$(diff "$work/kept.out" "$work/n.out" | head -6)"
                cmp -s "$work/kept.err" "$work/n.err" || fail "$cap $mode --jobs $jobs keep=$keep: stderr differs"
                compared=$((compared + 1))
            done
        done
    done
done

# --json with no temporary file to be had: the events are kept, the document the same
env TMPDIR=/nonexistent "$TT" analyze --json --jobs 2 -o "$work/n.out" "$work/sketch.pcap" 2> /dev/null ||
    fail "--json without TMPDIR: analyze failed"
env TOKENTAP_KEEP_EVENTS=1 "$TT" analyze --json --jobs 1 -o "$work/kept.out" "$work/sketch.pcap" 2> /dev/null
cmp -s "$work/kept.out" "$work/n.out" || fail "--json without TMPDIR differs"

# the captures show what the comparison is about, or it proves little
"$TT" analyze "$work/crlf.pcap" | grep -q '^warn   crlf-separator  *20 ' || fail "crlf.pcap: no crlf-separator findings"
"$TT" analyze "$work/gaps.pcap" | grep -Eq '^Incomplete requests: +[1-9]' || fail "gaps.pcap: no incomplete request"
"$TT" analyze "$work/h2.pcapng" | grep -Eq "^Successful requests \(complete\): +48 " || fail "h2.pcapng: not 48 complete requests"
"$TT" analyze "$work/sketch.pcap" | grep -Eq '^Total token events: +80000' || fail "sketch.pcap: not 80000 token events"

# heap: the peak RSS (the file is read through a window of 256 KiB, not
# mapped: the RSS is the heap and the shared libraries' resident pages)
gen heap.pcap --streams 1000 --tokens 500 --concurrency 64
heap_kib() { # heap_kib KEEP [--json]: peak RSS, KiB, of analyze --jobs 1
    /usr/bin/time -f %M -o "$work/rss" env TOKENTAP_KEEP_EVENTS=$1 "$TT" analyze --jobs 1 ${2:-} \
        -o "$work/heap.$1.out" "$work/heap.pcap" || fail "heap.pcap keep=$1 ${2:-}: analyze failed"
    cat "$work/rss"
}
# Under ASan the allocator quarantines what is freed (and adds its shadow
# and redzones): the heap is not judged there, the reports still compared.
san=0; nm -D "$TT" 2>/dev/null | grep -q __asan_init && san=1
said=""
for mode in text --json; do
    flag=${mode#text}
    released=$(heap_kib 0 $flag)
    kept=$(heap_kib 1 $flag)
    cmp -s "$work/heap.0.out" "$work/heap.1.out" || fail "heap.pcap $mode: the reports differ"
    if [ $san = 1 ]; then
        said="$said; $mode identical (heap not judged under ASan: ${released} KiB released, ${kept} KiB kept)"
        continue
    fi
    [ "$released" -lt $((40 * 1024)) ] || fail "$mode: heap with release ${released} KiB, want under 40 MiB"
    [ $((released * 2)) -lt "$kept" ] ||
        fail "$mode: heap with release ${released} KiB, kept ${kept} KiB: not under half"
    said="$said; $mode ${released} KiB released, ${kept} KiB kept"
done
echo "PASS: analyze text report and --json identical with events released and kept ($compared comparisons); \
heap of 500 000 events$said"
