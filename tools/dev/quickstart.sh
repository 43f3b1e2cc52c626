#!/usr/bin/env bash
# README command 1: install, build, start kdispatchd on a cache directory, prewarm the bundled
# example shape list and print the per-shape table.
# Usage: tools/dev/quickstart.sh [CACHE_DIR]   (default ./kdcache)
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/dev/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
cmake --install build --prefix build/install >/dev/null
bin=build/install/bin

if ! "$bin/kdctl" devices; then
  echo "kdispatch: built, but this machine has no usable GPU; the main job (tuning GEMMs) needs one." >&2
  exit 4
fi

if ! "$bin/kdispatchd" --version >/dev/null || ! "$bin/kdctl" prewarm --help >/dev/null 2>&1; then
  echo "kdispatch: built; the main job cannot run yet: kdispatchd and 'kdctl prewarm' are not" \
       "implemented in this version (see the open issues)." >&2
  exit 1
fi

cache=${1:-kdcache}
mkdir -p "$cache"
"$bin/kdispatchd" --cache-dir "$cache" --socket "$cache/kdispatch.sock" --daemonize
trap '"$bin/kdctl" --socket "$cache/kdispatch.sock" shutdown >/dev/null 2>&1 || true' EXIT
"$bin/kdctl" --socket "$cache/kdispatch.sock" prewarm tools/shapes/example.txt
