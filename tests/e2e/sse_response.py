"""Helpers the end-to-end scripts share for reading a raw HTTP/1.1
response the way a client sees it (import with tests/e2e on sys.path)."""
import json


def chat_text(raw):
    """The generated text of a raw streamed chat-completion response (head
    and body, chunked or not): the delta contents of its `data: ` events,
    in order, [DONE] skipped."""
    raw = bytes(raw)
    head_end = raw.index(b"\r\n\r\n") + 4
    headers, rest = raw[:head_end].decode().lower(), raw[head_end:]
    data = b""
    if "transfer-encoding: chunked" in headers:
        while True:
            line_end = rest.index(b"\r\n")
            size = int(rest[:line_end].split(b";")[0], 16)
            if size == 0:
                break
            data += rest[line_end + 2:line_end + 2 + size]
            rest = rest[line_end + 4 + size:]
    else:
        data = rest
    text = ""
    for line in data.decode().split("\n"):
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            for ch in json.loads(line[6:]).get("choices", []):
                text += (ch.get("delta") or {}).get("content") or ""
    return text
