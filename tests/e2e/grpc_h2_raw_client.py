#!/usr/bin/python3
"""Raw HTTP/2 gRPC calls (Debian python3-h2) to tokentap serve's triton-grpc
profile, for the framing cases a gRPC library does not produce, for
tests/e2e/test_serve_grpc.sh.

usage: grpc_h2_raw_client.py PB_DIR PORT OUT.json

Cases, each its own call (stream) on one connection unless said:
  split       two requests (3 and 2 tokens) sent one byte per DATA frame
  oneframe    three requests (1, 2, 3 tokens) in one DATA frame
  compressed  a message with the compressed flag set
  truncated   END_STREAM half way through a message
  oversize    a prefix announcing 2 MiB
  toomany     257 requests of 1000 tokens at once, in 16000-byte DATA frames
              (256 may be answered at once)
  cancel      a 50-token request reset (RST_STREAM CANCEL) after its first
              response, then a 2-token call on the same connection
  drop        (own connection) a 50-token request, the socket closed after
              the first response; then a 1-token call on a new connection
Writes {case: {"status", "message", "responses": [[id, text, final]], ...}}.
"""
import json
import socket
import struct
import sys

sys.path.insert(0, sys.argv[1])
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import triton_pb2 as pb  # noqa: E402

PORT = int(sys.argv[2])
PATH = "/inference.GRPCInferenceService/ModelStreamInfer"


def request(rid, n):
    req = pb.ModelInferRequest()
    req.model_name = "ensemble"
    req.id = rid
    for name, dt, raw in (("text_input", "BYTES", struct.pack("<I", 5) + b"hello"),
                          ("max_tokens", "INT32", struct.pack("<i", n))):
        t = req.inputs.add()
        t.name, t.datatype = name, dt
        t.shape.append(1)
        req.raw_input_contents.append(raw)
    b = req.SerializeToString()
    return b"\0" + struct.pack(">I", len(b)) + b


class Conn:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=20)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.flush()
        self.calls = {}

    def flush(self):
        self.sock.sendall(self.h2.data_to_send())

    def open(self):
        sid = self.h2.get_next_available_stream_id()
        self.h2.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", PATH),
                                   (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
                                   ("te", "trailers")])
        self.flush()
        self.calls[sid] = {"data": b"", "trailers": {}, "headers": {}, "ended": False, "reset": None}
        return sid

    def send(self, sid, data, chunk=None, end=True):
        chunk = chunk or max(len(data), 1)
        for i in range(0, len(data), chunk):
            self.h2.send_data(sid, data[i:i + chunk])
            self.flush()
        if end:
            self.h2.end_stream(sid)
            self.flush()

    def pump(self, until):
        while not until():
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("connection closed")
            for ev in self.h2.receive_data(data):
                c = self.calls.get(getattr(ev, "stream_id", None))
                if isinstance(ev, h2.events.DataReceived):
                    c["data"] += ev.data
                    self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.ResponseReceived):
                    c["headers"] = {k.decode(): v.decode() for k, v in ev.headers}
                elif isinstance(ev, h2.events.TrailersReceived):
                    c["trailers"] = {k.decode(): v.decode() for k, v in ev.headers}
                elif isinstance(ev, h2.events.StreamEnded):
                    c["ended"] = True
                elif isinstance(ev, h2.events.StreamReset):
                    c["reset"] = ev.error_code
                    c["ended"] = True
            self.flush()

    def result(self, sid):
        c = self.calls[sid]
        out, d = [], c["data"]
        while len(d) >= 5:
            n = struct.unpack(">I", d[1:5])[0]
            m = pb.ModelStreamInferResponse()
            m.ParseFromString(d[5:5 + n])
            ir = m.infer_response
            text = ""
            if ir.raw_output_contents:
                blob = ir.raw_output_contents[0]
                text = blob[4:4 + struct.unpack("<I", blob[:4])[0]].decode()
            fp = ir.parameters.get("triton_final_response")
            out.append([ir.id, text, bool(fp and fp.bool_param)])
            d = d[5 + n:]
        t = c["trailers"] or c["headers"]  # trailers-only: status in the HEADERS
        return {"status": t.get("grpc-status"), "message": t.get("grpc-message", ""), "responses": out,
                "left": len(d), "reset": c["reset"]}


results = {}
conn = Conn()


def simple(name, data, chunk=None):
    sid = conn.open()
    conn.send(sid, data, chunk)
    conn.pump(lambda: conn.calls[sid]["ended"])
    results[name] = conn.result(sid)


simple("split", request("s0", 3) + request("s1", 2), chunk=1)
simple("oneframe", request("o0", 1) + request("o1", 2) + request("o2", 3))
good = request("x", 1)
simple("compressed", b"\1" + good[1:])
simple("truncated", good[:len(good) // 2])
simple("oversize", b"\0" + struct.pack(">I", 2 << 20))
simple("toomany", b"".join(request("t%d" % i, 1000) for i in range(257)), chunk=16000)

sid = conn.open()
conn.send(sid, request("k0", 50), end=False)
conn.pump(lambda: len(conn.calls[sid]["data"]) > 0)
conn.h2.reset_stream(sid, 8)  # CANCEL
conn.flush()
results["cancel"] = {"got": len(conn.calls[sid]["data"])}
simple("after_cancel", request("k1", 2))

drop = Conn()
sid = drop.open()
drop.send(sid, request("d0", 50), end=False)
drop.pump(lambda: len(drop.calls[sid]["data"]) > 0)
drop.sock.close()
conn2 = Conn()
conn = conn2
simple("after_drop", request("d1", 1))
with open(sys.argv[3], "w") as f:
    json.dump(results, f)
