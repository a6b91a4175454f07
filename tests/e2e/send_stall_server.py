#!/usr/bin/python3
"""An SSE server whose last token goes out in a send that must wait for
send-buffer space, for test_watch_send_stamp.sh. For each of four
connections, one after another: read the request head, write the response
head, then token events without blocking until the socket refuses more
(its send buffer, and the peer's receive buffer, are small and the client
does not read yet), then, blocking, the rest of the event the kernel cut,
3000 more token events, a last token "B" and [DONE], and close. Connection 1 writes with
os.write (write), connection 2 with socket.send (sendto), connection 3 with
os.writev of two buffers (writev), connection 4 with socket.sendmsg of two
buffers (sendmsg). Each blocking
send's CLOCK_MONOTONIC instants just before and just after it are printed
as JSON lines to LOG. Prints its port.

usage: send_stall_server.py LOG"""
import json, os, socket, sys, time

TAIL_TOKENS = 3000
log = open(sys.argv[1], "w")
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4)
print(srv.getsockname()[1], flush=True)


def event(text):
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


for conn_no, how in ((1, "write"), (2, "sendto"), (3, "writev"), (4, "sendmsg")):
    conn, _ = srv.accept()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
    head = b""
    while b"\r\n\r\n" not in head:
        got = conn.recv(4096)
        if not got:
            sys.exit("the client closed before its request head")
        head += got
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
    conn.setblocking(False)
    left = b""
    filler = 0
    while not left:
        data = event("f%d" % filler)
        try:
            n = os.write(conn.fileno(), data)
        except BlockingIOError:
            break
        filler += 1
        left = data[n:]
    conn.setblocking(True)
    # more than both buffers hold even once the peer's queue is collapsed:
    # the call cannot return before the client reads
    tail = left + b"".join(event("g%d" % i) for i in range(TAIL_TOKENS)) + event("B") + b"data: [DONE]\n\n"
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    half = [tail[: len(tail) // 2], tail[len(tail) // 2 :]]
    if how == "write":
        n = os.write(conn.fileno(), tail)
    elif how == "sendto":
        n = conn.send(tail)
    elif how == "writev":
        n = os.writev(conn.fileno(), half)
    else:
        n = conn.sendmsg(half)
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if n != len(tail):
        sys.exit(f"a blocking {how} took {n} of {len(tail)} bytes")
    log.write(json.dumps({"conn": conn_no, "syscall": how, "tokens": filler + TAIL_TOKENS + 1,
                          "before_ns": before, "after_ns": after}) + "\n")
    log.flush()
    conn.close()
