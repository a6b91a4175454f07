#!/usr/bin/python3
"""Rewrite a recording directory (tokentap record / run -o) as if a host
whose clocks differ by a known offset and skew had made it: the ground
truth for the two-host clock tests (docs/clocks.md).

usage: retime_recording.py SRC DST OFFSET_NS SKEW_PPM

Every CLOCK_MONOTONIC instant m becomes
    T(m) = m + OFFSET_NS + round(SKEW_PPM * (m - start_mono_ns) / 1e6)
(start_mono_ns from SRC's manifest; exact integer arithmetic, SKEW_PPM read
as a decimal fraction). The socket vantages (client.pcap, server.pcap,
server_tls.pcap, client_tls.pcap) are on CLOCK_MONOTONIC; the wire (wire.pcap) and the manifest's
wall instants are wall clock, moved with the host's monotonic clock:
w -> T(w - off) + off, off the manifest's wall_to_mono_offset_ns.start, so
the offset the manifest records stays true of the rewritten files. The
manifest's clock_id is made another clock's. Classic
pcap files only (nanosecond or microsecond, either byte order). DST is
created mode 0700, its files 0600."""
import json, os, struct, sys
from fractions import Fraction


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n\n")[1])
    src, dst, offset, skew = sys.argv[1], sys.argv[2], int(sys.argv[3]), Fraction(sys.argv[4])
    man = json.load(open(os.path.join(src, "manifest.json")))
    t0 = man["start_mono_ns"]
    off = man["wall_to_mono_offset_ns"]["start"]

    def mono(m):
        return m + offset + round(skew * (m - t0) / 10**6)

    def wall(w):
        return mono(w - off) + off

    os.mkdir(dst, 0o700)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name == "manifest.json" or not name.endswith(".pcap"):
            continue
        retime_pcap(path, os.path.join(dst, name), wall if name == "wire.pcap" else mono)
    for k in ("start_mono_ns", "end_mono_ns"):
        man[k] = mono(man[k])
    for k in ("start_wall_ns", "end_wall_ns"):
        man[k] = wall(man[k])
    if man.get("clock_id"):
        man["clock_id"] += "/retimed %+d %s" % (offset, skew)  # another host's clock, not the same one
    fd = os.open(os.path.join(dst, "manifest.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(man, f, indent=2)


def retime_pcap(src, dst, move):
    data = open(src, "rb").read()
    magic = data[:4]
    kinds = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
             b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}
    if magic not in kinds:
        sys.exit(f"retime_recording: {src}: not a classic pcap file")
    order, unit = kinds[magic]
    out = bytearray(data[:24])
    pos = 24
    while pos < len(data):
        if pos + 16 > len(data):
            sys.exit(f"retime_recording: {src}: cut in a record header")
        sec, frac, incl, orig = struct.unpack_from(order + "IIII", data, pos)
        ns = move(sec * 10**9 + frac * unit)
        if ns < 0:
            sys.exit(f"retime_recording: {src}: an instant before the epoch after the shift")
        out += struct.pack(order + "IIII", ns // 10**9, (ns % 10**9) // unit, incl, orig)
        out += data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(out)


main()
