#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; tests/fuzz/fuzz.mk) and runs each for
# a bounded time on a seed corpus made from ../shared:
#   tokenizer_fuzz      the vocab test strings, on the real vocabularies
#   chat_template_fuzz  the real chat templates
#   http_request_fuzz   HTTP requests for every route (tests/fuzz/make_http_corpus.py),
#                       through the request parsing up to RequestOptions
#   gguf_file_fuzz      whole GGUF files: cut real vocabularies, tiny models of each
#                       architecture and type (tests/fuzz/make_gguf_corpus.py), and the
#                       converted aidreams260K model when build/strata exists
# Any crash, sanitizer report, leak or timeout fails. docs/FUZZING.md has the details.
#
# Environment: FUZZ_SECONDS (seconds per target; default 40-70 per target, about four
# minutes in all), FUZZ_TARGETS (a subset, space-separated), FUZZ_BUILD (build-fuzz),
# FUZZ_KEEP_CORPUS=1 (keep and grow $FUZZ_BUILD/corpus-NAME across runs, as `make fuzz`
# does), FUZZ_JOBS (parallel compiles, 2), FUZZ_CXX (clang++), STRATA_SHARED.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${STRATA_SHARED:-$(cd .. && pwd)/shared}
OUT=${FUZZ_BUILD:-build-fuzz}
TARGETS=${FUZZ_TARGETS:-tokenizer chat_template http_request gguf_file}
mkdir -p "$OUT"

echo "fuzz: building targets with ${FUZZ_CXX:-clang++}"
make -s -f tests/fuzz/fuzz.mk -j "${FUZZ_JOBS:-2}" OUT="$OUT" FUZZ_CXX="${FUZZ_CXX:-clang++}" \
  $(for t in $TARGETS; do echo "$OUT/${t}_fuzz"; done)

# ---- seed corpora (regenerated each run, in $OUT/seeds-NAME) ----
seeds() { rm -rf "$OUT/seeds-$1" && mkdir -p "$OUT/seeds-$1" && echo "$OUT/seeds-$1"; }

seed_tokenizer() {
  local dir i=0 f
  dir=$(seeds tokenizer)
  # One seed per vocab test string (first byte selects the vocabulary and flags).
  for f in "$SHARED"/vocab/*.inp; do
    python3 - "$f" "$dir" "$i" <<'PY'
import sys
text = open(sys.argv[1], 'rb').read().split(b'\n__ggml_vocab_test__\n')
for n, t in enumerate(text[:-1]):
    open(f"{sys.argv[2]}/{sys.argv[3]}_{n}", 'wb').write(bytes([n % 256]) + t)
PY
    i=$((i + 1))
  done
}
seed_chat_template() { cp "$SHARED"/templates/*.jinja "$(seeds chat_template)/"; }
seed_http_request() { python3 tests/fuzz/make_http_corpus.py "$(seeds http_request)"; }
seed_gguf_file() {
  local dir model=()
  dir=$(seeds gguf_file)
  # The real model, converted by the CLI when it is built (CI builds it in `make test`).
  if [[ -x build/strata && -f "$SHARED/models/aidreams260K.bin" ]]; then
    if [[ ! -f "$OUT/aidreams260K.gguf" ]]; then
      local log
      log=$(build/strata convert llama2c "$SHARED/models/aidreams260K.bin" \
        "$SHARED/models/aidreams260K.tok512.bin" "$OUT/aidreams260K.gguf" 2>&1) ||
        { echo "$log" >&2; exit 1; }
    fi
    model=(--model "$OUT/aidreams260K.gguf")
  fi
  python3 tests/fuzz/make_gguf_corpus.py "$dir" "$SHARED"/vocab/*.gguf "${model[@]}"
  # One whole real vocabulary (the smallest), as shipped.
  cp "$SHARED/vocab/ggml-vocab-llama-spm.gguf" "$dir/"
}

# ---- per-target settings ----
vocabs=$(ls "$SHARED"/vocab/*.gguf | paste -sd: -)
declare -A DEFAULT_SECONDS=([tokenizer]=50 [chat_template]=50 [http_request]=70 [gguf_file]=70)
declare -A ARGS=(
  [tokenizer]="-rss_limit_mb=4096"
  [chat_template]="-rss_limit_mb=4096 -max_len=16384"
  [http_request]="-rss_limit_mb=4096 -max_len=65536 -dict=tests/fuzz/http.dict"
  [gguf_file]="-rss_limit_mb=4096 -timeout=30 -dict=tests/fuzz/gguf.dict"
)

run_target() {
  local name=$1 secs=${FUZZ_SECONDS:-${DEFAULT_SECONDS[$1]}} corpus="$OUT/corpus-$1"
  local log="$OUT/${1}_fuzz.log" extra=()
  "seed_$name"
  [[ ${FUZZ_KEEP_CORPUS:-0} == 1 ]] || rm -rf "$corpus"
  mkdir -p "$corpus"
  if [[ $name == gguf_file ]]; then
    # Whole files: the largest seed must fit.
    extra=(-max_len="$(find "$OUT/seeds-$name" "$corpus" -type f -printf '%s\n' | sort -n | tail -1)")
  fi
  echo "fuzz: $name for ${secs}s"
  # shellcheck disable=SC2086  # ARGS holds several flags
  local vocab=$vocabs
  # The request path: a sentencepiece vocabulary with ChatML, a BPE one with a real template.
  [[ $name == http_request ]] && vocab="$SHARED/vocab/ggml-vocab-llama-spm.gguf:$SHARED/vocab/ggml-vocab-gpt-2.gguf"
  if ! STRATA_FUZZ_VOCAB="$vocab" \
    STRATA_FUZZ_TEMPLATE=":$SHARED/templates/Qwen-Qwen2.5-7B-Instruct.jinja" \
    "$OUT/${name}_fuzz" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="$OUT/crash-$name-" ${ARGS[$name]} "${extra[@]}" \
    "$corpus" "$OUT/seeds-$name" 2>"$log"; then
    tail -60 "$log"
    echo "fuzz: $name FAILED (log: $log; reproduce: $OUT/${name}_fuzz $OUT/crash-$name-*)" >&2
    exit 1
  fi
  grep -E "^#[0-9]+.*(DONE|cov:)" "$log" | tail -1
  grep -E "stat::number_of_executed_units" "$log" | tail -1
}

for t in $TARGETS; do run_target "$t"; done
echo "fuzz: no crashes"
