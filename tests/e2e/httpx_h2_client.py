"""httpx over HTTP/2 and TLS: N streamed chat completions at once on one
connection (asyncio, AsyncClient(http2=True, verify=False)).

usage: httpx_h2_client.py URL N PREFIX
Each request carries x-request-id PREFIX-i; stdout gets, per request in
order i = 0..N-1, a line "i METHOD PATH STATUS HTTP-VERSION" then the
response body as received. Exit 1 when a request fails or the connection
is not HTTP/2."""
import asyncio
import sys

import httpx


async def one(client, url, i, prefix):
    body = {"model": "m1", "stream": True, "max_tokens": 12,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": f"hello {i}"}]}
    async with client.stream("POST", url, json=body, headers={"x-request-id": f"{prefix}-{i}"}) as r:
        text = b"".join([chunk async for chunk in r.aiter_raw()])
        return f"{i} {r.request.method} {r.request.url.path} {r.status_code} {r.http_version}\n", text


async def main():
    url, n, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    async with httpx.AsyncClient(http2=True, verify=False, timeout=20) as client:
        got = await asyncio.gather(*(one(client, url, i, prefix) for i in range(n)))
    for head, text in got:
        sys.stdout.write(head)
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
        if not head.endswith(" 200 HTTP/2\n"):
            sys.exit(1)


asyncio.run(main())
