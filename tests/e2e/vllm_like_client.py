#!/usr/bin/python3
"""A vllm-like benchmark client for the end-to-end tests (test_breakdown.sh,
test_run_bench.sh, demo.sh) and for the benchmark clients `tokentap audit`
audits: raw sockets, one connection per request (`Connection: close`),
N_REQ streamed chat completions ("max_tokens": TOKENS, "stream_options":
{"include_usage": true}) from 127.0.0.1:PORT with x-request-id
PREFIX<index> (as vllm bench serve --request-id-prefix sends it). For every
token event it reads it waits a KNOWN delay (DELAY_NS, spun from the
instant its recv returned) before taking its own time.perf_counter_ns()
stamp, then writes its TTFT, ITL and latency in vllm's --save-result
--save-detailed layout to OUT (keys: date, endpoint_type, backend, label,
model_id, tokenizer_id, num_prompts, request_rate, burstiness,
max_concurrency, request_id_prefix, duration, completed, failed,
total_input_tokens, total_output_tokens, input_lens, output_lens, ttfts,
itls, latencies, start_times, generated_texts, errors), and to OUT.waited
what it really waited before stamping each request's first token (a JSON
list of ns, one entry per request index in order; null for a request that
got no token).

usage: vllm_like_client.py PORT DELAY_NS OUT N_REQ [PREFIX] [TOKENS]
                           [--concurrency N] [--defect NAME]...
(PREFIX defaults to bd-, TOKENS to 20; options may stand anywhere, also as
--concurrency=N.)

--concurrency N (default 1): N requests in flight, one thread each; the
records stay in request-index order, start_times are perf_counter seconds.
The DELAY_NS busy-wait burns CPU but, with more than one thread, gives the
GIL up at every turn (os.sched_yield), so that one thread's wait does not
hold up another's recv and stamp the whole delay long (a GIL-holding spin
made a 2 ms delay at concurrency 2 measure 2.56 ms of client lag). The
client is still Python: a thread still waits for the GIL after its recv
returns and while it parses, which is real client overhead and shows in
its client lag beside the delay (OUT.waited counts from the moment the
thread has the recv's result back in Python, so that wait is not in it).

Timing, as vllm's openai-chat client: TTFT = first token stamp - start
(start taken before connecting), itls = gaps between later token stamps,
latency = last token stamp - start. A token is a chunk whose
choices[0].delta.content is non-empty. output_lens: usage.completion_tokens
when a usage was read (also prompt_tokens into input_lens), else the number
of content chunks.

SSE: events are split as the WHATWG algorithm does (lines end with CRLF, LF
or CR; a blank line ends an event; `:` comments skipped; one leading space
after `data:` dropped), so "\\r\\n\\r\\n", "\\n\\n" and "\\r\\r" all separate
events.

A request that got no token, a status other than 200, a chunked body cut
short, or any exception is recorded FAILED as vllm bench serve records one:
errors[i] a non-empty string (vllm's own texts: "Never received a valid
chunk to calculate TTFT.This response will be marked as failed!", here
followed by " (no token in the response)"; the HTTP reason phrase; or the
traceback), ttfts[i] 0, itls[i] [], latencies[i] 0,
output_lens[i] 0, generated_texts[i] ""; start_times[i] stays. The client
never crashes on a stream.

--defect NAME (repeatable; each off by default) behaves like a known buggy
client:
  crlf   splits events only on b"\\n\\n" and lines only on b"\\n" (vllm's
         StreamedResponseHandler, genai-perf): under CRLF framing (the tabby
         profile) it sees no event, so every request is recorded failed.
  role   counts the role-only first chunk (the first chunk with choices
         whose delta has no content, vllm's {"role":"assistant"}) as a
         token: stamped (TTFT taken there), one more ITL gap, and one more
         in output_lens (added to the usage count or content count).
  usage  reads usage only from frames whose "choices" is empty or absent
         (vllm's own client logic); under tabby framing (usage in the frame
         that still carries choices) it never reads one, and then records
         output_lens[i] = 0 (no fallback to the content-chunk count: what a
         client that relies on usage reports).
DELAY_NS itself is the "fixed per-token delay" defect (0: none)."""
import json, os, re, socket, sys, time, traceback
from concurrent.futures import ThreadPoolExecutor

DEFECTS = ("crlf", "role", "usage")
NO_TOKEN = ("Never received a valid chunk to calculate TTFT."  # vllm's text, then ours
            "This response will be marked as failed! (no token in the response)")


