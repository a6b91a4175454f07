#!/usr/bin/python3
"""pcap_drop.py IN OUT --fraction F --seed S [--min N] [--to-port PORT:K]
[--heads-from PORT:K]: copy a classic pcap of TCP over IPv4, leaving out
the fraction F of the packets that carry TCP payload (at least N of them),
chosen at random with seed S; then K more among those sent to PORT
(--to-port: requests, when PORT is the server's) and K more among those
sent from PORT whose payload begins a response head (--heads-from). The
bytes those packets carried are then missing from the capture although
they crossed the link: a capture that lost packets. Prints one JSON line
per packet left out: {"ts_ns", "sport", "dport", "len"} (ts_ns on the
capture's clock)."""
import argparse
import json
import random
import struct
import sys

LINK_HEADER = {0: 4, 1: 14, 12: 0, 101: 0, 113: 16, 276: 20}


def packets(data):
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    else:
        end = ">"
        magic = struct.unpack_from(">I", data, 0)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit("pcap_drop: not a classic pcap file")
    frac_ns = 1 if magic == 0xA1B23C4D else 1000
    link = struct.unpack_from(end + "I", data, 20)[0] & 0x0FFFFFFF
    if link not in LINK_HEADER:
        sys.exit("pcap_drop: link type %d not handled" % link)
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack_from(end + "IIII", data, off)
        rec = data[off:off + 16 + incl]
        yield rec, sec * 1_000_000_000 + frac * frac_ns, data[off + 16:off + 16 + incl], LINK_HEADER[link]
        off += 16 + incl


def tcp_payload(frame, link_len):
    """(sport, dport, payload bytes) of a TCP/IPv4 frame, or None."""
    ip = frame[link_len:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
        return None
    ihl = (ip[0] & 15) * 4
    total = struct.unpack_from(">H", ip, 2)[0]
    tcp = ip[ihl:]
    sport, dport = struct.unpack_from(">HH", tcp, 0)
    doff = (tcp[12] >> 4) * 4
    return sport, dport, bytes(tcp[doff:total - ihl])


def port_count(text):
    port, count = text.split(":")
    return int(port), int(count)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--fraction", type=float, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("--to-port", type=port_count, default=(0, 0))
    ap.add_argument("--heads-from", type=port_count, default=(0, 0))
    a = ap.parse_args()
    data = open(a.src, "rb").read()
    recs = list(packets(data))
    seg = {i: p for i, (_, _, frame, link) in enumerate(recs) if (p := tcp_payload(frame, link)) and p[2]}
    rng = random.Random(a.seed)
    drop = set(rng.sample(sorted(seg), min(max(a.min, round(a.fraction * len(seg))), len(seg))))
    for port, count, wanted in ((a.to_port[0], a.to_port[1], lambda p: p[1] == a.to_port[0]),
                                (a.heads_from[0], a.heads_from[1],
                                 lambda p: p[0] == a.heads_from[0] and p[2].startswith(b"HTTP/1."))):
        pool = sorted(i for i, p in seg.items() if i not in drop and wanted(p))
        drop |= set(rng.sample(pool, min(count, len(pool))))
    with open(a.dst, "wb") as out:
        out.write(data[:24])
        for i, (rec, ts, _, _) in enumerate(recs):
            if i in drop:
                sport, dport, payload = seg[i]
                print(json.dumps({"ts_ns": ts, "sport": sport, "dport": dport, "len": len(payload)}))
            else:
                out.write(rec)


if __name__ == "__main__":
    main()
