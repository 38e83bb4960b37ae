#!/usr/bin/env bash
# A soak of `strata serve` under mixed load: serves the converted aidreams260K model
# (../shared/models) on a free port and runs bench/soak.py against it for SOAK_SECONDS
# (default 600): streaming and non-streaming completions and chat, clients that
# disconnect mid-stream and mid-request, prompts near the context limit, bad requests,
# concurrent /health probes; RSS and KV usage sampled every few seconds. Fails on any
# 5xx, a server crash, or KV usage that does not return to its start when idle; then
# stops the server with SIGTERM and fails if it does not exit 0.
#
# Environment: STRATA (build/strata), SOAK_SECONDS (600), SOAK_CLIENTS (6), SOAK_OUT
# (build/soak: model, server log, samples.csv), SOAK_SERVE_ARGS (extra `strata serve`
# flags), STRATA_SHARED (../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${STRATA_SHARED:-$(cd .. && pwd)/shared}
STRATA=${STRATA:-build/strata}
OUT=${SOAK_OUT:-build/soak}
SECONDS_TOTAL=${SOAK_SECONDS:-600}
MAX_BODY=262144
mkdir -p "$OUT"
[[ -x $STRATA ]] || { echo "soak: $STRATA not found; build it first (make build)" >&2; exit 2; }

MODEL="$OUT/aidreams260K.gguf"
if [[ ! -f $MODEL ]]; then
  "$STRATA" convert llama2c "$SHARED/models/aidreams260K.bin" \
    "$SHARED/models/aidreams260K.tok512.bin" "$MODEL" >/dev/null
fi

LOG="$OUT/server.log"
# shellcheck disable=SC2086  # SOAK_SERVE_ARGS holds several flags
"$STRATA" serve -m "$MODEL" --port 0 --max-body-bytes "$MAX_BODY" ${SOAK_SERVE_ARGS:-} \
  >"$LOG" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true' EXIT
URL=
for _ in $(seq 1 300); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" | head -1 | sed 's/listening on //') || true
  [[ -n $URL ]] && break
  kill -0 "$PID" 2>/dev/null || { cat "$LOG" >&2; echo "soak: the server did not start" >&2; exit 1; }
  sleep 0.1
done
[[ -n $URL ]] || { echo "soak: no 'listening on' line in $LOG" >&2; exit 1; }
for _ in $(seq 1 300); do
  curl -sf "$URL/health" >/dev/null 2>&1 && break
  sleep 0.1
done
echo "soak: strata serve pid $PID at $URL for ${SECONDS_TOTAL}s ($(lscpu | sed -n 's/^Model name: *//p'))"

rc=0
python3 bench/soak.py --url "$URL" --pid "$PID" --seconds "$SECONDS_TOTAL" \
  --clients "${SOAK_CLIENTS:-6}" --max-body-bytes "$MAX_BODY" --csv "$OUT/samples.csv" || rc=$?

# A clean shutdown after the soak is part of the check.
kill -TERM "$PID"
src=0
wait "$PID" || src=$?
trap - EXIT
if [[ $src -ne 0 ]]; then
  echo "soak: strata serve exited $src after SIGTERM (log: $LOG)" >&2
  tail -20 "$LOG" >&2
  rc=1
fi
# The server's own view (its access log): statuses the clients never saw, such as 499
# (client gone), and any 5xx answered to a client that had already left.
echo "soak: server access log statuses: $(grep -o ' [0-9][0-9][0-9] remote=' "$LOG" |
  awk '{print $1}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
n5xx=$(grep -c ' 5[0-9][0-9] remote=' "$LOG" || true)
if [[ $n5xx -ne 0 ]]; then
  echo "soak: the server logged $n5xx responses 5xx:" >&2
  grep ' 5[0-9][0-9] remote=' "$LOG" | head -5 >&2
  rc=1
fi
echo "soak: samples in $OUT/samples.csv, server log in $LOG"
exit $rc
