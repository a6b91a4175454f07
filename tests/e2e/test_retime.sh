#!/usr/bin/env bash
# tests/tools/retime_recording.py, the ground truth of the two-host clock
# tests (docs/clocks.md): a recording of `tokentap run -o` (as root with the
# server vantage and the wire) rewritten with a known offset (+5 s) and skew
# (+50 ppm) must analyze to the same requests with every instant of every
# vantage moved by exactly T(m) = m + offset + round(skew * (m - start)),
# the wire's wall-clock instants included (through the manifest's offset).
set -eu
. "$(dirname "$0")/lib.sh"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
start_serve "$work" --profile vllm --ttft-ms 10 --itl-ms 2 --tokens 6
server=()
[ "$(id -u)" = 0 ] && server=(--server-port "$SERVE_PORT")
"$TT" run -o "$work/rec" "${server[@]}" -- bash -c "for i in 1 2 3; do curl -sN -o /dev/null -H 'content-type: application/json' \
    -H \"x-request-id: rt-\$i\" -d '{\"model\":\"m\",\"stream\":true,\"max_tokens\":6,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}' \
    http://127.0.0.1:$SERVE_PORT/v1/chat/completions; done" > /dev/null 2> "$work/run.err" || fail "run -o: $(cat "$work/run.err")"
/usr/bin/python3 tests/tools/retime_recording.py "$work/rec" "$work/moved" 5000000000 50 || fail "retime"
[ "$(stat -c %a "$work/moved")" = 700 ] && [ "$(stat -c %a "$work/moved/manifest.json")" = 600 ] || fail "modes"
"$TT" analyze --json -o "$work/a.json" "$work/rec" 2> /dev/null || fail "analyze rec: exit $?"
"$TT" analyze --json -o "$work/b.json" "$work/moved" 2> /dev/null || fail "analyze moved: exit $?"
/usr/bin/python3 - "$work/a.json" "$work/b.json" "$work/rec/manifest.json" <<'PY'
import json, sys
from fractions import Fraction
a, b, man = (json.load(open(p)) for p in sys.argv[1:4])
t0 = man["start_mono_ns"]
T = lambda m: m + 5000000000 + round(Fraction(50) * (m - t0) / 10**6)
ra, rb = a["requests"], b["requests"]
assert len(ra) == len(rb) == 3, (len(ra), len(rb))
n = 0
for x, y in zip(ra, rb):
    assert x["request_id"] == y["request_id"], (x["request_id"], y["request_id"])
    assert set(x["vantages"]) == set(y["vantages"]), (x["vantages"].keys(), y["vantages"].keys())
    for v in x["vantages"]:
        for k, val in x["vantages"][v].items():
            if k.endswith("_mono_ns") and val is not None:
                assert y["vantages"][v][k] == T(val), (v, k, val, y["vantages"][v][k], T(val))
                n += 1
print("retime: 3 requests at %s, %d instants, every one moved by exactly +5 s and +50 ppm"
      % (",".join(sorted(ra[0]["vantages"])), n))
PY
