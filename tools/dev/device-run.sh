#!/usr/bin/env bash
# One device call: runs the named stages from a bundle and prints a short summary last.
# Usage: tools/dev/device-run.sh BUNDLE STAGE...   stages: gpu-tests bench-registry search6 lab:FILE:CFG
# Logs go to $OUT (the device tool's folder) or BUNDLE/logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=$(realpath "$1"); shift
logs=${OUT:-$bundle/logs}
mkdir -p "$logs"
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$bundle/bin:$PATH"
summary=()
for stage in "$@"; do
  case "$stage" in
    gpu-tests)
      tools/dev/run-gpu-tests.sh "$bundle" gpu >"$logs/gpu-tests.log" 2>&1; rm -f "$logs"/ctest-gpu.xml
      summary+=("gpu-tests rc=$?: $(grep -E 'tests passed|tests failed' "$logs/gpu-tests.log" | tail -1)")
      ;;
    bench-registry)
      bench_registry_launch --benchmark_min_time=0.2 >"$logs/bench-registry.log" 2>&1
      summary+=("bench-registry rc=$?")
      ;;
    search6)
      : >"$logs/search6.log"
      while read -r key; do
        echo "=== $key" >>"$logs/search6.log"
        kdctl search --key "$key" --rounds 2 --ideas 2 --impls 1 --topk 2 --cache-dir /tmp/kd-search-cache \
          >>"$logs/search6.log" 2>&1
        echo "rc=$?" >>"$logs/search6.log"
      done <tools/dev/search6.txt
      summary+=("search6 done")
      ;;
    lab:*)
      IFS=: read -r _ src cfg <<<"$stage"
      (cd tools/dev && PYTHONUNBUFFERED=1 python3 kernel_lab.py "$src" "$cfg" --out /tmp/lab) >"$logs/lab-$(basename "$cfg" .json).log" 2>&1
      summary+=("lab $cfg rc=$?")
      ;;
    *) echo "device-run: unknown stage $stage" >&2; exit 2 ;;
  esac
done
for f in "$logs"/gpu-tests.log; do [[ -f $f ]] && grep -E "Rejection|^\| |^[a-z_0-9]+ +\| " "$f" | head -40; done
[[ -f $logs/bench-registry.log ]] && grep -E "^BM_|^Bench|ns " "$logs/bench-registry.log" | head -20
[[ -f $logs/search6.log ]] && grep -E "^=== |^winner|^kept|^stopped|^rc=" "$logs/search6.log"
for f in "$logs"/lab-*.log; do [[ -f $f ]] && grep -A30 "^dtype" "$f" | cut -c1-150; done
printf '%s\n' "${summary[@]}"
