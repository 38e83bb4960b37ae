#!/usr/bin/env bash
# Time to first token on long documents (issue 26 part 4, docs/BENCHMARKS.md): one
# 16K-token prompt with 64 output tokens, and 4 concurrent 8K prompts, through
# `strata serve` at each (prefill chunk, batch-token budget) pair, or through a server
# already running at BASE_URL (llama-server, ik_llama.cpp's server) when it is set.
#   bench/ttft.sh MODEL.gguf ["CHUNK:BUDGET ..."] [THREADS] [OUT_DIR]
#   BASE_URL=http://127.0.0.1:8080 NAME=llama-server bench/ttft.sh MODEL.gguf
# CONCURRENT=0 skips the 4 x 8K workload (the single-prompt comparison with peers).
# Every run uses fresh prompts (a new seed), so no prefix cache can answer them.
set -euo pipefail
model=${1:?model}
configs=${2:-"512:2048 1024:2048 2048:2048 2048:4096 4096:4096"}
threads=${3:-2}
out=${4:-bench-out/ttft}
bin=${STRATA:-build/strata}
port=${PORT:-18182}
long=${LONG_LEN:-16000}
short=${SHORT_LEN:-8000}
ctx=${CTX:-33792}
mkdir -p "$out"

wait_health() {
  for _ in $(seq 1 600); do
    curl -sf "$1/health" > /dev/null && return 0
    sleep 1
  done
  echo "no /health at $1" >&2
  return 1
}

# run_load URL TAG SEED: the two workloads against one server.
run_load() {
  local url=$1 tag=$2 seed=$3
  # Warm-up: page the weights in and size the workspaces (not measured).
  "$bin" bench serve --base-url "$url" --model-path "$model" --dataset random \
      --input-len 256 --output-len 4 --num-prompts 1 --ignore-eos --seed $((seed + 100)) \
      > /dev/null
  "$bin" bench serve --base-url "$url" --model-path "$model" --dataset random \
      --input-len "$long" --output-len 64 --num-prompts 1 --ignore-eos --seed "$seed" \
      --timeout 1800 --result-json "$out/${tag}_1x${long}.json" > "$out/${tag}_1x${long}.txt"
  [[ "${CONCURRENT:-1}" == 0 ]] && return 0
  "$bin" bench serve --base-url "$url" --model-path "$model" --dataset random \
      --input-len "$short" --output-len 64 --num-prompts 4 --max-concurrency 4 --ignore-eos \
      --seed $((seed + 1)) --timeout 1800 --result-json "$out/${tag}_4x${short}.json" \
      > "$out/${tag}_4x${short}.txt"
}

tags=()
if [[ -n "${BASE_URL:-}" ]]; then
  wait_health "$BASE_URL"
  tag=${NAME:-peer}
  run_load "$BASE_URL" "$tag" 11
  tags+=("$tag")
else
  seed=20
  for cfg in $configs; do
    chunk=${cfg%%:*}
    budget=${cfg##*:}
    tag="strata_c${chunk}_b${budget}"
    "$bin" serve -m "$model" -t "$threads" -c "$ctx" --port "$port" --max-seqs 8 \
        --prefill-chunk "$chunk" --max-batch-tokens "$budget" > "$out/$tag.server.log" 2>&1 &
    server=$!
    trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
    wait_health "http://127.0.0.1:$port"
    seed=$((seed + 10))
    run_load "http://127.0.0.1:$port" "$tag" "$seed"
    kill "$server"
    wait "$server" 2>/dev/null || true
    trap - EXIT
    tags+=("$tag")
  done
fi

python3 - "$out" "$long" "$short" "${tags[@]}" <<'PY'
import json, sys
out, long_len, short_len, tags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def s(tag, load):
    try:
        return json.load(open(f"{out}/{tag}_{load}.json"))["summary"]
    except FileNotFoundError:  # CONCURRENT=0
        return {}
def v(x, k, p):
    return x[k][p] if x.get(k) and x[k].get(p) is not None else float("nan")
print(f"| server | 1 x {long_len}: TTFT s | TPOT ms | 4 x {short_len}: TTFT p50 s | TTFT p99 s | TPOT p50 ms |")
print("|---|---:|---:|---:|---:|---:|")
for t in tags:
    a, b = s(t, f"1x{long_len}"), s(t, f"4x{short_len}")
    print(f'| {t} | {v(a,"ttft_ms","median")/1e3:.2f} | {v(a,"tpot_ms","median"):.1f} | '
          f'{v(b,"ttft_ms","median")/1e3:.2f} | {v(b,"ttft_ms","p99")/1e3:.2f} | {v(b,"tpot_ms","median"):.1f} |')
PY
