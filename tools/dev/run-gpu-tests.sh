#!/usr/bin/env bash
# Runs tests from a bundle (tools/dev/make-bundle.sh) on a GPU machine.
# Usage: tools/dev/run-gpu-tests.sh [BUNDLE_DIR] [ctest label regex, default gpu]
# On a machine with a GPU a skipped test is a failure: it means the GPU was not usable.
# Logs go to $OUT (the device tool's folder) when set, else to BUNDLE_DIR/logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/dev/device-common.sh
use_bundle "${1:-bundle}"
label=${2:-gpu}
logs=${OUT:-$bundle/logs}
tag=${label//[^A-Za-z0-9]/_}
mkdir -p "$logs"

# Tests that read repository files (shape lists) find them through KD_SOURCE_DIR: this checkout.
sed -e "s|@KD_BUNDLE@|$bundle|g" -e "s|@KD_SOURCE@|$(pwd)|g" "$bundle/tests/CTestTestfile.cmake.in" \
  >"$bundle/tests/CTestTestfile.cmake"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$logs/gpu.txt"
"$bundle/bin/kdctl" devices | tee -a "$logs/gpu.txt"

# KD_CTEST_VERBOSE=1 keeps passing tests' output too (the tables and numbers they print).
ctest --test-dir "$bundle/tests" -L "$label" --output-on-failure ${KD_CTEST_VERBOSE:+-V} --timeout 900 \
  --output-junit "$logs/ctest-$tag.xml" 2>&1 | tee "$logs/ctest-$tag.log"
rc=${PIPESTATUS[0]}
if grep -q "(Skipped)" "$logs/ctest-$tag.log" && nvidia-smi -L >/dev/null 2>&1; then
  echo "run-gpu-tests: tests were skipped on a machine with a GPU: treating as failure" >&2
  rc=1
fi
exit "$rc"
