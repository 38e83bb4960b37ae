#!/usr/bin/env bash
# K-quant ladder on a random-weight model (strata make-model --preset tiny-256: dim 256,
# ffn 768, 2 layers, vocab 32000; every row divides into 256): uniform --type T against
# --target-bpw plans at the same bits per weight. Calibration on lines 1-18 of
# tests/data/tinystories_eval.txt, evaluation on lines 19-36, -c 128. Random weights:
# the KLD says how far each quantized model's output distribution moves from the F32
# model's, not anything about language quality (ppl is meaningless here and not shown).
# K-quants take no importance weights yet: calibration only feeds the sensitivity pass.
# About 5 minutes on 2 cores. usage: bench/quant_ladder_k.sh [BUILD_DIR] [SHARED_DIR]
set -euo pipefail
. "$(dirname "$0")/kld_row.sh"
B=${1:-build}/strata
S=${2:-../shared}
TXT=$(dirname "$0")/../tests/data/tinystories_eval.txt
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
head -n 18 "$TXT" >"$D/calib.txt"
tail -n +19 "$TXT" >"$D/eval.txt"
"$B" make-model "$D/f32.gguf" --preset tiny-256 --type f32 --seed 21 \
  --vocab-from "$S/vocab/ggml-vocab-llama-spm.gguf" >/dev/null 2>&1
"$B" eval kld -m "$D/f32.gguf" -f "$D/eval.txt" -c 128 -t 2 --save-logits "$D/ref.bin" >/dev/null 2>&1
"$B" quantize "$D/f32.gguf" "$D/sens.gguf" --calib "$D/calib.txt" -c 128 -t 2 --target-bpw 16 \
  >/dev/null 2>&1
SENS="$D/sens.gguf.sensitivity.json"
echo "| variant | matrices bpw | file bytes | KLD mean | KLD p99 | top-1 agree |"
echo "|---|---:|---:|---:|---:|---:|"
for t in q6_k q5_k q4_k q3_k q2_k; do
  q=$("$B" quantize "$D/f32.gguf" "$D/u.gguf" --type "$t" 2>/dev/null)
  kld_row "$t" "$D/u.gguf" "$q"
  bpw=$(awk '/^wrote .*bits per weight/ {print $4}' <<<"$q")
  for fl in "" "--floor q2_k"; do
    q=$("$B" quantize "$D/f32.gguf" "$D/p.gguf" --sensitivity-in "$SENS" --target-bpw "$bpw" $fl \
      2>/dev/null) || { echo "| plan --target-bpw $bpw $fl | (below the smallest plan) | | | | |"; continue; }
    kld_row "plan --target-bpw $bpw $fl" "$D/p.gguf" "$q"
  done
done
