#!/usr/bin/env bash
# Builds a relocatable bundle for a GPU machine that has the NVIDIA driver and the CUDA Toolkit
# (NVRTC, cuBLAS under /usr/local/cuda) but none of our Debian -dev packages:
#   bundle/bin    kdispatchd, kdctl, kdispatch-worker and every test executable (stripped)
#   bundle/lib    libkdispatch.so, libkdispatch_cublas.so and the non-system shared libraries
#                 they need (RPATH $ORIGIN, so each finds its neighbours)
#   bundle/tests  a CTestTestfile.cmake with every test and its labels, run by run-gpu-tests.sh
#   bundle/share  shape lists, the repository's test scripts and data
# Usage: tools/dev/make-bundle.sh [BUILD_DIR] [BUNDLE_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bundle=${2:-bundle}

tools/dev/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKD_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)"

rm -rf "$bundle"
mkdir -p "$bundle"/{bin,lib,tests,share}
cmake --install "$build" --prefix "$bundle" >/dev/null
python3 tools/dev/bundle_tests.py "$build" "$bundle"
python3 tools/dev/bundle_libs.py "$bundle"
cp -r tests/data "$bundle/share/test-data" 2>/dev/null || true
cp -r tests/e2e "$bundle/share/e2e" 2>/dev/null || true
du -sh "$bundle"
