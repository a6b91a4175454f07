#!/usr/bin/python3
"""An HTTPS SSE server whose own log is the ground truth for the TLS vantage
(test_watch_tls.sh): every POST gets a 200 text/event-stream with
`connection: close`, TOKENS chat chunks t0..t(TOKENS-1) written GAP_MS
apart, then `data: [DONE]`. Before each chunk's write (one SSL_write_ex
call: Python's ssl module) it appends "REQUEST_ID INDEX MONO_NS" to LOG,
MONO_NS being CLOCK_MONOTONIC (the eBPF programs' clock). Prints its port.

usage: tls_sse_server.py TOKENS GAP_MS CERT KEY LOG"""
import ssl, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

tokens, gap = int(sys.argv[1]), float(sys.argv[2]) / 1000
log = open(sys.argv[5], "a", buffering=1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        rid = self.headers.get("x-request-id", "-")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for i in range(tokens):
            chunk = b'data: {"choices":[{"index":0,"delta":{"content":"t%d"}}]}\n\n' % i
            log.write("%s %d %d\n" % (rid, i, time.monotonic_ns()))
            self.wfile.write(chunk)
            time.sleep(gap)
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *a):
        pass


srv = HTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
