#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a bounded time on
# a seed corpus made from ../shared: the tokenizer on the vocab test strings, the
# template engine on the real chat templates. Any crash or sanitizer report fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${STRATA_SHARED:-$(cd .. && pwd)/shared}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
OUT=${FUZZ_BUILD:-build-fuzz}
mkdir -p "$OUT"
CXX=${FUZZ_CXX:-clang++}
FLAGS=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Isrc)

echo "fuzz: building targets with $CXX"
$CXX "${FLAGS[@]}" tests/fuzz/tokenizer_fuzz.cpp src/tokenizer/*.cpp src/gguf/*.cpp src/core/*.cpp \
  -lpcre2-8 -o "$OUT/tokenizer_fuzz" &
$CXX "${FLAGS[@]}" tests/fuzz/chat_template_fuzz.cpp src/chat_template/*.cpp src/core/*.cpp \
  -o "$OUT/chat_template_fuzz" &
wait %1 && wait %2

rm -rf "$OUT/corpus-tok" "$OUT/corpus-tpl"
mkdir -p "$OUT/corpus-tok" "$OUT/corpus-tpl"
# One seed per vocab test string (first byte selects the vocabulary and flags).
i=0
for f in "$SHARED"/vocab/*.inp; do
  python3 - "$f" "$OUT/corpus-tok" "$i" <<'PY'
import sys
text = open(sys.argv[1], 'rb').read().split(b'\n__ggml_vocab_test__\n')
for n, t in enumerate(text[:-1]):
    open(f"{sys.argv[2]}/{sys.argv[3]}_{n}", 'wb').write(bytes([n % 256]) + t)
PY
  i=$((i + 1))
done
cp "$SHARED"/templates/*.jinja "$OUT/corpus-tpl/"

vocabs=$(ls "$SHARED"/vocab/*.gguf | paste -sd: -)
echo "fuzz: tokenizer for ${SECONDS_PER_TARGET}s"
STRATA_FUZZ_VOCAB="$vocabs" "$OUT/tokenizer_fuzz" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=4096 \
  -print_final_stats=1 "$OUT/corpus-tok" 2>"$OUT/tokenizer_fuzz.log" || { tail -50 "$OUT/tokenizer_fuzz.log"; exit 1; }
grep -E "stat::number_of_executed_units|Done" "$OUT/tokenizer_fuzz.log" | tail -2
echo "fuzz: chat template for ${SECONDS_PER_TARGET}s"
"$OUT/chat_template_fuzz" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=4096 -max_len=16384 \
  -print_final_stats=1 "$OUT/corpus-tpl" 2>"$OUT/chat_template_fuzz.log" || { tail -50 "$OUT/chat_template_fuzz.log"; exit 1; }
grep -E "stat::number_of_executed_units|Done" "$OUT/chat_template_fuzz.log" | tail -2
echo "fuzz: no crashes"
