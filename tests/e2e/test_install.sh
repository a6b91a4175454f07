#!/usr/bin/env bash
# make install / make uninstall into a temporary DESTDIR (PREFIX=/usr), and
# the installed tokentap run finding its probe library there.
#  1. every file lands with its mode: bin/tokentap 0755 (the one $BUILD
#     holds), lib/tokentap/libtokentap-probe.so 0644,
#     lib/systemd/system/tokentap-watch.service 0644, share/doc/tokentap/ each
#     of docs/*.md 0644; the unit is docs/deploy's with ExecStart (and
#     Documentation) on /usr, never on DESTDIR.
#  2. DESTDIR/usr/bin/tokentap run -- curl (TOKENTAP_PROBE unset, no library
#     beside the binary): the probe is found in ../lib/tokentap, every token
#     serve wrote is a TOKEN event at the client vantage.
#  3. the library removed: run fails before CMD starts, exit 3, one line on
#     stderr naming the places it looked.
#  4. make uninstall: none of the installed files left, nor the tokentap
#     directories; a file it did not install stays.
set -eu
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl not installed"
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$BUILD/tokentap" ] && [ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/tokentap or its probe library not built"
work=$(mktemp -d); dest="$work/dest"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
unset TOKENTAP_PROBE
# a make of its own: not the flags or variables of a make that runs this test
inst_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -C "$root" "$@" DESTDIR="$dest" PREFIX=/usr; }

# 1. the files and their modes
inst_make install BUILD="$BUILD" > "$work/install.out" 2>&1 || fail "make install: $(cat "$work/install.out")"
expect_file() { # expect_file PATH MODE
    [ -f "$dest$1" ] || fail "make install did not put $1"
    [ "$(stat -c %a "$dest$1")" = "$2" ] || fail "$1 has mode $(stat -c %a "$dest$1"), not $2"
}
expect_file /usr/bin/tokentap 755
expect_file /usr/lib/tokentap/libtokentap-probe.so 644
expect_file /usr/lib/systemd/system/tokentap-watch.service 644
cmp -s "$BUILD/tokentap" "$dest/usr/bin/tokentap" || fail "the installed binary is not $BUILD/tokentap"
cmp -s "$BUILD/libtokentap-probe.so" "$dest/usr/lib/tokentap/libtokentap-probe.so" || fail "the installed probe is not $BUILD's"
n_docs=0
for doc in "$root"/docs/*.md; do
    expect_file "/usr/share/doc/tokentap/$(basename "$doc")" 644
    cmp -s "$doc" "$dest/usr/share/doc/tokentap/$(basename "$doc")" || fail "share/doc/tokentap/$(basename "$doc") differs"
    n_docs=$((n_docs + 1))
done
installed=$(find "$dest" ! -type d | wc -l)
[ "$installed" = $((3 + n_docs)) ] || fail "make install put $installed files, expected $((3 + n_docs)): $(find "$dest" ! -type d)"
unit="$dest/usr/lib/systemd/system/tokentap-watch.service"
grep -q '^ExecStart=/usr/bin/tokentap watch ' "$unit" || fail "the unit's ExecStart: $(grep '^ExecStart' "$unit")"
! grep -qF "$dest" "$unit" || fail "the unit names DESTDIR: $(grep -F "$dest" "$unit")"
diff <(sed -E '/^(ExecStart|Documentation)=/s|/usr/local/|/usr/|' "$root/docs/deploy/tokentap-watch.service") "$unit" \
    > "$work/unit.diff" || fail "the installed unit is not docs/deploy's with /usr: $(cat "$work/unit.diff")"

# 2. the installed binary finds the installed probe
[ ! -e "$dest/usr/bin/libtokentap-probe.so" ] || fail "a probe library beside the installed binary"
start_serve "$work" --profile vllm --ttft-ms 5 --itl-ms 2 --created 1700000000 --seed 3
"$dest/usr/bin/tokentap" run --json --events --report "$work/run.json" -- \
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H 'x-request-id: inst-1' \
    -d '{"model":"m","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi"}]}' \
    -o "$work/curl.out" "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" \
    2> "$work/run.err" || fail "the installed run exit $?: $(cat "$work/run.err")"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve exit $?"
tokens=$(/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
rep = json.load(open(f"{work}/run.json"))
assert rep["vantage"] == "client", rep["vantage"]
reqs = [r for r in rep["requests"] if r["request_id"] == "inst-1"]
assert len(reqs) == 1, [r["request_id"] for r in rep["requests"]]
toks = [e for e in reqs[0]["events"] if e["kind"] == "TOKEN"]
log = [json.loads(l) for l in open(f"{work}/serve.log")]
writes = [e for e in log if e["type"] == "write" and e["request_id"] == "inst-1"
          and any(k == "token" for _, k in e["events"])]
assert len(writes) == 12 and len(toks) == len(writes), (len(toks), len(writes))
print(len(toks))
PY
) || fail "the installed run's report: $tokens"

# 3. no library: a clear error, CMD not started
rm "$dest/usr/lib/tokentap/libtokentap-probe.so"
rc=0
"$dest/usr/bin/tokentap" run -- touch "$work/ran" 2> "$work/missing.err" || rc=$?
[ "$rc" = 3 ] || fail "run without its library exit $rc, not 3: $(cat "$work/missing.err")"
[ ! -e "$work/ran" ] || fail "run started CMD without its library"
[ "$(wc -l < "$work/missing.err")" = 1 ] || fail "run without its library said more than one line: $(cat "$work/missing.err")"
grep -qF "the probe library $dest/usr/bin/libtokentap-probe.so or $dest/usr/lib/tokentap/libtokentap-probe.so is missing" \
    "$work/missing.err" || fail "run without its library: $(cat "$work/missing.err")"

# 4. uninstall: what install put, nothing else
touch "$dest/usr/bin/not-tokentap"
inst_make uninstall > "$work/uninstall.out" 2>&1 || fail "make uninstall: $(cat "$work/uninstall.out")"
left=$(find "$dest" ! -type d)
[ "$left" = "$dest/usr/bin/not-tokentap" ] || fail "after make uninstall: '$left' (expected only usr/bin/not-tokentap)"
for d in /usr/lib/tokentap /usr/share/doc/tokentap; do [ ! -e "$dest$d" ] || fail "make uninstall left $d"; done
echo "make install into DESTDIR: $((3 + n_docs)) files with their modes, ExecStart=/usr/bin/tokentap;" \
    "the installed run found lib/tokentap's probe ($tokens token events at the client vantage)," \
    "exit 3 in one line without it; make uninstall removed them all"
