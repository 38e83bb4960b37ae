#!/usr/bin/env bash
# Decode (tg) and prefill (pp) of one model file per weight type, each as a fraction of the
# read bandwidth measured in the same process (bench model --roofline: the better of the
# probes before and after the test), one markdown row per file.
#   bash bench/decode_types.sh BUILD_DIR MODEL.gguf ...
# Env: THREADS (2), REPS (3), NP (512), NG (128).
set -euo pipefail
B="$1/strata"
shift
THREADS=${THREADS:-2} REPS=${REPS:-3} NP=${NP:-512} NG=${NG:-128}
echo "| file | MiB | pp$NP t/s | tg$NG t/s | weights GB/s read in tg | read probe GB/s | tg / probe |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for m in "$@"; do
  "$B" bench model -m "$m" -t "$THREADS" -p "$NP" -n "$NG" -r "$REPS" --roofline -o json 2>/dev/null |
    python3 -c '
import json, os, sys
rows = {r["test"]: r for r in json.load(sys.stdin)}
m = sys.argv[1]
pp, tg = rows["pp" + sys.argv[2]], rows["tg" + sys.argv[3]]
print("| %s | %.0f | %.1f ± %.1f | %.1f ± %.1f | %.1f | %.1f | %.0f%% |" % (
    os.path.basename(m), os.path.getsize(m) / 2**20, pp["tokens_per_s_mean"], pp["tokens_per_s_std"],
    tg["tokens_per_s_mean"], tg["tokens_per_s_std"], tg["weight_gbps"], tg["read_gbps"],
    100 * tg["bandwidth_fraction"]))' "$m" "$NP" "$NG"
done
