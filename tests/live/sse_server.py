#!/usr/bin/python3
"""A small SSE server for the live-capture test: answers POST
/v1/chat/completions with a chunked text/event-stream of N chat chunks, one
write per event, and logs the wall-clock instant (time.time_ns) taken right
before every write as JSON lines: the ground truth the test compares
tokentap's wire instants with. Standard library only."""
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

LOG_LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        req_id = self.headers.get("x-request-id", "")
        tokens = int(body.get("max_tokens", 8))
        itl = float(self.server.itl_s)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        time.sleep(self.server.ttft_s)
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        events += [{"choices": [{"index": 0, "delta": {"content": f"tok{i} "}}]} for i in range(tokens)]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
        events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": tokens}})
        for i, ev in enumerate(events):
            frame = ("data: " + json.dumps({"id": "chatcmpl-" + req_id, "object": "chat.completion.chunk", **ev}) + "\n\n").encode()
            chunk = b"%x\r\n%s\r\n" % (len(frame), frame)
            if 1 <= i <= tokens and i > 1:
                time.sleep(itl)
            kind = "token" if 1 <= i <= tokens else "other"
            now = time.time_ns()
            self.wfile.write(chunk)
            self.wfile.flush()
            with LOG_LOCK:
                self.server.log.write(json.dumps({"request_id": req_id, "index": i, "kind": kind, "wall_ns": now}) + "\n")
        self.wfile.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
        self.wfile.flush()


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True


def main():
    port_file, log_path = sys.argv[1], sys.argv[2]
    srv = Server(("127.0.0.1", 0), Handler)
    srv.ttft_s, srv.itl_s = 0.02, 0.005
    srv.log = open(log_path, "w", buffering=1)
    with open(port_file, "w") as f:
        f.write(str(srv.server_address[1]))
    srv.timeout = 0.2
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        srv.handle_request()


if __name__ == "__main__":
    main()
