#!/usr/bin/env bash
# strata serve under strata bench serve at several request rates (docs/BENCHMARKS.md):
# one server process, the same random workload at each rate, results as JSON + SVG.
#   bench/serve_rates.sh MODEL.gguf "RATE1 RATE2 RATE3" [THREADS] [OUT_DIR]
set -euo pipefail
model=${1:?model}
rates=${2:-"0.05 0.2 1"}
threads=${3:-2}
out=${4:-bench-out/serve}
bin=${STRATA:-build/strata}
port=${PORT:-18181}
prompts=${PROMPTS:-24}
input=${INPUT_LEN:-128}
output=${OUTPUT_LEN:-64}
mkdir -p "$out"
"$bin" serve -m "$model" -t "$threads" --port "$port" --max-seqs 16 > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 1
done
# Warm-up (page in the weights, size the workspaces), not measured.
"$bin" bench serve --base-url "http://127.0.0.1:$port" --model-path "$model" --dataset random \
    --input-len "$input" --output-len 8 --num-prompts 2 --ignore-eos --seed 999 > /dev/null
seed=1
for rate in $rates; do
  # A different seed per rate: the same prompts would hit the prefix cache.
  seed=$((seed + 1))
  "$bin" bench serve --base-url "http://127.0.0.1:$port" --model-path "$model" --dataset random \
      --input-len "$input" --output-len "$output" --num-prompts "$prompts" --request-rate "$rate" \
      --ignore-eos --seed "$seed" --result-json "$out/rate_$rate.json" --plot "$out/rate_$rate.svg" \
      > "$out/rate_$rate.txt"
done
python3 - "$out" $rates <<'PY'
import json, sys
out, rates = sys.argv[1], sys.argv[2:]
print("| rate req/s | completed | failed | req/s | output tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rates:
    s = json.load(open(f"{out}/rate_{r}.json"))["summary"]
    f = lambda k, p: s[k][p] if s[k] and s[k][p] is not None else float("nan")
    print(f'| {r} | {s["completed"]} | {s["failed"]} | {s["request_throughput"]:.3f} | {s["output_throughput"]:.1f} | '
          f'{f("ttft_ms","median"):.0f} | {f("ttft_ms","p99"):.0f} | {f("tpot_ms","median"):.0f} | {f("tpot_ms","p99"):.0f} |')
PY
