"""The JSON documents `tokentap watch --json` writes (one per vantage, one
after the other in one file), for the tests' Python checks."""
import json


def documents(path):
    """Every document in the file, in order."""
    text, dec, pos, out = open(path).read(), json.JSONDecoder(), 0, []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        doc, pos = dec.raw_decode(text, pos)
        out.append(doc)
    return out


def by_vantage(path):
    """The documents of the file by their "vantage"."""
    return {d["vantage"]: d for d in documents(path)}
