#!/usr/bin/python3
"""A close-delimited SSE server for the probe tests (test_run.sh,
test_run_tls.sh): every POST gets a 200 text/event-stream with
`connection: close`, TOKENS chat chunks t0..t(TOKENS-1) written GAP_MS
apart, then `data: [DONE]`, and the connection closed: the response ends
only by the close. With CERT and KEY it speaks HTTPS. Prints its port.

usage: close_sse_server.py TOKENS GAP_MS [CERT KEY]"""
import ssl, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

tokens, gap = int(sys.argv[1]), float(sys.argv[2]) / 1000


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for i in range(tokens):
            self.wfile.write(b'data: {"choices":[{"index":0,"delta":{"content":"t%d"}}]}\n\n' % i)
            self.wfile.flush()
            time.sleep(gap)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def log_message(self, *a):
        pass


srv = HTTPServer(("127.0.0.1", 0), Handler)
if len(sys.argv) == 5:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
