#!/usr/bin/env bash
# --target-bpw against uniform types on the 1B preset (random weights; issue 21 "mixed
# precision pays" for K-quants). Calibration: the first 700 bytes of
# tests/data/tinystories_eval.txt (one window of -c 128); evaluation on lines 19-36, -c 128.
# The sensitivity pass is 156 matrices x 4 ladder types (--ladder q3_k,q4_k,q5_k,q6_k),
# each probe one forward pass of the F32 model over the window (about 3 s on 2 cores:
# ~30 minutes in all).
# Random weights: KLD says how far each quantized model's output distribution moves from
# the F32 model's on real text tokens, nothing about language quality.
# usage: bench/quant_plan_1b.sh BUILD_DIR F32_GGUF WORK_DIR [TYPES...]
set -euo pipefail
. "$(dirname "$0")/kld_row.sh"
B=$1/strata
M=$2
D=$3
shift 3
TYPES=${*:-q4_0 q4_k_m q3_k_m}
TXT=$(dirname "$0")/../tests/data/tinystories_eval.txt
mkdir -p "$D"
head -c 700 "$TXT" >"$D/calib.txt"
tail -n +19 "$TXT" >"$D/eval.txt"
[ -f "$D/ref.bin" ] || "$B" eval kld -m "$M" -f "$D/eval.txt" -c 128 -t 2 \
  --save-logits "$D/ref.bin" >/dev/null 2>&1
SENS="$D/sens.gguf.sensitivity.json"
[ -f "$SENS" ] || "$B" quantize "$M" "$D/sens.gguf" --calib "$D/calib.txt" -c 128 -t 2 \
  --target-bpw 16 --ladder q3_k,q4_k,q5_k,q6_k >"$D/sens.out" 2>"$D/sens.err"
echo "| variant | matrices bpw | file bytes | KLD mean | KLD p99 | top-1 agree |"
echo "|---|---:|---:|---:|---:|---:|"
for t in $TYPES; do
  q=$("$B" quantize "$M" "$D/u.gguf" --type "$t" 2>/dev/null)
  kld_row "$t" "$D/u.gguf" "$q"
  bpw=$(awk '/^wrote .*bits per weight/ {print $4}' <<<"$q")
  q=$("$B" quantize "$M" "$D/p.gguf" --sensitivity-in "$SENS" --target-bpw "$bpw" 2>/dev/null) ||
    { echo "| plan --target-bpw $bpw | (below the smallest plan) | | | | |"; continue; }
  kld_row "plan --target-bpw $bpw" "$D/p.gguf" "$q"
done
rm -f "$D/u.gguf" "$D/p.gguf"
