#!/usr/bin/env bash
# The command line tells the truth: help texts, version, every option works.
set -eu
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$TT" --help | grep -q '^usage: tokentap COMMAND' || fail "tokentap --help"
"$TT" version | grep -Eq '^tokentap [0-9]+\.[0-9]+\.[0-9]+$' || fail "version"
"$TT" analyze --help > "$work/help"
for opt in --json --events --text --percentiles --output; do
    grep -q -- "$opt" "$work/help" || fail "analyze --help does not mention $opt"
done
"$GEN" -o "$work/c.pcap" --truth "$work/c.truth" --streams 5 --tokens 12 --seed 9 > /dev/null
"$TT" analyze --percentiles 50,90,99.9 "$work/c.pcap" > "$work/text"
for l in 'Median TTFT (ms):' 'P90 TTFT (ms):' 'P99.9 ITL (ms):' 'Mean E2EL (ms):'; do
    grep -Fq "$l" "$work/text" || fail "text report lacks '$l'"
done
grep -Eq '^Successful requests \(complete\): +5 *$' "$work/text" || fail "text report: 5 successful requests"
"$TT" analyze --percentiles 50,oops "$work/c.pcap" 2>&1 | grep -q 'percentiles' || fail "bad --percentiles message"
"$TT" analyze -o 2>&1 | grep -q 'needs a value' || fail "-o without a value"
# the text report's mean TTFT equals the truth's, to the printed precision
/usr/bin/python3 - "$work/text" "$work/c.truth" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
truth = [json.loads(l) for l in open(sys.argv[2])]
mean = sum(t["token_ns"][0] - t["req_first_ns"] for t in truth) / len(truth) / 1e6
got = float(re.search(r"Mean TTFT \(ms\):\s+([0-9.]+)", text).group(1))
assert abs(got - mean) < 0.006, (got, mean)
PY
# events: one line per event, no text unless asked
"$TT" analyze --events "$work/c.pcap" > "$work/events"
[ "$(grep -c ' TOKEN ' "$work/events")" = 60 ] || fail "--events: wanted 60 TOKEN lines"
! grep -q ' text="' "$work/events" || fail "--events printed text without --text"
"$TT" analyze --events --text "$work/c.pcap" | grep -q ' TOKEN .* text="' || fail "--events --text shows no text"
"$TT" analyze --json "$work/c.pcap" | grep -q '"text"' && fail "--json printed text without --text"
"$TT" analyze --events --json "$work/c.pcap" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert sum(len(r["events"]) for r in d["requests"]) > 60'
# the wall-to-monotonic offset moves every instant and says so
"$TT" analyze --json --wall-to-mono-offset 1000000000 "$work/c.pcap" > "$work/off.json"
/usr/bin/python3 - "$work/off.json" "$work/c.truth" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
truth = {json.loads(l)["request_id"]: json.loads(l) for l in open(sys.argv[2])}
assert rep["clock"] == {"domain": "monotonic", "wall_to_mono_offset_ns": 1000000000}, rep["clock"]
for r in rep["requests"]:
    assert r["vantages"]["wire"]["req_first_mono_ns"] == truth[r["request_id"]]["req_first_ns"] - 1000000000
PY
"$TT" analyze --wall-to-mono-offset 12x "$work/c.pcap" 2>&1 | grep -q 'integer' || fail "bad offset message"
# a progress line on stderr when stderr is a terminal, none otherwise
"$GEN" -o "$work/big.pcap" --streams 300 --tokens 400 --seed 2 > /dev/null
script -qec "$TT analyze $work/big.pcap > /dev/null" /dev/null > "$work/tty.out"
grep -q 'analyze: .*%' "$work/tty.out" || fail "no progress line on a terminal"
"$TT" analyze "$work/big.pcap" 2> "$work/notty.err" > /dev/null
[ ! -s "$work/notty.err" ] || fail "progress printed to a non-terminal stderr"
echo "cli: help, version, options, events and text privacy hold"
