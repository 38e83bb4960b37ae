#!/usr/bin/env bash
# Quantization ladder on aidreams260K: bits per weight, KLD against the F32 model and
# perplexity, with -c 128 windows of tests/data/tinystories_eval.txt.
#   uniform:   strata quantize --type T (the plain quantizers)
#   search:    --search (weighted scale search, unit weights; --outliers clip or keep)
#   calib:     --calib (activation-weighted scale search; clip or keep)
#   T*:        uniform T but rows that do not divide into 32 (ffn_down, 172) at f16 instead
#              of f32, as a plan file (--plan): the fair same-ladder baseline for plans
#   plan B:    --target-bpw B with --calib (per-tensor types from the sensitivity pass)
# Calibration uses lines 1-18 of the text, evaluation the held-out lines 19-36.
# About 4 minutes on 2 cores (the sensitivity pass: 116 single-tensor probes, ~40 s).
# usage: bench/quant_ladder.sh [BUILD_DIR] [SHARED_DIR]
set -euo pipefail
B=${1:-build}/strata
S=${2:-../shared}
TXT=$(dirname "$0")/../tests/data/tinystories_eval.txt
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
head -n 18 "$TXT" >"$D/calib.txt"
tail -n +19 "$TXT" >"$D/eval.txt"
"$B" convert llama2c "$S/models/aidreams260K.bin" "$S/models/aidreams260K.tok512.bin" "$D/f32.gguf" >/dev/null 2>&1
"$B" eval kld -m "$D/f32.gguf" -f "$D/eval.txt" -c 128 -t 2 --save-logits "$D/ref.bin" >/dev/null 2>&1
# One calibration + sensitivity pass (all ladder types), reused by the plan rows.
"$B" quantize "$D/f32.gguf" "$D/sens.gguf" --calib "$D/calib.txt" -c 128 -t 2 --save-imatrix "$D/im.bin" \
  --target-bpw 16 >/dev/null 2>&1
SENS="$D/sens.gguf.sensitivity.json"
echo "| variant | matrices bpw | file bytes | KLD mean | KLD p99 | top-1 agree | ppl |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row() {  # name model quantize-output
  local out bpw
  bpw=$(awk '/^wrote .*bits per weight/ {print $4}' <<<"$3")
  [ -n "$bpw" ] || bpw=32.0000
  out=$("$B" eval kld -m "$2" --ref-logits "$D/ref.bin" -t 2 2>/dev/null)
  awk -v t="$1" -v b="$(stat -c %s "$2")" -v w="$bpw" '
    /^kld/ {mean=$3; p99=$7} /^top1/ {agree=$3} /^ppl/ {ppl=$2}
    END {printf "| %s | %s | %d | %s | %s | %s | %s |\n", t, w, b, mean, p99, agree, ppl}' <<<"$out"
}
row f32 "$D/f32.gguf" ""
declare -A BPW
for t in f16 q8_0 q5_0 q4_0; do
  q=$("$B" quantize "$D/f32.gguf" "$D/$t.gguf" --type "$t" 2>/dev/null); row "$t" "$D/$t.gguf" "$q"
  [ "$t" = f16 ] && continue
  for o in clip keep; do
    q=$("$B" quantize "$D/f32.gguf" "$D/x.gguf" --type "$t" --search --outliers $o 2>/dev/null)
    row "$t search $o" "$D/x.gguf" "$q"
    q=$("$B" quantize "$D/f32.gguf" "$D/x.gguf" --type "$t" --imatrix "$D/im.bin" --outliers $o 2>/dev/null)
    row "$t calib $o" "$D/x.gguf" "$q"
  done
  # T*: the same types, rows of 172 at f16 (a plan file the quantizer applies as is).
  python3 - "$D/$t.gguf.plan.json" "$t" "$SENS" <<'PY'
import json, sys
path, t, sens = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
ts = []
for name, types in sorted(sens.items()):
    ty = t if t in types else "f16"
    if name == "token_embd.weight" and t != "q8_0": ty = "q8_0"  # the classifier floor
    ts.append({"name": name, "type": ty, "bytes": 0, "n_weights": 0, "sensitivity": types[ty]})
json.dump({"budget_bytes": 0, "tensors": ts}, open(path, "w"))
PY
  q=$("$B" quantize "$D/f32.gguf" "$D/star.gguf" --plan "$D/$t.gguf.plan.json" --imatrix "$D/im.bin" 2>/dev/null)
  row "$t* calib clip" "$D/star.gguf" "$q"
  BPW[$t]=$(awk '/^wrote .*bits per weight/ {print $4}' <<<"$(
    "$B" quantize "$D/f32.gguf" "$D/q.gguf" --type "$t" 2>/dev/null)")
  BPW["$t*"]=$(awk '/^wrote .*bits per weight/ {print $4}' <<<"$q")
done
for bpw in "${BPW[q4_0*]}" 7.0 7.5 "${BPW[q5_0*]}" 8.5 9.0 "${BPW[q4_0]}" "${BPW[q5_0]}"; do
  q=$("$B" quantize "$D/f32.gguf" "$D/plan.gguf" --imatrix "$D/im.bin" --sensitivity-in "$SENS" \
    --target-bpw "$bpw" 2>/dev/null)
  row "plan --target-bpw $bpw" "$D/plan.gguf" "$q"
done
# At T*'s size the floors leave no choice (the cheapest floored plan is q4_0*); without
# the embedding floor (--floor q4_0) the solver spends those bytes elsewhere.
q=$("$B" quantize "$D/f32.gguf" "$D/plan.gguf" --imatrix "$D/im.bin" --sensitivity-in "$SENS" \
  --target-bpw "${BPW[q4_0*]}" --floor q4_0 2>/dev/null)
row "plan --target-bpw ${BPW[q4_0*]} --floor q4_0" "$D/plan.gguf" "$q"
# A plan without calibration weights in the quantizer (sensitivities as measured above).
q=$("$B" quantize "$D/f32.gguf" "$D/plan.gguf" --sensitivity-in "$SENS" --target-bpw 7.5 2>/dev/null)
row "plan --target-bpw 7.5, plain quantizers" "$D/plan.gguf" "$q"
