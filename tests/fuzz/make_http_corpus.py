#!/usr/bin/env python3
"""Seed corpus for http_request_fuzz (see the input layout there): HTTP requests for each
route (completions, chat, streaming, tokenize, detokenize, the GET routes), bad JSON,
wrong types, chunked bodies, pipelined keep-alive requests, Expect: 100-continue; and the
same JSON bodies in the target's JSON-only mode.  make_http_corpus.py OUT_DIR
"""
import json
import os
import sys

BODIES = {
    "/v1/completions": [
        {"prompt": "Once upon a time", "max_tokens": 16},
        {"model": "aidreams260K", "prompt": "Hello", "max_tokens": 8, "temperature": 0.7,
         "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 42, "stop": ["\n", "."], "n": 2},
        {"prompt": "Tell me", "stream": True, "stream_options": {"include_usage": True},
         "max_tokens": 32, "logprobs": 3},
        {"prompt": [1, 15, 27, 300], "max_tokens": 4, "echo": True},
        {"prompt": ["a", "b", [1, 2, 3]], "max_tokens": 2, "min_tokens": 1, "ignore_eos": True},
        {"prompt": "x", "presence_penalty": 0.5, "frequency_penalty": -0.5,
         "repetition_penalty": 1.1, "priority": -3, "cache_salt": "s", "user": "u"},
        {"prompt": "x", "max_tokens": 10.0, "seed": -1, "top_k": -1},
        {"prompt": "<|im_start|>user\n<s></s><|endoftext|>", "max_tokens": 1},
    ],
    "/v1/chat/completions": [
        {"messages": [{"role": "user", "content": "Hi"}]},
        {"model": "aidreams260K", "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": [{"type": "text", "text": "again"},
                                         {"type": "text", "text": "!"}]}],
         "max_completion_tokens": 16, "stream": True, "logprobs": True, "top_logprobs": 2},
        {"messages": [{"role": "developer", "content": "d"}, {"role": "user", "content": "u"}],
         "max_tokens": 4, "stop": "\n", "n": 3, "seed": 7},
        {"messages": [{"role": "assistant", "content": None}, {"role": "user",
                                                                "content": "<|im_end|>"}]},
    ],
    "/tokenize": [
        {"prompt": "Once upon a time"},
        {"prompt": "<s>x</s>", "add_special_tokens": False},
        {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": False},
    ],
    "/detokenize": [
        {"tokens": [1, 2, 3, 100, 200]},
        {"tokens": []},
    ],
}

BAD = [
    (b"/v1/completions", b"{"),
    (b"/v1/completions", b'{"prompt": 5}'),
    (b"/v1/completions", b'{"prompt": "a", "max_tokens": "ten"}'),
    (b"/v1/completions", b'{"prompt": "a", "temperature": 3}'),
    (b"/v1/completions", b'[' * 80 + b']' * 80),
    (b"/v1/completions", b'"a string"'),
    (b"/v1/chat/completions", b'{"messages": [{"role": "robot", "content": "x"}]}'),
    (b"/v1/chat/completions", b'{"messages": "hi"}'),
    (b"/v1/chat/completions", b'{"messages": [], "n": 0}'),
    (b"/v1/completions", b'{"prompt": "\\ud800", "stop": [1]}'),
    (b"/detokenize", b'{"tokens": [-1, 1e10]}'),
]


def request(path, body, extra=b"", method=b"POST", close=False):
    head = method + b" " + path + b" HTTP/1.1\r\nHost: localhost\r\n"
    if body is not None:
        head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    if close:
        head += b"Connection: close\r\n"
    return head + extra + b"\r\n" + (body or b"")


def chunked(path, body):
    out = b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    for i in range(0, len(body), 7):
        part = body[i:i + 7]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = []
    routes = list(BODIES)
    for path, bodies in BODIES.items():
        for b in bodies:
            body = json.dumps(b).encode()
            seeds.append(bytes([0]) + request(path.encode(), body))
            # JSON-only mode: bit 0 set, bits 1-2 the route (completions, chat, tokenize,
            # detokenize); bit 6 the short context.
            seeds.append(bytes([1 | routes.index(path) << 1]) + body)
            seeds.append(bytes([1 | routes.index(path) << 1 | 0x40]) + body)
    for path, body in BAD:
        seeds.append(bytes([0]) + request(path, body))
        route = next(i for i, r in enumerate(routes) if r.encode() == path)
        seeds.append(bytes([1 | route << 1]) + body)
    first = json.dumps(BODIES["/v1/completions"][0]).encode()
    chat = json.dumps(BODIES["/v1/chat/completions"][1]).encode()
    seeds += [
        bytes([0]) + chunked(b"/v1/completions", first),
        bytes([0x08]) + chunked(b"/v1/chat/completions", chat),  # fed a byte at a time
        bytes([0x10]) + request(b"/v1/completions", first) + request(b"/tokenize",
                                                                      b'{"prompt":"a"}'),
        bytes([0]) + request(b"/health", None, method=b"GET") +
        request(b"/metrics", None, method=b"GET") + request(b"/v1/models", None, method=b"GET"),
        bytes([0]) + request(b"/v1/completions?x=1", first,
                             b"Expect: 100-continue\r\nAuthorization: Bearer k\r\n", close=True),
        bytes([0x20]) + request(b"/v1/completions", first),  # over the small body limit
        bytes([0]) + request(b"/nope", b"{}"),
        bytes([0]) + request(b"/v1/completions", first, method=b"GET"),
        bytes([0]) + b"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
        bytes([0]) + b"GET / HTTP/1.0\r\n\r\n",
        bytes([0]) + b"POST /tokenize HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        bytes([0x18]) + request(b"/v1/completions", first)[:-5],  # truncated body
        # A body that is only the last chunk and a trailer, fed a byte at a time: reaches
        # Beast 1.74's false assertion in parse_chunk_header (see the target's handler).
        bytes([0x08]) + b"POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\nX-Trailer: 1\r\n\r\n",
    ]
    for i, s in enumerate(seeds):
        with open(os.path.join(out, "seed%03d" % i), "wb") as f:
            f.write(s)


if __name__ == "__main__":
    main()
