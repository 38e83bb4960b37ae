#!/usr/bin/env bash
# MLA's latent KV cache through `strata serve` (docs/BENCHMARKS.md "MLA"): a
# DeepSeek-V2-shaped file (the deepseek2-tiny preset: kv_lora_rank 64, rope 32, 3
# layers), one 16K-token completion streamed; /metrics is read while it generates and its
# KV bytes are checked against (kv_lora_rank + rope) x layers x 2 bytes (f16) per token.
#   bench/mla_memory.sh [BUILD]
set -euo pipefail
BUILD=${1:-build}
S=$BUILD/strata
PORT=${PORT:-18733}
DIR=$(mktemp -d /tmp/mla-memory-XXXX)
$S make-model "$DIR/ds.gguf" --preset deepseek2-tiny --type q8_0 --ctx 20480 >/dev/null
per_token=$(( (64 + 32) * 3 * 2 ))
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
$S info "$DIR/ds.gguf" | grep -E "attention|kv per token"
$S serve -m "$DIR/ds.gguf" -t 2 --ctx 20480 --kv-type f16 --port "$PORT" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 120); do curl -sf "localhost:$PORT/health" >/dev/null && break; sleep 0.5; done
python3 - "$PORT" "$per_token" <<'PY'
import json, sys, threading, time, urllib.request
port, per_token = sys.argv[1], int(sys.argv[2])
prompt = [1] + [100 + (i * 7919) % 30000 for i in range(1, 16384)]
model = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models"))["data"][0]["id"]
body = json.dumps({"model": model, "prompt": prompt, "max_tokens": 400, "temperature": 0,
                   "ignore_eos": True, "stream": True}).encode()
first = threading.Event()
def stream():
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    t0 = time.time()
    with urllib.request.urlopen(req) as r:
        for line in r:
            if line.startswith(b"data: {") and not first.is_set():
                print(f"TTFT {time.time() - t0:.2f} s for {len(prompt)} prompt tokens")
                first.set()
th = threading.Thread(target=stream)
th.start()
first.wait(600)
time.sleep(0.5)
text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
m = {l.split()[0]: float(l.split()[1]) for l in text.splitlines()
     if l.startswith("strata:kv_") and not l.startswith("#")}
used = m["strata:kv_cache_bytes_in_use"]
bpt = m["strata:kv_bytes_per_token"]
tokens = used / per_token
print(f"/metrics mid-stream: kv_cache_bytes_in_use {used:.0f} = {tokens:.0f} token slots "
      f"x {per_token} B; kv_bytes_per_token {bpt:.1f} (expected {per_token}, whole blocks "
      f"of 16 round it up)")
ok = used % (16 * per_token) == 0 and tokens >= len(prompt) and abs(bpt - per_token) < per_token * 0.01
print("MATCH" if ok else "MISMATCH")
th.join()
sys.exit(0 if ok else 1)
PY
