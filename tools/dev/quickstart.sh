#!/usr/bin/env bash
# README command 1: install, build, start kdispatchd on a cache directory, prewarm the bundled
# example shape list with the builtin proposer and print the per-shape table.
# Usage: tools/dev/quickstart.sh [CACHE_DIR]   (default ./kdcache)
# KD_QUICKSTART_BIN=DIR uses already-built kdispatchd/kdctl/kdispatch-worker from DIR (a bundle's
# bin/) instead of building.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ -n "${KD_QUICKSTART_BIN:-}" ]]; then
  bin=$KD_QUICKSTART_BIN
else
  tools/dev/install-deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$(nproc)" --target kdispatchd kdctl kdispatch-worker
  cmake --install build --prefix build/install >/dev/null
  bin=build/install/bin
fi

if ! "$bin/kdctl" devices; then
  echo "kdispatch: built, but this machine has no usable GPU; the main job (tuning GEMMs) needs one." >&2
  exit 4
fi

cache=$(realpath -m "${1:-kdcache}")
mkdir -p "$cache"
socket="$cache/kdispatch.sock"
"$bin/kdispatchd" --cache-dir "$cache" --socket "$socket" --metrics-listen off >"$cache/kdispatchd.log" 2>&1 &
daemon=$!
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -S $socket ]] && break; sleep 0.2; done
if [[ ! -S $socket ]]; then
  echo "kdispatch: kdispatchd did not start; its log:" >&2
  cat "$cache/kdispatchd.log" >&2
  exit 1
fi
echo "kdispatchd running on $socket (log: $cache/kdispatchd.log)"
"$bin/kdctl" prewarm tools/shapes/example.txt --socket "$socket" --cache-dir "$cache" \
  --rounds "${KD_QUICKSTART_ROUNDS:-2}" --max-candidates "${KD_QUICKSTART_CANDIDATES:-24}" \
  --wall-seconds "${KD_QUICKSTART_WALL_SECONDS:-180}"
