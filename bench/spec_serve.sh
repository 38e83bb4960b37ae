#!/usr/bin/env bash
# Speculation under concurrency through `strata serve` + `strata bench serve`
# (docs/BENCHMARKS.md "speculative decoding"): copy-heavy prompts on the induction-1b
# model, n-gram speculation (adaptive, and always-on) against none, at 1, 4 and 16
# requests in flight. Output throughput, median TPOT, acceptance from /metrics.
#   bench/spec_serve.sh [BUILD] [MODEL_DIR]   (bench/spec.sh makes the models)
set -euo pipefail
BUILD=${1:-build}
DIR=${2:-/tmp/strata-spec}
S=$BUILD/strata
PORT=${PORT:-18731}
DATA=$(mktemp /tmp/spec-serve-XXXX.jsonl)
python3 - "$DATA" <<'PY'
import json, random, sys
random.seed(3)
with open(sys.argv[1], "w") as f:
    for i in range(64):
        w = ['%02d' % n for n in range(100)]
        random.shuffle(w)
        f.write(json.dumps({"prompt": " ".join(w + w[:10]), "output_len": 96}) + "\n")
PY
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| spec | concurrency | output tok/s | median TPOT ms | drafted | accepted |"
echo "|---|---:|---:|---:|---:|---:|"
for spec in "none" "ngram --spec-adaptive on" "ngram --spec-adaptive off"; do
  # shellcheck disable=SC2086
  $S serve -m "$DIR/induction-1b.gguf" -t 2 --port "$PORT" --spec $spec --spec-k 8 2>/dev/null &
  pid=$!
  for _ in $(seq 1 120); do curl -sf "localhost:$PORT/health" >/dev/null && break; sleep 0.5; done
  for c in 1 4 16; do
    before=$(curl -s "localhost:$PORT/metrics")
    $S bench serve --base-url "http://127.0.0.1:$PORT" --dataset "$DATA" --num-prompts $((c * 3)) \
      --max-concurrency $c --ignore-eos --result-json /tmp/spec-serve.json >/dev/null 2>&1
    after=$(curl -s "localhost:$PORT/metrics")
    python3 - "$spec" "$c" "$before" "$after" <<'PY'
import json, sys
spec, c, before, after = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0
s = json.load(open("/tmp/spec-serve.json"))["summary"]
d = metric(after, "strata:spec_draft_tokens_total") - metric(before, "strata:spec_draft_tokens_total")
a = metric(after, "strata:spec_accepted_tokens_total") - metric(before, "strata:spec_accepted_tokens_total")
print(f"| {spec} | {c} | {s['output_throughput']:.1f} | {s['tpot_ms']['median']:.1f} | {d:.0f} | {a:.0f} |")
PY
  done
  kill $pid; wait $pid 2>/dev/null || true
done
rm -f "$DATA"
