#!/usr/bin/env bash
# The CPU kernels against the machine's limits (issue 7; docs/BENCHMARKS.md), every
# figure with its yardstick measured in the same process (`bench model --roofline`: the
# read bandwidth right before each test, the AVX2 f32 FMA peak once). The machines are
# shared and noisy, so each configuration runs ROUNDS times, interleaved, and the table
# gives medians. Runs without --kv-type use the default (auto: bf16 on CPUs with
# AVX512_BF16, else f16); depth4k_f16 and depth4k_f32 pin the type.
#   bench/cpu_roofline.sh MODEL_Q4_0.gguf MODEL_Q8_0.gguf [THREADS] [OUT_DIR]
set -euo pipefail
q4=${1:?Q4_0 model}
q8=${2:?Q8_0 model}
threads=${3:-2}
out=${4:-bench-out/roofline}
rounds=${ROUNDS:-3}
bin=${STRATA:-build/strata}
mkdir -p "$out"
"$bin" bench roofline -t "$threads" -m "$q4" | tee "$out/roofline.txt"
run() {  # name, then bench model arguments
  local name=$1
  shift
  "$bin" bench model -t "$threads" --roofline -o json "$@" > "$out/$name.$round.json"
}
for round in $(seq 1 "$rounds"); do
  for m in q4 q8; do
    model=$q4
    [[ $m == q8 ]] && model=$q8
    run "$m.short" -m "$model" -p 512 -n 128 -r 2
    run "$m.depth4k" -m "$model" -p 512 -n 128 -r 1 -d 4096 --fill synthetic
    run "$m.batch16" -m "$model" -p 0 -n 32 -b 16 -r 1
    run "$m.mmap" -m "$model" -p 0 -n 128 -r 2 --mmap
    STRATA_NO_AVX512=1 run "$m.avx2" -m "$model" -p 512 -n 128 -r 2
    run "$m.depth4k_f16" -m "$model" -p 512 -n 128 -r 1 -d 4096 --fill synthetic --kv-type f16
    run "$m.depth4k_f32" -m "$model" -p 512 -n 128 -r 1 -d 4096 --fill synthetic --kv-type f32
    run "$m.norepack" -m "$model" -p 512 -n 128 -r 2 --no-repack
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(name):
    res = {}
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{out}/{name}.{r}.json")):
            res.setdefault(row["test"], []).append(row)
    return res
def med(xs): return statistics.median(xs)
print("| model | config | test | t/s (median) | roofline fraction (median) | per round |")
print("|---|---|---|---:|---:|---|")
for m, label in (("q4", "Q4_0"), ("q8", "Q8_0")):
    for cfg in ("short", "norepack", "avx2", "mmap", "batch16", "depth4k", "depth4k_f16", "depth4k_f32"):
        for test, rs in rows(f"{m}.{cfg}").items():
            bound = "bandwidth_fraction" if test.startswith("tg") and rs[0]["batch"] == 1 else "fma_fraction"
            tps = [r["tokens_per_s_mean"] for r in rs]
            fr = [r[bound] for r in rs]
            unit = "of read BW" if bound == "bandwidth_fraction" else "of AVX2 FMA peak"
            print(f"| {label} | {cfg} | {test} | {med(tps):.2f} | {100*med(fr):.0f}% {unit} | "
                  + ", ".join(f"{t:.1f}" for t in tps) + " |")
    for cfg in ("depth4k", "depth4k_f16", "depth4k_f32"):
        short, deep = rows(f"{m}.short"), rows(f"{m}.{cfg}")
        for test in ("pp512", "tg128"):
            ratios = [d["tokens_per_s_mean"] / s["tokens_per_s_mean"] for d, s in zip(deep[test], short[test])]
            print(f"| {label} | {cfg} / short | {test} | | {100*med(ratios):.0f}% of depth 0 | "
                  + ", ".join(f"{100*x:.0f}%" for x in ratios) + " |")
PY
