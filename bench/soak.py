#!/usr/bin/env python3
"""Mixed-load soak driver for `strata serve` (Python 3 stdlib only; bench/soak.sh starts
the server and calls this).

  soak.py --url http://127.0.0.1:PORT --pid PID [--seconds 600] [--clients 6]
          [--sample-every 2] [--max-body-bytes N] [--csv samples.csv] [--model NAME]

For --seconds it runs, at once: --clients workers that each pick a random job per request
(streaming and non-streaming completions and chat, clients that disconnect mid-stream or
mid-request, prompts near the context limit, bad requests: malformed JSON, wrong types,
oversize bodies, unknown routes, wrong methods), one /health prober, and a sampler that
reads the server's VmRSS (/proc/PID/status) and /metrics (KV usage, running/waiting) every
--sample-every seconds. Afterwards it waits (up to 60 s) for the engine to go idle and
prints RSS start/peak/end, KV usage start/end, responses per status class and job, and
/health latency. Exit status 1 when any 5xx was answered, a stream carried an error
event, a well-formed request failed at the transport, the server died, or KV usage did
not come back to its starting value when idle.

Robust to details of the server on purpose: any 4xx is an acceptable answer to a bad or
refused request (400, 404, 405, 413, 429), and a 4xx to a good request is counted and
reported, not failed (429 under load is legitimate).
"""
import argparse
import collections
import http.client
import json
import random
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse

