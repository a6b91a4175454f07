#!/usr/bin/env bash
# `analyze --jobs N` writes what one job writes: each capture below analysed
# with --jobs 1 and with --jobs 2, 3 and 4 gives byte-identical --json, text
# and --events output (and exit status). The captures: ttpcapgen dialects
# (pcap and pcapng, IPv6), HTTP/2 with 4 streams per connection, one with 3 %
# of its payload packets left out (tests/tools/pcap_drop.py: gaps), one that
# starts part way (the first packets cut off: connections joined mid-stream,
# connection notes from many connections, whose order the merge must keep),
# one with instants rounded to 100 ms (requests of several connections
# starting at one instant: ordered by connection), and one truncated inside
# a record (damaged, exit 5). No root needed.
set -eu
. "$(dirname "$0")/lib.sh"
work_dir

gen() { pcapgen 7 "$work/$1" "${@:2}"; } # gen NAME ARGS...: $work/NAME from ttpcapgen
gen chat.pcap --dialect openai-chat --streams 40 --tokens 30 --concurrency 12
gen anthropic.pcapng --pcapng --dialect anthropic --streams 30 --tokens 20 --concurrency 8
gen ollama.pcap --dialect ollama --streams 30 --tokens 20 --concurrency 8 --ipv6
gen responses.pcap --dialect responses --streams 24 --tokens 16 --concurrency 6 --linktype sll2
gen h2.pcap --http2 --streams-per-conn 4 --streams 48 --tokens 20 --concurrency 16
gen whole.pcap --streams 60 --tokens 30 --concurrency 20
tests/tools/pcap_drop.py "$work/whole.pcap" "$work/gaps.pcap" --fraction 0.03 --seed 5 --min 10 > /dev/null ||
    fail "pcap_drop"
# the first 300 packets cut off: the capture starts inside 20 connections
/usr/bin/python3 tests/tools/pcap_skip.py "$work/whole.pcap" "$work/midway.pcap" 300 || fail "pcap_skip"
# every instant rounded down to 100 ms: requests of different connections
# start at the same instant, ordered by which connection came first
/usr/bin/python3 - "$work/whole.pcap" "$work/coarse.pcap" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
assert struct.unpack_from("<I", data, 0)[0] == 0xA1B23C4D
pos = 24
while pos < len(data):
    sec, ns, caplen = struct.unpack_from("<III", data, pos)  # a nanosecond pcap
    struct.pack_into("<I", data, pos + 4, ns // 100000000 * 100000000)
    pos += 16 + caplen
open(sys.argv[2], "wb").write(data)
PY
# the last record cut short: a damaged capture
size=$(stat -c %s "$work/chat.pcap")
head -c $((size - 40)) "$work/chat.pcap" > "$work/damaged.pcap"

compared=0
for cap in chat.pcap anthropic.pcapng ollama.pcap responses.pcap h2.pcap gaps.pcap midway.pcap coarse.pcap \
    damaged.pcap; do
    for mode in --json "" --events "--events --json" --text; do
        set +e
        "$TT" analyze --jobs 1 $mode -o "$work/one.out" "$work/$cap" 2> "$work/one.err"
        want=$?
        set -e
        [ "$want" = 0 ] || [ "$want" = 5 ] || fail "$cap $mode --jobs 1: exit $want: $(cat "$work/one.err")"
        for jobs in 2 3 4; do
            set +e
            "$TT" analyze --jobs "$jobs" $mode -o "$work/n.out" "$work/$cap" 2> "$work/n.err"
            got=$?
            set -e
            [ "$got" = "$want" ] || fail "$cap $mode: --jobs $jobs exit $got, --jobs 1 exit $want"
            cmp -s "$work/one.out" "$work/n.out" ||
                fail "$cap $mode: --jobs $jobs differs from --jobs 1: $(diff "$work/one.out" "$work/n.out" | head -5)"
            cmp -s "$work/one.err" "$work/n.err" || fail "$cap $mode: --jobs $jobs stderr differs"
            compared=$((compared + 1))
        done
    done
done

# the captures exercise what the merge must get right, or the test proves little
check() { # check CAPTURE PYTHON-EXPRESSION over the JSON document d
    "$TT" analyze --jobs 1 --json -o "$work/c.json" "$work/$1" 2> /dev/null || true
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$work/c.json" ||
        fail "$1: expected $2"
}
check midway.pcap 'len(d["connection_notes"]) + len(d["connections_not_analysed"]) >= 5'
check gaps.pcap 'd["source"]["gaps"] > 0'
check h2.pcap 'len(d["requests"]) == 48 and len({r["connection"]["client"] for r in d["requests"]}) == 12'
check coarse.pcap 'len({r["vantages"]["wire"]["req_first_mono_ns"] for r in d["requests"]}) < len(d["requests"]) / 2'
check damaged.pcap 'd["source"]["error"] is not None'

# --jobs wants 1..64
for bad in 0 65 x ""; do
    set +e
    "$TT" analyze --jobs "$bad" "$work/chat.pcap" > /dev/null 2>&1
    rc=$?
    set -e
    [ "$rc" = 2 ] || fail "--jobs '$bad': exit $rc, want 2"
done
echo "PASS: analyze --jobs 2/3/4 identical to --jobs 1 ($compared comparisons)"
