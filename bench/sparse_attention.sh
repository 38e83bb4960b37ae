#!/usr/bin/env bash
# Sparse attention against dense on the same model in one run (docs/BENCHMARKS.md):
# decode speed and KV bytes at several context depths (the context is filled with
# synthetic K/V: speed does not depend on its values), and the marginal prefill cost
# (pp128 on top of each depth), integrated over depth into the time to prefill a
# prompt of that length.
#   bench/sparse_attention.sh MODEL.gguf [THREADS] [OUT_DIR]
set -euo pipefail
model=${1:?model}
threads=${2:-2}
out=${3:-bench-out/sparse}
bin=${STRATA:-build/strata}
sparse=(--retrieval-ratio 0.25 --sink 4 --window 256)
mkdir -p "$out"
depths=${DEPTHS:-0,4096,8192,16384,32768}
for mode in dense sparse; do
  extra=()
  [[ $mode == sparse ]] && extra=("${sparse[@]}")
  "$bin" bench model -m "$model" -t "$threads" -p 0 -n 16 -d "$depths" -r 3 --fill synthetic -o json \
      "${extra[@]}" > "$out/tg_$mode.json"
  "$bin" bench model -m "$model" -t "$threads" -p 128 -n 0 -d "$depths" -r 1 --fill synthetic -o json \
      "${extra[@]}" > "$out/pp_$mode.json"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name): return {r["depth"]: r for r in json.load(open(f"{out}/{name}.json"))}
tg = {m: load(f"tg_{m}") for m in ("dense", "sparse")}
pp = {m: load(f"pp_{m}") for m in ("dense", "sparse")}
print("| depth | dense tg t/s | sparse tg t/s | speedup | dense KV MiB | sparse KV MiB | KV ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for d in sorted(tg["dense"]):
    a, b = tg["dense"][d], tg["sparse"][d]
    ratio = b["kv_bytes"] / a["kv_bytes"] if a["kv_bytes"] else float("nan")
    print(f'| {d} | {a["tokens_per_s_mean"]:.2f} | {b["tokens_per_s_mean"]:.2f} | '
          f'{b["tokens_per_s_mean"] / a["tokens_per_s_mean"]:.2f}x | {a["kv_bytes"] / 2**20:.0f} | '
          f'{b["kv_bytes"] / 2**20:.0f} | {100 * ratio:.1f}% |')
print()
print("| depth | dense pp128 t/s | sparse pp128 t/s | speedup |")
print("|---:|---:|---:|---:|")
for d in sorted(pp["dense"]):
    a, b = pp["dense"][d]["tokens_per_s_mean"], pp["sparse"][d]["tokens_per_s_mean"]
    print(f"| {d} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")
# Prefill time of an N-token prompt: integral over depth of seconds per token
# (trapezoid over the measured depths).
print()
print("| prompt | dense prefill s (est.) | sparse prefill s (est.) | speedup |")
print("|---:|---:|---:|---:|")
ds = sorted(pp["dense"])
for n in ds[1:]:
    t = {}
    for m in ("dense", "sparse"):
        s = 0.0
        pts = [d for d in ds if d <= n]
        for lo, hi in zip(pts, pts[1:]):
            s += (hi - lo) * 0.5 * (1 / pp[m][lo]["tokens_per_s_mean"] + 1 / pp[m][hi]["tokens_per_s_mean"])
        t[m] = s
    print(f'| {n} | {t["dense"]:.0f} | {t["sparse"]:.0f} | {t["dense"] / t["sparse"]:.2f}x |')
PY
