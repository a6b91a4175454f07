#!/usr/bin/python3
"""Write the seed inputs of fuzz_bpf_source (tests/fuzz/corpus/fuzz_bpf_source/).

The harness reads a run of records, each a 2-byte little-endian length and
then a struct tt_socktap_event head (bpf/socktap.h, x86_64 layout) with its
data and marks. The seeds are built here rather than kept as opaque bytes so
that a change to the head is one edit: rerun this script after it.

  /usr/bin/python3 tests/fuzz/make_bpf_source_seeds.py
"""
import os
import struct

HEAD = struct.Struct("<QQQQQqIIiIIIHHHBBBB16s16s2xII4xQ")
MARK = struct.Struct("<QII")
assert HEAD.size == 136, HEAD.size  # sizeof(struct tt_socktap_event)

KIND_DATA, KIND_CLOSE, KIND_CONNECT, KIND_ACCEPT, KIND_EOF, KIND_READY, KIND_TLS_PAIR = 0, 1, 2, 3, 4, 5, 6
SEND, RECV = 0, 1
SYS_TLS_WRITE, SYS_TLS_READ = 15, 16
F_SEQ, F_TLS, F_TLS_PENDING = 1 << 4, 1 << 6, 1 << 7
FROM_START = 0x80000000
LOOPBACK = bytes([127, 0, 0, 1]) + bytes(12)


def record(kind, ns, fd=5, direction=RECV, data=b"", seq=0, flags=0, marks=(), sock=0xabc, tgid=42, syscall=0,
           socket_ns=0):
    """One record with its length prefix: head, data, then the marks from the
    data's next 8-byte boundary."""
    head = HEAD.pack(ns, ns, ns, sock, 0, len(data), tgid, tgid, fd, len(data), 0, len(data), 2, 8000, 40000,
                     direction, syscall, flags, kind, LOOPBACK, LOOPBACK, seq, len(marks), socket_ns)
    body = data
    if marks:
        body += bytes(-len(data) % 8)
        body += b"".join(MARK.pack(*m) for m in marks)
    rec = head + body
    return struct.pack("<H", len(rec)) + rec


def seeds():
    isn = 1000
    request = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    response = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
    # a server: accept, the request's mark folded into its read, the response, close
    yield "accept_read_marks", b"".join([
        record(KIND_ACCEPT, 10),
        record(KIND_DATA, 30, data=request, seq=isn, flags=F_SEQ, marks=[(20, isn + len(request), FROM_START)]),
        record(KIND_DATA, 40, direction=SEND, data=response, seq=5000, flags=F_SEQ),
        record(KIND_CLOSE, 50),
    ])
    # a client: connect, a READY record with marks (the slots were full), the
    # response read in two pieces, the second carrying a mark twice
    half = len(response) // 2
    yield "connect_ready_read", b"".join([
        record(KIND_CONNECT, 10),
        record(KIND_DATA, 15, direction=SEND, data=request, seq=isn, flags=F_SEQ),
        record(KIND_READY, 25, fd=-1, tgid=0, marks=[(21, 7000 + half - 10, FROM_START), (22, 7000 + half, 10)]),
        record(KIND_DATA, 30, data=response[:half], seq=7000, flags=F_SEQ),
        record(KIND_DATA, 40, data=response[half:], seq=7000 + half, flags=F_SEQ,
               marks=[(22, 7000 + half, 10), (35, 7000 + len(response), len(response) - half)]),
        record(KIND_EOF, 45),
        record(KIND_CLOSE, 50),
    ])
    # TLS: ciphertext on the socket, the plaintext beside it (F_TLS), a write
    # held pending until its TLS_PAIR names the socket
    cipher = bytes(range(7, 7 + 90))
    yield "tls_plaintext", b"".join([
        record(KIND_CONNECT, 10),
        record(KIND_DATA, 12, direction=SEND, data=cipher[:40], seq=isn, flags=F_SEQ),
        record(KIND_DATA, 11, direction=SEND, data=request, flags=F_TLS, syscall=SYS_TLS_WRITE, socket_ns=12),
        record(KIND_DATA, 20, data=cipher[40:], seq=9000, flags=F_SEQ, marks=[(18, 9050, FROM_START)]),
        record(KIND_DATA, 21, data=response, flags=F_TLS, syscall=SYS_TLS_READ, socket_ns=20),
        record(KIND_DATA, 30, direction=SEND, data=b"PING", flags=F_TLS | F_TLS_PENDING, sock=0, fd=-1,
               syscall=SYS_TLS_WRITE),
        record(KIND_TLS_PAIR, 31, direction=SEND),
        record(KIND_CLOSE, 50),
    ])


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_bpf_source")
    os.makedirs(out, exist_ok=True)
    for name, blob in seeds():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
