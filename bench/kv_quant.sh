#!/usr/bin/env bash
# Decode speed at long context with each KV cache type, in one run: interleaved rounds
# (bf16, q8_0, q4_0 at each depth, then again), medians per type, and the KV bytes the
# sequence holds per token of context. The depth is filled with synthetic K/V
# (bench model --fill synthetic: random K/V written straight into the cache), so no
# 32K-token prefill is needed; decode speed does not depend on what the context holds.
# Usage: bench/kv_quant.sh [MODEL] [ROUNDS] [DEPTHS] [N_GEN]   (KV_TYPES="bf16 q8_0 q4_0")
set -euo pipefail
BIN=${STRATA_BIN:-build/strata}
MODEL=${1:-/work/models/llama-1b-q4_0.gguf}
ROUNDS=${2:-3}
DEPTHS=${3:-16384,32768}
NGEN=${4:-32}
TYPES=${KV_TYPES:-bf16 q8_0 q4_0}
THREADS=${THREADS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/Model name: *//p'), nproc $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" info "$MODEL" | grep "kv per token" || true
IFS=, read -ra ds <<<"$DEPTHS"
for r in $(seq "$ROUNDS"); do
  for d in "${ds[@]}"; do
    for t in $TYPES; do
      "$BIN" bench model -m "$MODEL" -t "$THREADS" -p 0 -n "$NGEN" -d "$d" -r 1 --fill synthetic \
        --kv-type "$t" -o json >"$out/$t.$d.$r.json"
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/kv_quant_table.py" "$out"
