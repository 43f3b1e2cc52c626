#!/usr/bin/env bash
# README command 2 (and all that .ci/run does): install dependencies, build with warnings as
# errors, run the whole test suite. GPU tests report as skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/dev/install-deps.sh
build=${KD_BUILD_DIR:-build}
jobs=${KD_JOBS:-$(nproc)}
# -O1: the suite checks behaviour, not speed (benchmarks and GPU timings use Release builds), and
# the JSON-heavy sources compile in about 60% of their -O2 time (CI has 2 cores and 15 minutes); the
# suite's own sources at -O0 (KD_TESTS_O0, tests/CMakeLists.txt).
# No -g: debug information was about 30% of the suite's compile time; debug a failure in a build
# of your own (RelWithDebInfo, the default build type).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DKD_WERROR=ON -DKD_TESTS_O0=ON
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 600
