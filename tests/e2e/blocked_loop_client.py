#!/usr/bin/python3
"""A streaming client whose event loop is blocked after every read, for the
socket-queue test (test_client_queue.sh).

asyncio, one plain Protocol per request (no HTTP library between the loop
and the bytes): data_received stamps time.monotonic_ns() (CLOCK_MONOTONIC)
first thing, logs the read, then blocks the whole loop for BLOCK_MS with
time.sleep, as a benchmark's slow callback would. While it sleeps the
server's next token events wait in the socket's receive queue: that wait is
what tokentap must recover. Requests run one after another on fresh
connections, x-request-id PREFIX0..PREFIX(N-1) (default prefix bq-).

A watcher process (forked per connection, so it never holds the client's
GIL) polls the socket's getsockopt(TCP_INFO) in a tight loop and stamps
every change of tcpi_bytes_received (the bytes the kernel has taken in
order, updated just before it marks them readable): the client's own view of
when each byte became readable, a few microseconds late at most (the poll's
period). BLOCKED_CLIENT_NO_WATCHER=1 leaves it out (it keeps a core busy).

OUT gets one JSON line per read {"request_id", "recv_ns", "len"}, one per
request {"request_id", "send_ns"} (the instant before the request was
written) and one per change seen by the watcher {"request_id", "avail_ns",
"not_before_ns", "bytes_received"}: the change happened in [not_before_ns,
avail_ns], an interval that is a few microseconds wide unless the watcher
was preempted.

usage: blocked_loop_client.py PORT N BLOCK_MS TOKENS OUT [PREFIX]"""
import asyncio, json, os, socket, struct, sys, tempfile, time

port, n_requests, block_ms, tokens, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
prefix = sys.argv[6] if len(sys.argv) > 6 else "bq-"
log = []
TCPI_BYTES_RECEIVED = 128  # offset of the u64 tcpi_bytes_received in struct tcp_info (Linux 4.1+)


def watch_socket(fd, rid, stop_fd, path):
    """In a child process: stamp every change of the socket's in-order
    received byte count until stop_fd becomes readable, then write them to path."""
    sock = socket.socket(fileno=os.dup(fd))
    os.set_blocking(stop_fd, False)
    seen, last, n, before = [], -1, 0, time.monotonic_ns()
    while True:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        now = time.monotonic_ns()
        if len(info) < TCPI_BYTES_RECEIVED + 8:
            break
        got = struct.unpack_from("=Q", info, TCPI_BYTES_RECEIVED)[0]
        if got != last:
            # the change happened after the previous poll began and before this one returned
            seen.append({"request_id": rid, "avail_ns": now, "not_before_ns": before, "bytes_received": got})
            last = got
        before = now
        n += 1
        if n % 64 == 0:
            try:
                os.read(stop_fd, 1)
                break  # a byte, or the parent is gone
            except BlockingIOError:
                pass
    with open(path, "w") as f:
        json.dump(seen, f)


class Stream(asyncio.Protocol):
    def __init__(self, rid, done):
        self.rid, self.done, self.buf = rid, done, b""

    def connection_made(self, transport):
        self.watcher = None
        if os.environ.get("BLOCKED_CLIENT_NO_WATCHER") == "1":
            self.send(transport)
            return
        fd = transport.get_extra_info("socket").fileno()
        stop_r, self.stop_w = os.pipe()
        tmp_fd, self.watch_path = tempfile.mkstemp(prefix="tt-watcher-")
        os.close(tmp_fd)
        self.watcher = os.fork()
        if self.watcher == 0:
            os.close(self.stop_w)
            try:
                watch_socket(fd, self.rid, stop_r, self.watch_path)
            finally:
                os._exit(0)
        os.close(stop_r)
        self.send(transport)

    def send(self, transport):
        body = json.dumps({"model": "m", "stream": True, "max_tokens": tokens,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {self.rid}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        log.append({"request_id": self.rid, "send_ns": time.monotonic_ns()})
        transport.write(head + body)

    def data_received(self, data):
        now = time.monotonic_ns()
        log.append({"request_id": self.rid, "recv_ns": now, "len": len(data)})
        self.buf += data
        time.sleep(block_ms / 1000.0)  # the loop is blocked: nothing else runs, nothing is read

    def connection_lost(self, exc):
        if self.watcher is None:
            self.finish()
            return
        os.write(self.stop_w, b"x")
        os.close(self.stop_w)
        os.waitpid(self.watcher, 0)
        with open(self.watch_path) as f:
            log.extend(json.load(f))
        os.unlink(self.watch_path)
        self.finish()

    def finish(self):
        if not self.done.done():
            self.done.set_result(self.buf)


async def main():
    loop = asyncio.get_running_loop()
    for i in range(n_requests):
        done = loop.create_future()
        await loop.create_connection(lambda: Stream(f"{prefix}{i}", done), "127.0.0.1", port)
        body = await asyncio.wait_for(done, 30)
        assert body.startswith(b"HTTP/1.1 200"), body[:80]
        assert b"[DONE]" in body, body[-200:]


asyncio.run(main())
with open(out, "w") as f:
    for rec in log:
        f.write(json.dumps(rec) + "\n")
