#!/usr/bin/python3
"""A vllm-like benchmark client for the end-to-end tests (test_breakdown.sh,
test_run_bench.sh, demo.sh): raw sockets, one connection per request, N_REQ
streamed chat completions from PORT with x-request-id PREFIX<index> (as vllm
bench serve --request-id-prefix sends it). For every token event it reads it
waits a KNOWN delay (DELAY_NS, spun from the instant its recv returned)
before taking its own time.perf_counter_ns() stamp, then writes its TTFT,
ITL and latency in vllm's --save-result --save-detailed layout to OUT, and
to OUT.waited what it really waited before stamping each request's first
token (a JSON list of ns, in request order).

usage: vllm_like_client.py PORT DELAY_NS OUT N_REQ [PREFIX] [TOKENS]
(PREFIX defaults to bd-, TOKENS to 20)."""
import json, socket, sys, time
port, delay, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
n_req = int(sys.argv[4])
prefix = sys.argv[5] if len(sys.argv) > 5 else "bd-"
tokens = int(sys.argv[6]) if len(sys.argv) > 6 else 20
clock = time.perf_counter_ns

def stream(i):
    body = json.dumps({"model": "m", "stream": True, "max_tokens": tokens,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"x-request-id: {prefix}{i}\r\nConnection: close\r\n\r\n").encode()
    start = clock()
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(head + body)
    raw, body_buf, headers_done, chunked = b"", b"", False, False
    stamps, text, waited = [], "", None
    buf = bytearray(65536)
    view = memoryview(buf)
    while True:
        n = s.recv_into(buf)
        got = clock()
        if not n:
            break
        raw += view[:n]
        if not headers_done:
            if b"\r\n\r\n" not in raw:
                continue
            h, raw = raw.split(b"\r\n\r\n", 1)
            assert h.startswith(b"HTTP/1.1 200"), h
            chunked = b"transfer-encoding: chunked" in h.lower()
            headers_done = True
        if chunked:
            while True:
                line_end = raw.find(b"\r\n")
                if line_end < 0:
                    break
                size = int(raw[:line_end].split(b";")[0], 16)
                if len(raw) < line_end + 2 + size + 2:
                    break
                body_buf += raw[line_end + 2:line_end + 2 + size]
                raw = raw[line_end + 2 + size + 2:]
        else:
            body_buf, raw = body_buf + raw, b""
        while b"\n\n" in body_buf:
            event, body_buf = body_buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
                    continue
                doc = json.loads(line[5:])
                choices = doc.get("choices") or []
                content = choices[0].get("delta", {}).get("content") if choices else None
                if content:
                    while clock() < got + delay:
                        pass
                    stamps.append(clock())
                    if waited is None:
                        waited = stamps[0] - got
                    text += content
    s.close()
    return start, stamps, text, waited

starts, ttfts, itls, lats, outs, texts, waits = [], [], [], [], [], [], []
for i in range(n_req):
    start, stamps, text, waited = stream(i)
    waits.append(waited)
    assert len(stamps) == tokens, (i, len(stamps))
    starts.append(start / 1e9)
    ttfts.append((stamps[0] - start) / 1e9)
    itls.append([(b - a) / 1e9 for a, b in zip(stamps, stamps[1:])])
    lats.append((stamps[-1] - start) / 1e9)
    outs.append(len(stamps))
    texts.append(text)
doc = {"date": "20250101-000000", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": None,
       "model_id": "m", "tokenizer_id": "m", "num_prompts": n_req, "request_rate": "inf", "burstiness": 1.0,
       "max_concurrency": 1, "request_id_prefix": prefix,
       "duration": (max(s + l for s, l in zip(starts, lats)) - starts[0]), "completed": n_req, "failed": 0,
       "total_input_tokens": 10 * n_req, "total_output_tokens": sum(outs),
       "input_lens": [10] * n_req, "output_lens": outs, "ttfts": ttfts, "itls": itls, "latencies": lats,
       "start_times": starts, "generated_texts": texts, "errors": [""] * n_req}
with open(out, "w") as f:
    json.dump(doc, f)
# What the client really waited before stamping each first token, from the
# instant its recv returned (at least the delay asked; more when it was
# preempted): the ground truth the recovered client lag is compared with.
with open(out + ".waited", "w") as f:
    json.dump(waits, f)
