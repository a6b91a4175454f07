#!/usr/bin/env bash
# Bad input: a clear one-line message on stderr and the documented exit
# status (docs/formats.md), never a crash and never a report of made-up numbers.
set -u
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
expect() { # expect STATUS NAME -- ARGS...
    local want=$1 name=$2; shift 3
    "$TT" "$@" > "$work/out" 2> "$work/err"; local got=$?
    [ "$got" = "$want" ] || fail "$name: exit $got, wanted $want; stderr: $(cat "$work/err")"
    if [ "$want" != 0 ]; then
        local lines; lines=$(grep -c . "$work/err")
        [ "$lines" = 1 ] || fail "$name: wanted one line on stderr, got $lines: $(cat "$work/err")"
        grep -q '^tokentap' "$work/err" || fail "$name: message does not name tokentap: $(cat "$work/err")"
    fi
}
expect 3 missing -- analyze "$work/nope.pcap"
printf 'this is not a capture\n' > "$work/text.pcap"
expect 3 not-a-capture -- analyze "$work/text.pcap"
: > "$work/empty.pcap"
expect 3 empty -- analyze "$work/empty.pcap"
expect 3 directory -- analyze "$work"
expect 2 no-args -- analyze
expect 2 bad-option -- analyze --bogus x
expect 2 bad-percentiles -- analyze --percentiles 50,abc "$work/x"
expect 2 unknown-command -- frobnicate

# truncated: a good capture cut in the middle of its last record
"$GEN" -o "$work/good.pcap" --streams 3 --tokens 20 --seed 1 > /dev/null
size=$(stat -c %s "$work/good.pcap")
head -c $((size - 600)) "$work/good.pcap" > "$work/cut.pcap"
expect 5 truncated -- analyze --json "$work/cut.pcap"
grep -q '"complete": false' "$work/out" || fail "truncated: the cut request is not marked incomplete"

# a capture with TCP but no HTTP: raw-IP pcap, one segment of garbage
/usr/bin/python3 - "$work/nohttp.pcap" <<'PY'
import struct, sys
payload = b"\x00\x01garbage that is not http\r\n\r\n"
tcp = struct.pack("!HHIIBBHHH", 40000, 9000, 1000, 0, 5 << 4, 0x18, 65535, 0, 0)
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 1, 0, 64, 6, 0,
                 bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
pkt = ip + tcp + payload
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 101))
    f.write(struct.pack("<IIII", 1700000000, 0, len(pkt), len(pkt)) + pkt)
PY
expect 4 no-http -- analyze "$work/nohttp.pcap"

# output file is created 0600
"$TT" analyze --json -o "$work/report.json" "$work/good.pcap" || fail "analyze -o"
[ "$(stat -c %a "$work/report.json")" = 600 ] || fail "report file mode $(stat -c %a "$work/report.json")"
expect 6 unwritable-output -- analyze -o "$work/no/such/dir/x.json" "$work/good.pcap"
echo "bad input: all cases give the documented status and one line"
