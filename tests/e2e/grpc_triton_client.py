#!/usr/bin/python3
"""A Triton ModelStreamInfer client on grpcio (Debian python3-grpcio), for
tests/e2e/test_serve_grpc.sh.

usage: grpc_triton_client.py PB_DIR TARGET SPEC.json OUT_DIR

PB_DIR holds triton_pb2.py (protoc --python_out of
tests/golden/grpc_dialect/triton.proto). SPEC is a JSON object
{"calls": [CALL, ...]}; the calls run at once on one channel (one HTTP/2
connection), each CALL {"method": "/inference.GRPCInferenceService/...",
"gap_ms": G, "requests": [REQ, ...]} sends its requests G ms apart and then
half-closes; REQ is {"id", "prompt", "max_tokens", "how": "input" (an INT32
max_tokens tensor, as genai-perf's TensorRT-LLM converter) | "sampling"
(a sampling_parameters JSON string, as its vLLM converter) | "none",
"empty_final": bool (triton_enable_empty_final_response), "no_text": bool
(leave text_input out)} or {"raw_hex": ...}
(those bytes as the message). The responses are kept raw (the deserializer
is the identity) and parsed here. Writes OUT_DIR/calls.json: per call its
status code name, details and responses [{"t": CLOCK_MONOTONIC ns at
receipt, "len": prefix + message bytes, "id", "model", "version", "final",
"text", "outputs", "error"}], and OUT_DIR/call-N.bin: the call's messages
with their 5-byte prefixes, as on the wire. With GRPC_TLS_CA=PEM in the
environment the channel is TLS (the server's certificate for localhost).
"""
import json
import os
import struct
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import triton_pb2 as pb  # noqa: E402


def bytes_tensor(req, name, value):
    t = req.inputs.add()
    t.name = name
    t.datatype = "BYTES"
    t.shape.append(1)
    req.raw_input_contents.append(struct.pack("<I", len(value)) + value)


def build(spec):
    if "raw_hex" in spec:
        return bytes.fromhex(spec["raw_hex"])
    req = pb.ModelInferRequest()
    req.model_name = "ensemble"
    req.id = spec["id"]
    if not spec.get("no_text"):
        bytes_tensor(req, "text_input", spec.get("prompt", "hello there").encode())
    how = spec.get("how", "none")
    if how == "input":
        t = req.inputs.add()
        t.name = "max_tokens"
        t.datatype = "INT32"
        t.shape.append(1)
        req.raw_input_contents.append(struct.pack("<i", spec["max_tokens"]))
    elif how == "sampling":
        bytes_tensor(req, "sampling_parameters", json.dumps({"max_tokens": str(spec["max_tokens"])}).encode())
    if spec.get("empty_final"):
        req.parameters["triton_enable_empty_final_response"].bool_param = True
    return req.SerializeToString()


def run_call(channel, index, call, out_dir, results):
    method = call.get("method", "/inference.GRPCInferenceService/ModelStreamInfer")
    stub = channel.stream_stream(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
    msgs = [build(r) for r in call["requests"]]
    gap = call.get("gap_ms", 0) / 1000.0

    def gen():
        for i, m in enumerate(msgs):
            if i and gap:
                time.sleep(gap)
            yield m

    responses, raw = [], bytearray()
    res = {"responses": responses}
    try:
        it = stub(gen(), timeout=30)
        for b in it:
            t = time.monotonic_ns()
            raw += b"\0" + struct.pack(">I", len(b)) + b
            m = pb.ModelStreamInferResponse()
            m.ParseFromString(b)
            ir = m.infer_response
            text = b""
            names = [o.name for o in ir.outputs]
            if "text_output" in names:
                blob = ir.raw_output_contents[names.index("text_output")]
                n = struct.unpack("<I", blob[:4])[0]
                text = blob[4:4 + n]
            fp = ir.parameters.get("triton_final_response")
            responses.append({"t": t, "len": len(b) + 5, "id": ir.id, "model": ir.model_name,
                              "version": ir.model_version,
                              "final": fp.bool_param if fp is not None else None,
                              "text": text.decode("utf-8", "replace"), "outputs": names,
                              "datatypes": [o.datatype for o in ir.outputs],
                              "error": m.error_message})
        res["code"] = it.code().name
        res["details"] = it.details() or ""
    except grpc.RpcError as e:
        res["code"] = e.code().name
        res["details"] = e.details() or ""
    with open(os.path.join(out_dir, "call-%d.bin" % index), "wb") as f:
        f.write(raw)
    results[index] = res


def main():
    target, spec_path, out_dir = sys.argv[2], sys.argv[3], sys.argv[4]
    with open(spec_path) as f:
        spec = json.load(f)
    ca = os.environ.get("GRPC_TLS_CA")
    if ca:  # TLS to a server whose certificate names localhost, signed by (or being) CA
        with open(ca, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        channel = grpc.secure_channel(target, creds, options=[("grpc.ssl_target_name_override", "localhost")])
    else:
        channel = grpc.insecure_channel(target)
    grpc.channel_ready_future(channel).result(timeout=10)
    results = [None] * len(spec["calls"])
    threads = [threading.Thread(target=run_call, args=(channel, i, c, out_dir, results))
               for i, c in enumerate(spec["calls"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    channel.close()
    with open(os.path.join(out_dir, "calls.json"), "w") as f:
        json.dump({"calls": results}, f)


main()
