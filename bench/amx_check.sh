#!/usr/bin/env bash
# The AMX GEMMs on a CPU that has AMX (a Xeon since Sapphire Rapids), in one run: the CPU,
# the tile and GEMM tests (they skip without AMX), the tile and VNNI peaks, logits with
# and without AMX compared byte for byte, then GEMM and pp512 rates with STRATA_NO_AMX=1
# and without, alternated.
#   bash bench/amx_check.sh BUILD_DIR MODEL.gguf ...   (Q4_0, Q8_0, Q4_K_M files)
# Env: THREADS (2), REPS (3).
set -euo pipefail
build="$1"
shift
THREADS=${THREADS:-2} REPS=${REPS:-3}
lscpu | grep -E "^Model name"
echo "AMX flags: $(grep -o -w -E "amx_[a-z0-9]+" /proc/cpuinfo | sort -u | tr '\n' ' ' || true)"
"$build/tests/test_kernels" --gtest_filter='AmxTiles.*:Interleaved.Amx*:KernelIsa.*' |
  grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) "
"$build/strata" bench roofline -t "$THREADS" --gib 0.5 | grep -E "kernels|peak"
tokens=$(seq -s ' ' 1 3 150)  # 50 tokens: three 16-token tiles and a partial one
for m in "$@"; do
  for amx in 1 0; do
    STRATA_NO_AMX=$amx "$build/strata" logits -m "$m" -t "$THREADS" -c 64 --tokens "$tokens" \
      -o "/tmp/amx_check_logits.$amx" > /dev/null 2>&1
  done
  if cmp -s /tmp/amx_check_logits.1 /tmp/amx_check_logits.0; then
    echo "$(basename "$m"): logits with AMX identical to VNNI"
  else
    echo "$(basename "$m"): logits with AMX DIFFER from VNNI"
  fi
done
for round in 1 2; do
  for amx in 1 0; do
    echo "round $round, STRATA_NO_AMX=$amx"
    STRATA_NO_AMX=$amx "$build/bench/kernels_matmul_bench" --threads="$THREADS" \
      --benchmark_filter='matmul/(q4_0_x16|q8_0_x16|q4_k_x16p|q6_k_x16|q3_k_x16)/.*/tokens:512/' \
      --benchmark_min_time=0.3 2>/dev/null | grep -E "^matmul" | sed -E 's/ +/ /g' |
      awk '{for (i = 1; i <= NF; i++) if ($i ~ /^flops=/) f = $i; print "  " $1, f}'
    for m in "$@"; do
      printf '  %s ' "$(basename "$m")"
      STRATA_NO_AMX=$amx "$build/strata" bench model -m "$m" -t "$THREADS" -p 512 -n 0 \
        -r "$REPS" | grep pp512
    done
  done
done
