#!/usr/bin/python3
"""An aiohttp streaming client that keeps its own read log, for the timing
tests (test_run.sh, test_watch_client.sh): 4 concurrent chat streams from
PORT (x-request-id cl-0..cl-3, one connection each), every chunk of bytes
stamped with time.perf_counter_ns() as it reaches aiohttp's protocol; OUT
gets one JSON line per read: request_id, recv_ns, len.

usage: aiohttp_read_log_client.py PORT OUT"""
import asyncio, json, sys, time
import aiohttp
from aiohttp.client_proto import ResponseHandler
port, out = sys.argv[1], sys.argv[2]
reads = []  # (local port, perf_counter_ns, bytes): stamped as the bytes reach the protocol
plain = ResponseHandler.data_received
def stamped(self, data):
    reads.append((self.transport.get_extra_info("sockname")[1], time.perf_counter_ns(), len(data)))
    return plain(self, data)
ResponseHandler.data_received = stamped
ports = {}
async def one(session, i):
    body = {"model": "m", "stream": True, "max_tokens": 30, "messages": [{"role": "user", "content": "hi"}]}
    async with session.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body,
                            headers={"x-request-id": f"cl-{i}"}) as resp:
        assert resp.status == 200, resp.status
        ports[f"cl-{i}"] = resp.connection.transport.get_extra_info("sockname")[1]
        async for _ in resp.content.iter_any():
            pass
async def main():
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True),
                                     timeout=aiohttp.ClientTimeout(total=20)) as s:
        await asyncio.gather(*(one(s, i) for i in range(4)))
asyncio.run(main())
by_port = {p: rid for rid, p in ports.items()}
with open(out, "w") as f:
    for p, ns, n in reads:
        if p in by_port:
            f.write(json.dumps({"request_id": by_port[p], "recv_ns": ns, "len": n}) + "\n")
