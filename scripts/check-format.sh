#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (.clang-format) makes of
# it; `make format` rewrites them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2> /tmp/strata-format.$$; then
  grep -E "^[^ ].*(warning|error):" /tmp/strata-format.$$ | head -40
  echo "check-format: $(grep -c 'warning:' /tmp/strata-format.$$) lines differ from clang-format; run 'make format'" >&2
  rm -f /tmp/strata-format.$$
  exit 1
fi
rm -f /tmp/strata-format.$$
echo "check-format: ${#files[@]} files clean"
