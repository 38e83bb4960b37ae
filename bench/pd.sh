#!/usr/bin/env bash
# Prefill/decode disaggregation over loopback (docs/DISAGGREGATION.md): per prompt length,
# the KV message's bytes and bytes per token, the time to send and import it, against the
# time the decode replica takes to recompute the prompt itself; then the same with the
# prefill replica's sends capped by --kv-rate-limit, where the decision turns to recompute.
# Two servers (decode with a KV receiver, prefill), one compute thread each.
# Usage: bench/pd.sh [MODEL] [LENGTHS] [RATE_LIMIT_BYTES_PER_S]
set -euo pipefail
BIN=${STRATA_BIN:-build/strata}
MODEL=${1:-/work/models/llama-1b-q4_0.gguf}
LENGTHS=${2:-256,512,1024,2048}
RATE=${3:-500000}
THREADS=${THREADS:-1}
BASE=${PD_PORT_BASE:-27500}
DEC=$((BASE + 1)) PRE=$((BASE + 2)) KV=$((BASE + 11))
log=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
wait_up() {
  for _ in $(seq 600); do
    curl -sf "localhost:$1/health" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "server on $1 did not start" >&2
  exit 1
}
common=(-m "$MODEL" -t "$THREADS" --kv-cache-tokens 16384 --host 127.0.0.1)
start_prefill() {
  "$BIN" serve "${common[@]}" --port "$PRE" --role prefill "$@" >"$log/prefill.log" 2>&1 &
  pids+=($!)
  wait_up "$PRE"
}
"$BIN" serve "${common[@]}" --port "$DEC" --role decode --kv-listen "127.0.0.1:$KV" \
  >"$log/decode.log" 2>&1 &
pids+=($!)
wait_up "$DEC"
start_prefill
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/Model name: *//p'), nproc $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# model $MODEL, $THREADS compute thread(s) per server; $("$BIN" info "$MODEL" | grep 'kv per token')"

run() {  # $1: label, $2: 1 to time the decode replica's own recompute too
  python3 - "$1" "$LENGTHS" "$PRE" "$DEC" "$KV" "$2" <<'PY'
import json, sys, time, random, urllib.request
label, lengths, pre, dec, kv = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], *sys.argv[3:6]
measure = sys.argv[6] == "1"
def post(port, path, body):
    t = time.monotonic()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r), time.monotonic() - t
rng = random.Random(hash(label) & 0xffff)
# A warm-up prompt, so the prefill replica has measured its prefill rate.
post(pre, "/internal/kv/prefill", {"prompt": [rng.randrange(100, 30000) for _ in range(128)],
                                    "max_tokens": 1, "kv_target": f"127.0.0.1:{kv}"})
print(f"\n{label}\n")
print("| prompt tokens | decision | blocks | message bytes | bytes/token | transfer s | "
      "prefill s (prefill replica) | decode TTFT s | recompute s (decode replica) | break-even link MB/s | est. transfer s | est. recompute s |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in lengths:
    ids = [1] + [rng.randrange(100, 30000) for _ in range(n - 1)]
    d, _ = post(pre, "/internal/kv/prefill", {"prompt": ids, "max_tokens": 1,
                                              "kv_target": f"127.0.0.1:{kv}"})
    out, ttft = post(dec, "/v1/completions", {"prompt": ids, "max_tokens": 1, "temperature": 0})
    cached = out["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
    # The same prompt under another salt: the decode replica computes all of it.
    rec = float("nan")
    if measure:
        _, rec = post(dec, "/v1/completions", {"prompt": ids, "max_tokens": 1, "temperature": 0,
                                               "cache_salt": f"recompute-{n}-{label}"})
    b = d.get("bytes", 0)
    # The link speed at which sending the prompt's KV costs what recomputing it does.
    even = b / rec / 1e6 if measure and b else float("nan")
    print(f"| {n} | {d['decision']} | {d.get('blocks', 0)} | {b} | {b / n:.0f} | "
          f"{d.get('seconds', 0):.3f} | {d.get('prefill_seconds', 0):.3f} | {ttft:.3f} "
          f"(cached {cached}) | {rec:.3f} | {even:.2f} | {d.get('estimated_transfer_s', 0):.3f} | "
          f"{d.get('estimated_recompute_s', 0):.3f} |")
    sys.stdout.flush()
PY
}
run "Loopback, no rate limit (--kv-link-gbps 10 seeds the link estimate)" 1
kill "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true
start_prefill --kv-rate-limit "$RATE"
run "Sends capped at --kv-rate-limit $RATE bytes/s (decode TTFT: the decode replica's own prefill)" 0
echo
echo "decisions logged by the prefill replica (rate-limited run):"
grep "kv prefill of" "$log/prefill.log" | sed 's/^strata serve: /  /'
rm -rf "$log"
