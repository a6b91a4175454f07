#!/usr/bin/python3
"""A FastAPI streaming app under uvicorn with TLS (the stack vLLM's server
uses; Debian's python3-uvicorn, python3-fastapi) for test_watch_tls.sh:
POST /v1/chat/completions streams TOKENS chat chunks GAP_MS apart as SSE,
then [DONE]; before yielding each chunk it appends "REQUEST_ID INDEX
MONO_NS" to LOG (CLOCK_MONOTONIC), the ground truth for the TLS vantage.
Prints "listening PORT" once serving.

usage: uvicorn_tls_app.py TOKENS GAP_MS CERT KEY LOG"""
import asyncio, json, socket, sys, time

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

tokens, gap = int(sys.argv[1]), float(sys.argv[2]) / 1000
log = open(sys.argv[5], "a", buffering=1)
app = FastAPI()


@app.post("/v1/chat/completions")
async def chat(request: Request):
    rid = request.headers.get("x-request-id", "-")
    await request.body()

    async def stream():
        for i in range(tokens):
            log.write("%s %d %d\n" % (rid, i, time.monotonic_ns()))
            yield "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "t%d" % i}}]}) + "\n\n"
            await asyncio.sleep(gap)
        yield "data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream")


sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
print("listening", sock.getsockname()[1], flush=True)
config = uvicorn.Config(app, log_level="warning", ssl_certfile=sys.argv[3], ssl_keyfile=sys.argv[4])
uvicorn.Server(config).run(sockets=[sock])
