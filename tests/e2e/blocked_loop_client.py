#!/usr/bin/python3
"""A streaming client whose event loop is blocked after every read, for the
socket-queue test (test_client_queue.sh).

A selector event loop (what asyncio's is, written out so that each read can
be stamped on both sides of its recv): when the socket is readable it reads
everything there, logs the read, then blocks the whole loop for BLOCK_MS
with time.sleep, as a benchmark's slow callback would. While it sleeps the
server's next token events wait in the socket's receive queue: that wait is
what tokentap must recover. Requests run one after another on fresh
connections, x-request-id PREFIX0..PREFIX(N-1) (default prefix bq-).

A watcher process (forked per connection, so it never holds the client's
GIL) polls the socket's getsockopt(TCP_INFO) in a tight loop and stamps
every change of tcpi_bytes_received (the bytes the kernel has taken in
order, updated just before it marks them readable): the client's own view
of when each byte became readable. BLOCKED_CLIENT_NO_WATCHER=1 leaves it
out (it keeps a core busy). BLOCKED_CLIENT_PEEK_ODD=1 makes every
odd-numbered request peek (recv with MSG_PEEK) before each read, as some
clients do to look for a complete frame.

OUT gets one JSON line per read {"request_id", "recv_start_ns", "recv_ns",
"len"} (the recv returned within [recv_start_ns, recv_ns]), one per request
{"request_id", "send_ns"} (the instant before the request was written) and
one per change seen by the watcher {"request_id", "not_before_ns",
"avail_ns", "bytes_received"} (the change happened within [not_before_ns,
avail_ns]), after one {"request_id", "baseline_ns", "bytes_received"} for
the watcher's first poll, taken before the request is sent. Both intervals are a few microseconds wide unless a process was
preempted, and then they say so.

usage: blocked_loop_client.py PORT N BLOCK_MS TOKENS OUT [PREFIX]"""
import json, os, selectors, socket, struct, sys, tempfile, time

port, n_requests, block_ms, tokens, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
prefix = sys.argv[6] if len(sys.argv) > 6 else "bq-"
log = []
TCPI_BYTES_RECEIVED = 128  # offset of the u64 tcpi_bytes_received in struct tcp_info (Linux 4.1+)


def watch_socket(fd, rid, stop_fd, ready_fd, path):
    """In a child process: take the socket's in-order received byte count
    once (the baseline, said on ready_fd), then stamp every change of it
    until stop_fd becomes readable, then write them to path."""
    sock = socket.socket(fileno=os.dup(fd))
    os.set_blocking(stop_fd, False)
    seen, last, n, prev_start = [], None, 0, time.monotonic_ns()
    while True:
        start = time.monotonic_ns()
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        now = time.monotonic_ns()
        if len(info) < TCPI_BYTES_RECEIVED + 8:
            break
        got = struct.unpack_from("=Q", info, TCPI_BYTES_RECEIVED)[0]
        if last is None:
            # the first poll is no change: what arrived before it arrived at an unknown time
            seen.append({"request_id": rid, "baseline_ns": now, "bytes_received": got})
            last = got
            os.write(ready_fd, b"r")
            os.close(ready_fd)
        elif got != last:
            # the previous poll read the old count somewhere after it started, this one the
            # new count before it returned: the change lies between
            seen.append({"request_id": rid, "not_before_ns": prev_start, "avail_ns": now, "bytes_received": got})
            last = got
        prev_start = start
        n += 1
        if n % 64 == 0:
            try:
                os.read(stop_fd, 1)
                break  # a byte, or the parent is gone
            except BlockingIOError:
                pass
    with open(path, "w") as f:
        json.dump(seen, f)


def start_watcher(sock, rid):
    if os.environ.get("BLOCKED_CLIENT_NO_WATCHER") == "1":
        return None
    stop_r, stop_w = os.pipe()
    ready_r, ready_w = os.pipe()
    tmp_fd, path = tempfile.mkstemp(prefix="tt-watcher-")
    os.close(tmp_fd)
    pid = os.fork()
    if pid == 0:
        os.close(stop_w)
        os.close(ready_r)
        try:
            watch_socket(sock.fileno(), rid, stop_r, ready_w, path)
        finally:
            os._exit(0)
    os.close(stop_r)
    os.close(ready_w)
    # the request goes out only once the watcher has its baseline: on a busy
    # machine the forked child can start polling milliseconds late, and a
    # first token that arrived before its first poll has no true instant
    os.read(ready_r, 1)
    os.close(ready_r)
    return pid, stop_w, path


def stop_watcher(w):
    if w is None:
        return
    pid, stop_w, path = w
    os.write(stop_w, b"x")
    os.close(stop_w)
    os.waitpid(pid, 0)
    with open(path) as f:
        log.extend(json.load(f))
    os.unlink(path)


def one(rid, peek):
    body = json.dumps({"model": "m", "stream": True, "max_tokens": tokens,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {rid}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", port))
    watcher = start_watcher(sock, rid)
    log.append({"request_id": rid, "send_ns": time.monotonic_ns()})
    sock.sendall(head + body)
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    got = b""
    done = False
    while not done:
        for _key, _mask in sel.select(timeout=30):
            try:
                if peek:
                    sock.recv(1 << 18, socket.MSG_PEEK)
                t0 = time.monotonic_ns()
                data = sock.recv(1 << 18)
            except BlockingIOError:
                continue
            t1 = time.monotonic_ns()
            if not data:
                done = True
                break
            log.append({"request_id": rid, "recv_start_ns": t0, "recv_ns": t1, "len": len(data)})
            got += data
            time.sleep(block_ms / 1000.0)  # the loop is blocked: nothing else runs, nothing is read
    sel.close()
    sock.close()
    stop_watcher(watcher)
    assert got.startswith(b"HTTP/1.1 200"), got[:80]
    assert b"[DONE]" in got, got[-200:]


peek_odd = os.environ.get("BLOCKED_CLIENT_PEEK_ODD") == "1"
for i in range(n_requests):
    one(f"{prefix}{i}", peek_odd and i % 2 == 1)
with open(out, "w") as f:
    for rec in log:
        f.write(json.dumps(rec) + "\n")