WORDS = ("once upon a time there was a little girl who liked to dream about the sun and "
         "the moon and the big tree in the park where she played with her dog every day").split()


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_class = collections.Counter()   # "2xx", "4xx", "5xx", "transport"
        self.by_job = collections.defaultdict(collections.Counter)  # job -> status
        self.failures = []                       # human-readable, capped
        self.health_ms = []

    def record(self, job, status, fail=None):
        with self.lock:
            cls = status if isinstance(status, str) else "%dxx" % (status // 100)
            self.by_class[cls] += 1
            self.by_job[job][str(status)] += 1
            if fail and len(self.failures) < 50:
                self.failures.append("%s: %s" % (job, fail))


class Client:
    def __init__(self, args, stats, rng):
        u = urllib.parse.urlparse(args.url)
        self.host, self.port = u.hostname, u.port or 80
        self.args, self.stats, self.rng = args, stats, rng
        self.model = args.model
        self.ctx = args.ctx
        self.n_vocab = args.n_vocab

    # ---- helpers ----
    def words(self, n):
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def conn(self, timeout=120):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(self, path, body, raw=None):
        """(status, response bytes); raises on transport errors."""
        c = self.conn()
        try:
            data = raw if raw is not None else json.dumps(body).encode()
            c.request("POST", path, body=data, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def stream(self, path, body, stop_after=None):
        """Reads an SSE response; returns (status, events, error_events). With stop_after,
        closes the connection after that many events (a client that goes away)."""
        c = self.conn()
        try:
            c.request("POST", path, body=json.dumps(body).encode(),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                r.read()
                return r.status, 0, 0
            events = errors = 0
            while True:
                line = r.readline()
                if not line:
                    break
                if not line.startswith(b"data: "):
                    continue
                payload = line[6:].strip()
                if payload == b"[DONE]":
                    break
                events += 1
                try:
                    if "error" in json.loads(payload):
                        errors += 1
                except ValueError:
                    errors += 1
                if stop_after is not None and events >= stop_after:
                    if self.rng.random() < 0.5:  # half reset the connection, half close it
                        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                          struct.pack("ii", 1, 0))
                    break
            return 200, events, errors
        finally:
            c.close()

    def sampling(self):
        b = {"max_tokens": self.rng.choice([1, 8, 32, 64]), "temperature": self.rng.choice(
            [0, 0.7, 1.0]), "seed": self.rng.randrange(1 << 31)}
        if self.rng.random() < 0.3:
            b["top_k"] = 40
            b["top_p"] = 0.9
        if self.rng.random() < 0.2:
            b["stop"] = ["."]
        if self.rng.random() < 0.2:
            b["n"] = 2
        if self.model:
            b["model"] = self.model
        return b

    def messages(self):
        # aidreams260K has 128 tokens of context and spells ChatML's markers out, so most
        # conversations are short; the longer ones (a 400 naming the limit) stay in the mix.
        m = [{"role": "user", "content": self.words(self.rng.randint(2, 12))}]
        if self.rng.random() < 0.3:
            m.insert(0, {"role": "system", "content": "Be brief."})
        if self.rng.random() < 0.15:
            m += [{"role": "assistant", "content": self.words(3)},
                  {"role": "user", "content": self.words(2)}]
        return m

    # ---- jobs: each returns (status, failure or None) ----
    def good(self, job, status, body=b""):
        if status >= 500:
            return status, "answered %d: %s" % (status, body[:200])
        return status, None

    def completion(self):
        b = self.sampling()
        b["prompt"] = self.words(self.rng.randint(2, 40))
        s, body = self.post("/v1/completions", b)
        return self.good("completion", s, body)

    def chat(self):
        b = self.sampling()
        b["messages"] = self.messages()
        s, body = self.post("/v1/chat/completions", b)
        return self.good("chat", s, body)

    def _stream(self, chat, stop_after=None):
        b = self.sampling()
        b["stream"] = True
        if self.rng.random() < 0.5:
            b["stream_options"] = {"include_usage": True}
        if chat:
            b["messages"] = self.messages()
        else:
            b["prompt"] = self.words(self.rng.randint(2, 40))
        s, events, errors = self.stream("/v1/chat/completions" if chat else "/v1/completions",
                                        b, stop_after)
        if errors:
            return s, "%d error event(s) in the stream" % errors
        return self.good("stream", s)

    def stream_completion(self):
        return self._stream(False)

    def stream_chat(self):
        return self._stream(True)

    def disconnect_mid_stream(self):
        return self._stream(self.rng.random() < 0.5, stop_after=self.rng.randint(1, 4))

    def disconnect_mid_request(self):
        """Sends the head and part of the body (or only part of the head), then goes."""
        body = json.dumps({"prompt": self.words(20), "max_tokens": 32}).encode()
        head = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % len(body)).encode()
        data = head + body
        cut = self.rng.randint(1, len(data) - 1)
        s = socket.create_connection((self.host, self.port), timeout=10)
        try:
            s.sendall(data[:cut])
            time.sleep(self.rng.random() * 0.2)
            if self.rng.random() < 0.5:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        finally:
            s.close()
        return "dropped", None

    def disconnect_while_generating(self):
        """A full non-streaming request, then the client leaves before the answer."""
        body = json.dumps({"prompt": self.words(30), "max_tokens": 128,
                           "ignore_eos": True}).encode()
        s = socket.create_connection((self.host, self.port), timeout=10)
        try:
            s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                       % len(body)).encode() + body)
            time.sleep(self.rng.random() * 0.05)
        finally:
            s.close()
        return "dropped", None

    def long_prompt(self):
        """Token-id prompts just under, at and over the context limit."""
        max_tokens = self.rng.choice([1, 4, 16])
        n = self.ctx - max_tokens - self.rng.randint(0, 8)
        over = self.rng.random() < 0.25
        if over:
            n = self.ctx + self.rng.randint(0, 16)
        ids = [self.rng.randrange(3, self.n_vocab) for _ in range(max(1, n))]
        b = {"prompt": ids, "max_tokens": max_tokens, "temperature": 0}
        if self.rng.random() < 0.3:
            b["stream"] = True
            s, _, errors = self.stream("/v1/completions", b)
            if errors:
                return s, "%d error event(s) in the stream" % errors
            return self.good("long", s)
        s, body = self.post("/v1/completions", b)
        if over and s < 400:
            return s, "a prompt over the context was accepted"
        return self.good("long", s, body)

    def bad_request(self):
        kind = self.rng.randrange(8)
        c = self.conn(timeout=30)
        try:
            if kind == 0:
                c.request("POST", "/v1/completions", body=b'{"prompt": "a", ',
                          headers={"Content-Type": "application/json"})
            elif kind == 1:
                c.request("POST", "/v1/completions", body=json.dumps(
                    {"prompt": 5, "max_tokens": "ten"}).encode())
            elif kind == 2:
                c.request("POST", "/v1/chat/completions", body=json.dumps(
                    {"messages": [{"role": "robot", "content": 1}]}).encode())
            elif kind == 3:
                c.request("POST", "/v1/completions", body=b"x" * (self.args.max_body_bytes + 1))
            elif kind == 4:
                c.request("GET", "/v1/nope")
            elif kind == 5:
                c.request("GET", "/v1/completions")
            elif kind == 6:
                c.request("POST", "/v1/completions", body=b"[" * 10000 + b"]" * 10000)
            else:
                c.request("POST", "/v1/completions", body=json.dumps(
                    {"prompt": "a", "temperature": 9, "n": 1000}).encode())
            r = c.getresponse()
            body = r.read()
        except (ConnectionError, socket.timeout, http.client.HTTPException) as e:
            # The server may close an oversize upload before reading it all.
            if kind == 3:
                return "refused", None
            return "transport", "bad request %d: %r" % (kind, e)
        finally:
            c.close()
        if r.status >= 500:
            return r.status, "bad request %d answered %d: %s" % (kind, r.status, body[:200])
        if r.status < 400:
            return r.status, "bad request %d accepted (%d)" % (kind, r.status)
        return r.status, None

    JOBS = [("completion", 4), ("chat", 3), ("stream_completion", 3), ("stream_chat", 3),
            ("disconnect_mid_stream", 2), ("disconnect_mid_request", 2),
            ("disconnect_while_generating", 1), ("long_prompt", 1), ("bad_request", 3)]

    def run(self, deadline):
        names = [n for n, w in self.JOBS for _ in range(w)]
        while time.time() < deadline:
            job = self.rng.choice(names)
            try:
                status, fail = getattr(self, job)()
            except (ConnectionError, socket.timeout, http.client.HTTPException, OSError) as e:
                status, fail = "transport", repr(e)
            self.stats.record(job, status, fail)


