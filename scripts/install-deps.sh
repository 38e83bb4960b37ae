#!/usr/bin/env bash
# Installs every Debian bookworm package that strata's build, tests and tools need.
# Idempotent: packages already present are not reinstalled, and `apt-get update`
# runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libpcre2-dev libxxhash-dev
  libspdlog-dev libfmt-dev libboost-dev libucx-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The official openai Node.js client that the http_openai_client test drives
# (tests/http/node, versions pinned by its package-lock.json). Node.js 20 and npm
# come with the machine; without them that test fails, so say so loudly here.
node_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/http/node"
if [ ! -f "$node_dir/package.json" ]; then
  :  # no Node.js tests in this checkout
elif [ -d "$node_dir/node_modules/openai" ]; then
  echo "install-deps: npm packages of tests/http/node present"
elif command -v npm >/dev/null 2>&1; then
  echo "install-deps: npm ci in tests/http/node"
  (cd "$node_dir" && npm ci --no-audit --no-fund)
else
  echo "install-deps: WARNING: npm not found; the http_openai_client test will fail" >&2
fi
