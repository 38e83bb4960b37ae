#!/usr/bin/env bash
# Uniform quantization ladder on aidreams260K: bits per weight (file size), KLD against
# the F32 model and perplexity, on tests/data/tinystories_eval.txt with -c 128 windows.
# usage: bench/quant_ladder.sh [BUILD_DIR] [SHARED_DIR]
# (--target-bpw / --calib rows are not here yet: strata quantize does not have them.)
set -euo pipefail
B=${1:-build}/strata
S=${2:-../shared}
TXT=$(dirname "$0")/../tests/data/tinystories_eval.txt
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
"$B" convert llama2c "$S/models/aidreams260K.bin" "$S/models/aidreams260K.tok512.bin" "$D/f32.gguf" >/dev/null 2>&1
"$B" eval kld -m "$D/f32.gguf" -f "$TXT" -c 128 -t 2 --save-logits "$D/ref.bin" >/dev/null 2>&1
f32_bytes=$(stat -c %s "$D/f32.gguf")
echo "| type | file bytes | bytes vs f32 | KLD mean | KLD p99 | top-1 agree | ppl |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for t in f32 f16 q8_0 q5_0 q4_0; do
  m="$D/f32.gguf"
  if [ "$t" != f32 ]; then m="$D/$t.gguf"; "$B" quantize "$D/f32.gguf" "$m" --type "$t" >/dev/null 2>&1; fi
  out=$("$B" eval kld -m "$m" --ref-logits "$D/ref.bin" -t 2 2>/dev/null)
  bytes=$(stat -c %s "$m")
  awk -v t="$t" -v b="$bytes" -v f="$f32_bytes" '
    /^kld/ {mean=$3; p99=$7} /^top1/ {agree=$3} /^ppl/ {ppl=$2}
    END {printf "| %s | %d | %.3f | %s | %s | %s | %s |\n", t, b, b/f, mean, p99, agree, ppl}' <<<"$out"
done
