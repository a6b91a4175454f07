#!/usr/bin/env bash
# genai-perf --service-kind triton joined to a capture of its gRPC streams
# (`tokentap analyze CAPTURE --bench-result profile_export.json`).
# build/tools/tttritongen writes, from instants it chose, what such a run
# leaves: the capture of perf_analyzer's ModelStreamInfer streams (two
# client threads, each message id thread << 48 | n), the profile_export.json
# perf_analyzer would write (the first request of thread 0 left out as
# outside the measurement window; thread 0's records, then thread 1's) and
# the truth per record. Checked against that truth, not against tokentap:
#  1. every record meets the request whose message id it was sent with, by
#     `order+start`, none by `id`; the warm-up request meets none; the
#     start delta is the send lag the tool put in (150 us); the reported
#     TTFT is the record's and the wire TTFT the tool's wire instants'; the
#     benchmark note says why no id was used.
#  2. the same with the capture put on CLOCK_MONOTONIC
#     (--wall-to-mono-offset): the records' wall clock instants are placed
#     with the same offset, and each request starts where the tool put it.
#  3. a triton export whose response has no text_output: exit 3, one line
#     naming the field.
set -eu
. "$(dirname "$0")/lib.sh"
work_dir
gen="$BUILD/tools/tttritongen"
[ -x "$gen" ] || fail "$gen not built"

"$gen" "$work/x.pcap" "$work/export.json" "$work/truth.jsonl" --threads 2 --requests 4 --before 1 \
    || fail "tttritongen failed"

check() { # REPORT TRUTH OFFSET: the checks of 1 (OFFSET: the capture's wall-to-mono offset, or "")
    /usr/bin/python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
truth = [json.loads(l) for l in open(sys.argv[2])]
offset = int(sys.argv[3]) if sys.argv[3] else None
b = doc["benchmark"]
assert b["format"] == "genai-perf", b["format"]
assert b["records"] == len(truth) == 7, b["records"]
assert b["matched"] == 7 and b["unmatched"] == 0, b
assert b["by_key"] == {"id": 0, "order+start": 7, "order": 0}, b["by_key"]
assert b["starts_on_capture_clock"] is True, b
assert "does not record it" in b["note"], b["note"]
seen = set()
for r in doc["requests"]:
    assert r["dialect"] == "triton-grpc", r["dialect"]
    j = r["join"]["benchmark"]
    if j is None:
        assert r["request_id"] == "0", ("only the warm-up is unmatched", r["request_id"])
        continue
    t = truth[j["index"]]
    assert r["request_id"] == t["request_id"], (j["index"], r["request_id"], t["request_id"])
    assert j["key"] == "order+start", j
    assert j["start_delta_ns"] == t["wire_start_ns"] - t["start_ns"], j
    assert r["reported"]["ttft_ns"] == t["ttft_ns"], (r["reported"], t)
    w = r["vantages"]["wire"]
    assert w["ttft_ns"] == t["wire_ttft_ns"], (w["ttft_ns"], t)
    if offset is not None:
        assert w["req_first_mono_ns"] == t["wire_start_ns"] - offset, (w["req_first_mono_ns"], t)
    seen.add(j["index"])
assert seen == set(range(7)), seen
PY
}

# 1.
"$TT" analyze "$work/x.pcap" --bench-result "$work/export.json" --json > "$work/r1.json" 2> "$work/r1.err" \
    || fail "analyze --bench-result exit $?: $(cat "$work/r1.err")"
check "$work/r1.json" "$work/truth.jsonl" "" || fail "check 1 (capture on the wall clock)"

# 2.
off=1764999990000000000
"$TT" analyze "$work/x.pcap" --bench-result "$work/export.json" --wall-to-mono-offset $off --json \
    > "$work/r2.json" 2> "$work/r2.err" || fail "analyze (offset) exit $?: $(cat "$work/r2.err")"
check "$work/r2.json" "$work/truth.jsonl" $off || fail "check 2 (capture put on CLOCK_MONOTONIC)"

# 3.
sed 's/{"text_output":"!"}/{"output_ids":[3]}/' "$work/export.json" > "$work/bad.json"
rc=0
"$TT" analyze "$work/x.pcap" --bench-result "$work/bad.json" --json > /dev/null 2> "$work/r3.err" || rc=$?
[ $rc = 3 ] || fail "a triton export without text_output: exit $rc, not 3"
grep -q 'response_outputs\[2\]: no "text_output" string' "$work/r3.err" || fail "no reason: $(cat "$work/r3.err")"
echo "PASS: test_bench_triton"