def usage_exit(msg):
    sys.stderr.write(f"vllm_like_client.py: {msg}\nusage: vllm_like_client.py PORT DELAY_NS OUT N_REQ "
                     "[PREFIX] [TOKENS] [--concurrency N] [--defect crlf|role|usage]...\n")
    sys.exit(2)


def parse_argv(argv):
    pos, conc, defects = [], 1, set()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if name not in ("--concurrency", "--defect"):
                usage_exit(f"unknown option {a}")
            if not eq:
                i += 1
                if i >= len(argv):
                    usage_exit(f"{name} needs a value")
                val = argv[i]
            if name == "--concurrency":
                try:
                    conc = int(val)
                except ValueError:
                    conc = 0
                if conc < 1:
                    usage_exit(f"bad --concurrency {val}")
            else:
                if val not in DEFECTS:
                    usage_exit(f"unknown defect {val} (one of {', '.join(DEFECTS)})")
                defects.add(val)
        else:
            pos.append(a)
        i += 1
    if not 4 <= len(pos) <= 6:
        usage_exit("want PORT DELAY_NS OUT N_REQ [PREFIX] [TOKENS]")
    return pos, conc, defects


pos, concurrency, defects = parse_argv(sys.argv[1:])
port, delay, out = int(pos[0]), int(pos[1]), pos[2]
n_req = int(pos[3])
prefix = pos[4] if len(pos) > 4 else "bd-"
tokens = int(pos[5]) if len(pos) > 5 else 20
clock = time.perf_counter_ns
LINE_END = re.compile(rb"\r\n|\r|\n")


class SSE:
    """Incremental SSE reader: feed() bytes, get back the data of every
    complete event (bytes). With crlf_defect: split on b"\\n\\n" only and
    return every `data:` line of an event as its own item (the old
    behaviour of this client)."""

    def __init__(self, crlf_defect):
        self.defect, self.buf, self.data = crlf_defect, b"", []

    def feed(self, b, final=False):
        self.buf += b
        if self.defect:
            out = []
            while b"\n\n" in self.buf:
                event, self.buf = self.buf.split(b"\n\n", 1)
                out += [line[5:] for line in event.split(b"\n") if line.startswith(b"data:")]
            return out
        out, at = [], 0
        while True:
            m = LINE_END.search(self.buf, at)
            if not m:
                break
            if m.group() == b"\r" and m.end() == len(self.buf) and not final:
                break  # a CR at the end may be the first half of a CRLF
            line, at = self.buf[at:m.start()], m.end()
            if not line:
                if self.data:
                    out.append(b"\n".join(self.data))
                self.data = []
            elif not line.startswith(b":"):
                field, _, value = line.partition(b":")
                if field == b"data":
                    self.data.append(value[1:] if value.startswith(b" ") else value)
        self.buf = self.buf[at:]
        return out


