#!/usr/bin/python3
"""pcap_skip.py IN OUT N: copy a classic little-endian pcap without its first
N packets: a capture begun while connections were already open."""
import struct
import sys

src, dst, skip = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
pos = 24
for _ in range(skip):
    pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
open(dst, "wb").write(data[:24] + data[pos:])