def read_rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def metrics(host, port):
    c = http.client.HTTPConnection(host, port, timeout=10)
    try:
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
    finally:
        c.close()
    out = {}
    for m in re.finditer(r"^(strata:[a-z_]+)(?:\{[^}]*\})? ([-+0-9.eE]+|NaN)$", text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def vocab_size(host, port):
    """The vocabulary size, from /detokenize's range error (256 when it says none)."""
    c = http.client.HTTPConnection(host, port, timeout=10)
    try:
        c.request("POST", "/detokenize", body=json.dumps({"tokens": [2147483647]}).encode())
        text = c.getresponse().read().decode(errors="replace")
    finally:
        c.close()
    m = re.search(r"\[0, (\d+)\)", text)
    return int(m.group(1)) if m else 256


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--sample-every", type=float, default=2)
    ap.add_argument("--max-body-bytes", type=int, default=8 << 20)
    ap.add_argument("--model", default="")
    ap.add_argument("--csv", default="")
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    u = urllib.parse.urlparse(args.url)
    host, port = u.hostname, u.port or 80

    # The model's context and vocabulary, from the server itself.
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request("GET", "/v1/models")
    info = json.loads(c.getresponse().read())["data"][0]
    c.close()
    args.ctx = int(info.get("max_model_len", 256))
    args.n_vocab = vocab_size(host, port)
    args.model = args.model or info.get("id", "")

    stats = Stats()
    samples = []  # (t, rss_kb, kv_usage, running, waiting)
    t0 = time.time()
    deadline = t0 + args.seconds
    stop = threading.Event()

    def sample():
        rss = read_rss_kb(args.pid)
        try:
            m = metrics(host, port)
        except (OSError, http.client.HTTPException):
            m = {}
        samples.append((time.time() - t0, rss, m.get("strata:kv_cache_usage_ratio"),
                        m.get("strata:num_requests_running"),
                        m.get("strata:num_requests_waiting")))
        return samples[-1]

    def sampler():
        while not stop.wait(args.sample_every):
            sample()

    def prober():
        while not stop.wait(0.25):
            t = time.time()
            try:
                cc = http.client.HTTPConnection(host, port, timeout=30)
                cc.request("GET", "/health")
                r = cc.getresponse()
                r.read()
                cc.close()
                stats.health_ms.append((time.time() - t) * 1000)
                stats.record("health", r.status,
                             "health answered %d" % r.status if r.status != 200 else None)
            except (OSError, http.client.HTTPException) as e:
                stats.record("health", "transport", repr(e))

    start = sample()
    threads = [threading.Thread(target=sampler, daemon=True),
               threading.Thread(target=prober, daemon=True)]
    for i in range(args.clients):
        cl = Client(args, stats, random.Random(args.seed * 1000 + i))
        threads.append(threading.Thread(target=cl.run, args=(deadline,), daemon=True))
    for t in threads:
        t.start()
    last_report = time.time()
    while any(t.is_alive() for t in threads[2:]):
        time.sleep(1)
        if read_rss_kb(args.pid) is None:
            print("soak: the server (pid %d) died" % args.pid, file=sys.stderr)
            stop.set()
            break
        if time.time() - last_report >= 60:
            last_report = time.time()
            s = samples[-1]
            with stats.lock:
                print("soak: t=%4.0fs rss=%s kB kv=%s running=%s; %s" % (
                    s[0], s[1], s[2], s[3], dict(stats.by_class)), flush=True)
    stop.set()
    alive = read_rss_kb(args.pid) is not None

    # Idle: wait for the engine to finish what the disconnected clients left behind.
    end = sample() if alive else (0, None, None, None, None)
    idle_deadline = time.time() + 60
    while alive and time.time() < idle_deadline and not (
            end[3] == 0 and end[4] == 0 and end[2] == start[2]):
        time.sleep(1)
        end = sample()
    time.sleep(0.5)

    rss = [s[1] for s in samples if s[1] is not None]
    hm = sorted(stats.health_ms)
    pct = (lambda p: hm[min(len(hm) - 1, int(p * len(hm)))] if hm else float("nan"))
    print("soak: %.0f s, %d clients, %d samples" % (args.seconds, args.clients, len(samples)))
    if rss:
        # "start" is the idle server before the first request; "warm" the first sample
        # after a tenth of the run, when the pools and caches have been touched once.
        warm = next((x[1] for x in samples if x[0] >= args.seconds / 10 and x[1]), rss[-1])
        print("soak: RSS start %.1f MiB, warm %.1f MiB, peak %.1f MiB, end %.1f MiB" % (
            rss[0] / 1024, warm / 1024, max(rss) / 1024, rss[-1] / 1024))
    print("soak: KV usage start %s, end %s (running %s, waiting %s at the end)" % (
        start[2], end[2], end[3], end[4]))
    print("soak: responses by class: %s" % dict(sorted(stats.by_class.items())))
    for job in sorted(stats.by_job):
        print("soak:   %-28s %s" % (job, dict(sorted(stats.by_job[job].items()))))
    print("soak: /health latency ms: p50 %.1f, p99 %.1f, max %.1f (%d probes)" % (
        pct(0.5), pct(0.99), hm[-1] if hm else float("nan"), len(hm)))
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("t_s,rss_kb,kv_usage,running,waiting\n")
            for s in samples:
                f.write(",".join("" if x is None else str(x) for x in s) + "\n")

    problems = list(stats.failures)
    if not alive:
        problems.append("the server died")
    if stats.by_class.get("5xx"):
        problems.append("%d responses 5xx" % stats.by_class["5xx"])
    if alive and end[2] != start[2]:
        problems.append("KV usage did not return to %s when idle (%s)" % (start[2], end[2]))
    if problems:
        print("soak: FAILED", file=sys.stderr)
        for p in problems[:50]:
            print("soak:   " + p, file=sys.stderr)
        return 1
    print("soak: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