def stream(i):
    """One request: (start_ns, stamps, text, waited_ns, usage, n_content,
    role_stamped, error)."""
    body = json.dumps({"model": "m", "stream": True, "max_tokens": tokens,
                       "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"x-request-id: {prefix}{i}\r\nConnection: close\r\n\r\n").encode()
    start = clock()
    stamps, text, waited, usage, n_content, role_stamped = [], "", None, None, 0, False
    s = None
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(head + body)
        raw, headers_done, chunked, chunks_done = b"", False, False, False
        sse, seen_choices, status_error = SSE("crlf" in defects), False, None
        buf = bytearray(65536)
        view = memoryview(buf)
        while True:
            n = s.recv_into(buf)
            got = clock()
            raw += view[:n]
            data = b""
            if not headers_done:
                if b"\r\n\r\n" not in raw:
                    if not n:
                        raise ConnectionError("connection closed before the response head")
                    continue
                h, raw = raw.split(b"\r\n\r\n", 1)
                status = h.split(b"\r\n", 1)[0].split(b" ", 2)
                if len(status) < 2 or status[1] != b"200":
                    reason = status[2].decode("latin-1") if len(status) > 2 else ""
                    status_error = reason or "HTTP " + (status[1].decode("latin-1") if len(status) > 1 else "?")
                    break
                chunked = b"transfer-encoding: chunked" in h.lower()
                headers_done = True
            if chunked:
                while not chunks_done:
                    line_end = raw.find(b"\r\n")
                    if line_end < 0:
                        break
                    size = int(raw[:line_end].split(b";")[0], 16)
                    if len(raw) < line_end + 2 + size + 2:
                        break
                    data += raw[line_end + 2:line_end + 2 + size]
                    raw = raw[line_end + 2 + size + 2:]
                    chunks_done = size == 0
            else:
                data, raw = raw, b""
            for event in sse.feed(data, final=not n):
                if event.strip() == b"[DONE]":
                    continue
                doc = json.loads(event)
                choices = doc.get("choices") or []
                u = doc.get("usage")
                if isinstance(u, dict) and ("usage" not in defects or not choices):
                    usage = u
                if not choices:
                    continue
                delta = choices[0].get("delta") or {}
                content = delta.get("content")
                first_choices, seen_choices = not seen_choices, True
                role = "role" in defects and first_choices and not content
                if content or role:
                    while clock() < got + delay:
                        if concurrency > 1:
                            os.sched_yield()  # spin without holding the GIL
                    stamps.append(clock())
                    if waited is None:
                        waited = stamps[0] - got
                if content:
                    text += content
                    n_content += 1
                role_stamped = role_stamped or role
            if not n:
                break
        if status_error is not None:
            return start, [], "", None, None, 0, False, status_error
        if chunked and not chunks_done:
            raise ConnectionError("Response payload is not completed (the chunked body ended early)")
    except Exception:
        return start, [], "", None, None, 0, False, traceback.format_exc()
    finally:
        if s is not None:
            s.close()
    if not stamps:
        return start, [], "", None, None, 0, False, NO_TOKEN
    return start, stamps, text, waited, usage, n_content, role_stamped, ""


with ThreadPoolExecutor(max_workers=concurrency) as pool:
    # Start the worker threads before the benchmark (as a client's event
    # loop or connection pool exists before its first request), and load the
    # resolver once: a thread started on the first submit, or the first
    # getaddrinfo (milliseconds), would be in the first requests' send lag.
    socket.getaddrinfo("127.0.0.1", port, 0, socket.SOCK_STREAM)
    list(pool.map(time.sleep, [0.01] * concurrency))
    t_begin = clock()
    results = list(pool.map(stream, range(n_req)))
t_end = clock()

starts, ttfts, itls, lats, outs, ins, texts, waits, errors = [], [], [], [], [], [], [], [], []
for start, stamps, text, waited, usage, n_content, role_stamped, error in results:
    starts.append(start / 1e9)
    waits.append(waited)
    errors.append(error)
    texts.append(text)
    if error:
        ttfts.append(0.0), itls.append([]), lats.append(0.0), outs.append(0), ins.append(10)
        continue
    ttfts.append((stamps[0] - start) / 1e9)
    itls.append([(b - a) / 1e9 for a, b in zip(stamps, stamps[1:])])
    lats.append((stamps[-1] - start) / 1e9)
    if usage is not None and isinstance(usage.get("completion_tokens"), int):
        n_out = usage["completion_tokens"]
    elif "usage" in defects:
        n_out = 0
    else:
        n_out = n_content
    outs.append(n_out + (1 if role_stamped else 0))
    pt = usage.get("prompt_tokens") if usage is not None else None
    ins.append(pt if isinstance(pt, int) else 10)
ok = [k for k in range(n_req) if not errors[k]]
duration = ((max(starts[k] + lats[k] for k in ok) - min(starts)) if ok else (t_end - t_begin) / 1e9)
doc = {"date": "20250101-000000", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": None,
       "model_id": "m", "tokenizer_id": "m", "num_prompts": n_req, "request_rate": "inf", "burstiness": 1.0,
       "max_concurrency": concurrency, "request_id_prefix": prefix,
       "duration": duration, "completed": len(ok), "failed": n_req - len(ok),
       "total_input_tokens": sum(ins[k] for k in ok), "total_output_tokens": sum(outs),
       "input_lens": ins, "output_lens": outs, "ttfts": ttfts, "itls": itls, "latencies": lats,
       "start_times": starts, "generated_texts": texts, "errors": errors}
with open(out, "w") as f:
    json.dump(doc, f)
# What the client really waited before stamping each first token, from the
# instant its recv returned (at least the delay asked; more when it was
# preempted): the ground truth the recovered client lag is compared with.
with open(out + ".waited", "w") as f:
    json.dump(waits, f)
