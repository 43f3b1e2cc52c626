#!/usr/bin/env bash
# Reproduces the ops e2e with a warm cache and runs its failing worker under cuda-gdb for a backtrace.
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=$(realpath bundle); logs=${OUT:-/tmp}
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64"; export PATH="$bundle/bin:$PATH"
c=/tmp/kd-dbg; rm -rf "$c" /tmp/kd-dbg-ops; mkdir -p "$c"
kdispatchd --cache-dir "$c" --socket "$c/s.sock" --metrics-listen off >"$logs/dbg-daemon.log" 2>&1 &
for _ in $(seq 50); do [[ -S $c/s.sock ]] && break; sleep 0.2; done
pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds 1 --max-candidates 10 --wall-seconds 60"
python3 tests/e2e/shim_ops_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --workdir /tmp/kd-dbg-ops \
  --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock >"$logs/dbg-ops.log" 2>&1
echo "ops rc=$?"
kdctl ls --cache-dir "$c" 2>&1 | head -20
env -u LD_PRELOAD /usr/local/cuda/bin/cuda-gdb -q -batch -ex "set pagination off" \
  -ex "set environment LD_PRELOAD=$bundle/lib/libkdispatch_cublas.so" -ex "set environment KD_CACHE_DIR=$c" \
  -ex "set environment KD_SOCKET=$c/s.sock" -ex "set environment KD_STATS=1" -ex run -ex bt -ex "info threads" \
  --args python3 tests/e2e/shim_ops_e2e.py --worker ops --out /tmp/kd-dbg-ops/x.pt >"$logs/dbg-gdb.log" 2>&1
grep -vE "^\[New Thread|^\[Thread .* exited|^\[Detaching" "$logs/dbg-gdb.log" | tail -60
