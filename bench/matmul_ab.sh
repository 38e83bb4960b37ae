#!/usr/bin/env bash
# A/B of two kernels_matmul_bench binaries (a change against its base) on a shared, noisy
# machine: the binaries take turns, ROUNDS times, each run repeating every selected
# benchmark REPS times in random order; the table gives, per benchmark and binary, the
# best and the median of its `weights` counter over all its repetitions (weight bytes per
# second, in G/s), and new / base of both. Use the best for what a kernel can do, the median for
# how often it does it; trust a difference only where both agree and it exceeds the
# spread between rounds.
#   bench/matmul_ab.sh BASE_BIN NEW_BIN THREADS 'google-benchmark filter'
# Env: ROUNDS (2), REPS (7), MIN_TIME (0.15 seconds per repetition).
# Example: bench/matmul_ab.sh /tmp/kmb_base build/bench/kernels_matmul_bench 1 \
#            'matmul_l2/q2_k_x16/|matmul/q2_k_x16/2048x5632/tokens:(1|512)/'
set -euo pipefail
base=${1:?base kernels_matmul_bench binary}
new=${2:?new kernels_matmul_bench binary}
threads=${3:?threads}
filter=${4:?benchmark filter}
rounds=${ROUNDS:-2} reps=${REPS:-7} min_time=${MIN_TIME:-0.15}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 0; r < rounds; ++r)); do
  for side in base new; do
    bin=$base
    [[ $side == new ]] && bin=$new
    "$bin" --threads="$threads" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
      --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true 2>/dev/null |
      awk -v side="$side" '/^matmul/ && !/_(mean|median|stddev|cv) / {
        name = $1; sub("/threads:.*", "", name); print side, name, $NF }' >>"$out"
  done
done
python3 - "$out" <<'EOF'
import collections, statistics, sys
rates = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, name, value = line.split()
    unit = value.split("=")[-1]
    scale = 1e-3 if unit.endswith("M/s") else 1.0  # M/s -> G/s
    rates[(name, side)].append(float(unit.rstrip("GMk/s")) * scale)
names = sorted({name for name, _ in rates})
print("| benchmark | base best | new best | ratio | base median | new median | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
for n in names:
    b, w = rates.get((n, "base"), [0]), rates.get((n, "new"), [0])
    bb, wb, bm, wm = max(b), max(w), statistics.median(b), statistics.median(w)
    print("| %s | %.4g | %.4g | %.3f | %.4g | %.4g | %.3f |" % (
        n, bb, wb, wb / bb if bb else 0, bm, wm, wm / bm if bm else 0))
EOF
