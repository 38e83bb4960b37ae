#!/usr/bin/env bash
# Decode speed at long context with each KV cache type against bf16, in one run:
# interleaved rounds (bf16, q8_0, f16, ...), medians per type. The depth is filled with
# synthetic K/V (bench model -d), so no 32K-token prefill is needed.
# Usage: bench/kv_quant.sh [MODEL] [ROUNDS] [DEPTHS]
set -euo pipefail
BIN=${STRATA_BIN:-build/strata}
MODEL=${1:-/work/models/llama-1b-q4_0.gguf}
ROUNDS=${2:-3}
DEPTHS=${3:-16384,32768}
TYPES=${KV_TYPES:-bf16 q8_0}
out=$(mktemp -d)
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/Model name: *//p') load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" info "$MODEL" | grep "kv per token" || true
IFS=, read -ra ds <<<"$DEPTHS"
for r in $(seq "$ROUNDS"); do
  for t in $TYPES; do
    for d in "${ds[@]}"; do
      "$BIN" bench model -m "$MODEL" -t 2 -p 0 -n 32 -d "$d" --kv-type "$t" -o json \
        >"$out/$t.$d.$r.json" 2>/dev/null
    done
  done
done
python3 - "$out" <<'PY'
import json, glob, os, statistics, sys, re, collections
runs = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    t, d, _ = os.path.basename(f)[:-5].split(".")
    j = json.load(open(f))
    rows = j if isinstance(j, list) else j.get("results", [j])
    for row in rows:
        if row.get("n_gen", 0) > 0 or row.get("test", "").startswith("tg"):
            runs[(t, int(d))].append(row.get("tokens_per_s", row.get("tps", 0)))
print("| kv type | depth | tg tokens/s (median) | runs |")
print("|---|---:|---:|---:|")
for (t, d), v in sorted(runs.items(), key=lambda x: (x[0][1], x[0][0])):
    print(f"| {t} | {d} | {statistics.median(v):.2f} | {len(v)} |")
PY
rm -rf "$out"
