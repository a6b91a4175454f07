#!/usr/bin/python3
"""An aiohttp HTTPS streaming client for test_watch_tls.sh (asyncio's SSL
transport: OpenSSL through memory BIOs, SSL_read_ex / SSL_write_ex): waits
until GO_FILE exists (so that tokentap can attach to the running process),
POSTs a streamed chat completion to https://127.0.0.1:PORT with x-request-id
RID, and prints "RID MONO_NS BYTES" for every chunk its StreamReader hands
out (MONO_NS: time.monotonic_ns, CLOCK_MONOTONIC).

usage: aiohttp_tls_client.py PORT RID GO_FILE"""
import asyncio, os, ssl, sys, time

import aiohttp

port, rid, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]


async def main():
    while not os.path.exists(go):
        await asyncio.sleep(0.02)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    body = {"model": "m", "stream": True, "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}
    async with aiohttp.ClientSession() as s:
        async with s.post(f"https://127.0.0.1:{port}/v1/chat/completions", ssl=ctx, json=body,
                          headers={"x-request-id": rid}) as r:
            async for chunk in r.content.iter_any():
                print(rid, time.monotonic_ns(), len(chunk), flush=True)


asyncio.run(main())
