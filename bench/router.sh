#!/usr/bin/env bash
# "Routing pays" (docs/BENCHMARKS.md, docs/ROUTER.md): strata router over 3 loopback
# strata serve replicas (-t 1 each) of a random-weight model whose 1K-token prefill
# dominates a 16-token answer.
#   1. shared documents (DOCS x ASKS requests, shuffled): round-robin vs prefix
#   2. one popular document (POPULAR share of requests): prefix --load-factor 1.25 vs inf
#   3. faults under load (prefix): kill -9 of a replica mid-run and its return, then
#      SIGTERM of a replica (strata serve drains)
# One JSON line per run in OUT/summary.jsonl; every run is bounded by a timeout.
#   bench/router.sh [MODEL.gguf] [OUT_DIR]
set -euo pipefail
bin=${STRATA:-build/strata}
model=${1:-/work/models/router-tiny256.gguf}
out=${2:-bench-out/router}
docs=${DOCS:-24}
asks=${ASKS:-8}
# Each replica's KV pool: ~1/3 of the documents beside the running requests, so the
# aggregate prefix cache is large enough only when the documents are partitioned.
kv_tokens=${KV_TOKENS:-16384}
runs=${RUNS:-"shared popular faults"}
conc=${CONCURRENCY:-6}
popular=${POPULAR:-0.5}
base=${PORT:-18300}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ -f "$model" ] || "$bin" make-model "$model" --preset tiny-256 --ctx 4096 --seed 3
python3 "$here/router_dataset.py" --docs "$docs" --asks "$asks" "$out/shared.jsonl"
python3 "$here/router_dataset.py" --docs "$docs" --asks "$asks" --popular-share "$popular" \
  --seed 2 "$out/popular.jsonl"
python3 "$here/router_dataset.py" --docs "$docs" --asks "$asks" --seed 3 "$out/faults.jsonl"

declare -a rep_pid
rport() { echo $((base + 1 + $1)); }
rurl() { echo "http://127.0.0.1:$(rport "$1")"; }
router_port=$base
router_url="http://127.0.0.1:$router_port"
router_pid=""
sampler_pid=""

start_replica() {
  "$bin" serve -m "$model" -t 1 --port "$(rport "$1")" --kv-cache-tokens "$kv_tokens" --max-seqs 16 \
    --shutdown-timeout 30 > "$out/replica$1.log" 2>&1 &
  rep_pid[$1]=$!
}
wait_up() {
  for _ in $(seq 1 200); do
    curl -sf "$1/health" > /dev/null && return 0
    sleep 0.1
  done
  echo "not healthy: $1" >&2
  return 1
}
stop_all() {
  [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null || true
  [ -n "$router_pid" ] && kill "$router_pid" 2>/dev/null || true
  for p in "${rep_pid[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  sampler_pid=""
  router_pid=""
  rep_pid=()
}
trap stop_all EXIT

# Fresh replicas (empty prefix caches) and a router for each run.
setup() {  # POLICY LOAD_FACTOR
  stop_all
  for i in 0 1 2; do start_replica $i; done
  for i in 0 1 2; do wait_up "$(rurl $i)"; done
  # Page the weights in on each replica (a prompt unlike the documents).
  for i in 0 1 2; do
    curl -sf "$(rurl $i)/v1/completions" -d '{"prompt":"warm up","max_tokens":2}' > /dev/null
  done
  "$bin" router --replica "$(rurl 0)" --replica "$(rurl 1)" --replica "$(rurl 2)" \
    -m "$model" --policy "$1" --load-factor "$2" --cooldown 2 --port "$router_port" \
    > "$out/router-$run.log" 2>&1 &
  router_pid=$!
  wait_up "$router_url"
  python3 "$here/router_probe.py" sample "$router_url" "$out/$run.samples.jsonl" &
  sampler_pid=$!
}
bench() {  # DATASET
  local n
  n=$(wc -l < "$1")
  timeout 300 "$bin" bench serve --base-url "$router_url" --model-path "$model" --dataset "$1" \
    --num-prompts "$n" --max-concurrency "$conc" --ignore-eos --timeout 60 ${BENCH_FLAGS:-} \
    --result-json "$out/$run.json" > "$out/$run.txt" 2>&1
}
summary() {
  python3 "$here/router_probe.py" summary "$run" "$out/$run.json" "$router_url" \
    "$out/$run.samples.jsonl" "$(rurl 0)" "$(rurl 1)" "$(rurl 2)" | tee -a "$out/summary.jsonl"
}

: > "$out/summary.jsonl"
echo "nproc $(nproc); loadavg before: $(cat /proc/loadavg)" | tee "$out/machine.txt"
has() { [[ " $runs " == *" $1 "* ]]; }
has shared && for pl in "round-robin 1.25" "prefix 1.25"; do
  set -- $pl
  run="shared-$1"
  setup "$1" "$2"
  bench "$out/shared.jsonl"
  summary
done
has popular && for lf in 1.25 inf; do
  run="popular-lf$lf"
  setup prefix "$lf"
  bench "$out/popular.jsonl"
  summary
done

has faults || exit 0
# kill -9 of replica 0 two seconds in; it comes back (same port) three seconds later.
run="fault-kill9"
setup prefix 1.25
bench "$out/faults.jsonl" &
bench_pid=$!
sleep 2
kill -9 "${rep_pid[0]}"
t_kill=$(date +%s.%N)
eject_s=$(python3 "$here/router_probe.py" wait "$router_url/metrics" \
  "strata_router_replica_up{replica=\"$(rurl 0)\"}" 0 15)
sleep 3
start_replica 0
wait_up "$(rurl 0)"
readmit_s=$(python3 "$here/router_probe.py" wait "$router_url/metrics" \
  "strata_router_replica_up{replica=\"$(rurl 0)\"}" 1 15)
wait "$bench_pid" && bench_rc=0 || bench_rc=$?
echo "{\"run\": \"$run\", \"eject_after_kill_s\": \"$eject_s\", \"readmit_after_restart_s\": \"$readmit_s\", \"bench_rc\": $bench_rc}" |
  tee -a "$out/summary.jsonl"
summary

# SIGTERM of replica 1 two seconds in: it stops accepting, finishes what it runs, exits.
run="fault-sigterm"
setup prefix 1.25
bench "$out/faults.jsonl" &
bench_pid=$!
sleep 2
kill -TERM "${rep_pid[1]}"
wait "$bench_pid" && bench_rc=0 || bench_rc=$?
term_rc=0
wait "${rep_pid[1]}" || term_rc=$?
echo "{\"run\": \"$run\", \"bench_rc\": $bench_rc, \"replica_exit\": $term_rc}" |
  tee -a "$out/summary.jsonl"
summary
echo "loadavg after: $(cat /proc/loadavg)" | tee -a "$out/machine.txt"
