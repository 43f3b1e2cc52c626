#!/usr/bin/env bash
# Builds a relocatable bundle for a GPU machine that has the NVIDIA driver and the CUDA Toolkit
# (NVRTC, cuBLAS under /usr/local/cuda) but none of our Debian -dev packages:
#   bundle/bin    kdispatchd, kdctl, kdispatch-worker, benchmarks and every test executable (stripped),
#                 redis-server (the remote-gpu stage's Redis)
#   bundle/lib    libkdispatch.so, libkdispatch_cublas.so and the non-system shared libraries
#                 they need (RPATH $ORIGIN, so each finds its neighbours)
#   bundle/tests  CTestTestfile.cmake.in: every bundled test with its labels (run-gpu-tests.sh)
#   bundle/share  shape lists, the e2e scripts
# Usage: tools/dev/make-bundle.sh [BUILD_DIR] [BUNDLE_DIR]
# KD_BUNDLE_TARGETS="t1 t2 ..." builds only those targets (default: all) and bundles only the test
# executables among them; tests whose executable was not built are left out of the bundle and listed.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bundle=${2:-bundle}

tools/dev/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKD_WERROR=ON >/dev/null
if [[ -n "${KD_BUNDLE_TARGETS:-}" ]]; then
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$(nproc)" --target ${KD_BUNDLE_TARGETS}
else
  cmake --build "$build" -j "$(nproc)"
fi

rm -rf "$bundle"
mkdir -p "$bundle"/{bin,lib,tests,share/kdispatch}
for exe in kdispatchd kdctl kdispatch-worker bench_registry_host bench_registry_launch bench_daemon_load bench_key; do
  f="$build/bin/$exe"  # where the build puts the programs; benchmarks live with their tests
  [[ -x $f ]] || f=$(find "$build" -type f -name "$exe" -perm -u+x | head -n 1)
  [[ -n "$f" ]] && cp "$f" "$bundle/bin/"
done
# The fleet's Redis for the remote-gpu stage (device-run.sh): the GPU machine has no Debian
# packages; bundle_libs.py adds the libraries it needs that the bundle lacks (jemalloc, lzf, ...).
# /usr/bin/redis-server links to redis-check-rdb, which acts by the name it was started under.
if [[ -x /usr/bin/redis-server ]]; then cp -L /usr/bin/redis-server "$bundle/bin/redis-server"; fi
find "$build" -name 'libkdispatch*.so*' \( -type f -o -type l \) -exec cp -P {} "$bundle/lib/" \;
python3 tools/dev/bundle_tests.py "$build" "$bundle"
python3 tools/dev/bundle_libs.py "$bundle"
cp -r tools/shapes "$bundle/share/kdispatch/shapes"
cp -r tests/e2e "$bundle/share/e2e" 2>/dev/null || true
du -sh "$bundle"
