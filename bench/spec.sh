#!/usr/bin/env bash
# Speculative decoding on and off, side by side (docs/BENCHMARKS.md "speculative decoding").
#   bench/spec.sh [BUILD] [OUT_DIR]
# Makes its models in OUT_DIR (default /tmp/strata-spec): the copying induction circuit
# padded to a 1B model's bytes per token (target), the bare 2-layer circuit (draft), the
# llama-1b random-weight preset (Q4_0) and a tiny draft of the same vocabulary. Then, at
# -t 2, batch 1: copy-heavy prompts with each proposer, random prompts with each proposer
# with and without adaptive control, and acceptance against k.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-/tmp/strata-spec}
S=$BUILD/strata
N=${N:-192}
mkdir -p "$OUT"
[ -f "$OUT/induction-1b.gguf" ] || $S make-model "$OUT/induction-1b.gguf" --preset induction-1b --type f16 --ctx 8192
[ -f "$OUT/induction.gguf" ] || $S make-model "$OUT/induction.gguf" --preset induction --type f16 --ctx 8192
[ -f "$OUT/llama-1b-q4_0.gguf" ] || $S make-model "$OUT/llama-1b-q4_0.gguf" --preset llama-1b --type q4_0 --ctx 8192
[ -f "$OUT/tiny-draft.gguf" ] || $S make-model "$OUT/tiny-draft.gguf" --preset tiny --type q8_0 --ctx 8192 --seed 9

# A passage of the 100 needle words in a random order, then its first words again: the
# circuit continues the passage, so the output quotes the prompt.
COPY=$(python3 -c "
import random; random.seed(1); w=['%02d'%i for i in range(100)]; random.shuffle(w); print(' '.join(w+w[:10]))")
RANDOM_TEXT=$(python3 -c "
import random; random.seed(2); print(' '.join(random.choice(['river','stone','maple','orbit','quartz','lumen','cobalt','ember','fjord','glyph','harbor','ivory']) for _ in range(60)))")

ROUNDS=${ROUNDS:-3}
RES=$(mktemp /tmp/spec-bench-XXXX.tsv)
run() {  # table label model prompt flags...
  local table=$1 label=$2 model=$3 prompt=$4; shift 4
  local err tps acc
  err=$($S run -m "$model" -p "$prompt" -n "$N" --temp 0 -t 2 --ignore-eos "$@" 2>&1 >/dev/null)
  tps=$(echo "$err" | sed -n 's/.*generated: [0-9]* tokens, \([0-9.]*\) tok\/s.*/\1/p')
  acc=$(echo "$err" | sed -n "s/^speculation[^:]*: //p")
  printf '%s\t%s\t%s\t%s\n' "$table" "$label" "$tps" "${acc:--}" >> "$RES"
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds, medians"
C="copy-heavy prompt, induction-1b, batch 1"
R="random prompt, llama-1b Q4_0, batch 1"
K="acceptance against k (induction-1b, copy prompt, ngram, adaptive off)"
for round in $(seq 1 "$ROUNDS"); do
  run "$C" "off" "$OUT/induction-1b.gguf" "$COPY"
  run "$C" "ngram, k 8" "$OUT/induction-1b.gguf" "$COPY" --spec ngram --spec-k 8
  run "$C" "ngram, k 16" "$OUT/induction-1b.gguf" "$COPY" --spec ngram --spec-k 16
  run "$C" "draft model (2-layer induction), k 8" "$OUT/induction-1b.gguf" "$COPY" --spec draft --draft-model "$OUT/induction.gguf" --spec-k 8
  run "$C" "early exit (2 layers), k 8" "$OUT/induction-1b.gguf" "$COPY" --spec early-exit --draft-layers 2 --spec-k 8
  run "$R" "off" "$OUT/llama-1b-q4_0.gguf" "$RANDOM_TEXT"
  for a in on off; do
    run "$R" "ngram, adaptive $a" "$OUT/llama-1b-q4_0.gguf" "$RANDOM_TEXT" --spec ngram --spec-adaptive $a
    run "$R" "draft model (tiny), adaptive $a" "$OUT/llama-1b-q4_0.gguf" "$RANDOM_TEXT" --spec draft --draft-model "$OUT/tiny-draft.gguf" --spec-adaptive $a
    run "$R" "early exit (4 layers), adaptive $a" "$OUT/llama-1b-q4_0.gguf" "$RANDOM_TEXT" --spec early-exit --draft-layers 4 --spec-adaptive $a
  done
  for k in 1 2 4 8 16; do
    run "$K" "k $k" "$OUT/induction-1b.gguf" "$COPY" --spec ngram --spec-adaptive off --spec-k $k
  done
done
python3 - "$RES" <<'PY'
import sys, statistics
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
tables = []
for t, *_ in rows:
    if t not in tables: tables.append(t)
for t in tables:
    print(f"\n| {t} | decode tok/s (median) | runs | speculation (median run) |\n|---|---:|---|---|")
    labels = []
    for r in rows:
        if r[0] == t and r[1] not in labels: labels.append(r[1])
    for lab in labels:
        runs = [r for r in rows if r[0] == t and r[1] == lab and r[2]]
        runs.sort(key=lambda r: float(r[2]))
        med = runs[len(runs) // 2]
        print(f"| {lab} | {statistics.median(float(r[2]) for r in runs):.2f} | {' '.join(r[2] for r in runs)} | {med[3]} |")
PY
rm -f "$RES"
