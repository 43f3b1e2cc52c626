#!/usr/bin/env bash
# One device call: runs the named stages from a bundle and prints a short summary last.
# Usage: tools/dev/device-run.sh BUNDLE STAGE...
# stages: gpu-tests gate-table tma-gate bench-registry search6 search-tc quickstart e2e e2e-decode validate bench-verify
#         fullfile[:SHAPES] lab:FILE:CFG multi-gpu-prewarm[:one|:all] remote-gpu search-duty
#         e2e-variable e2e-train e2e-tf32 e2e-rows torch-overrides
# multi-gpu-prewarm: kdctl prewarm of a shape list on one GPU, then on every GPU, timed, with a
# worker killed mid-way (tools/dev/device-multi-gpu.sh; KD_MG_* budgets). remote-gpu: two daemons
# sharing the bundle's redis-server (tools/dev/device-remote-gpu.sh; KD_RG_*). search-duty: an
# application's step time while miss-started searches run beside it, per duty cycle
# (tools/dev/device-search-duty.sh; KD_SD_*).
# e2e-variable: issue 29's targets (tests/e2e/shim_variable_tokens_e2e.py): a BERT-style fp32 encoder over variable
# batches and a graph-captured decode over vLLM's capture sizes (daemon buckets: default; KD_E2E_DECODE_BUCKETS=vllm
# for one bucket per capture size), each
# prewarmed with its recorded n merged into buckets; KD_E2E_* budgets, KD_E2E_VAR_TARGETS (bert,decode).
# e2e-train: issue 30's workload (tests/e2e/shim_fp32_training_e2e.py): forward and backward of a small fp32
# transformer (TF32 off) plain and preloaded, after a real kdispatchd prewarmed what the empty-cache run recorded;
# ms per step both ways, loss and gradients compared; KD_E2E_* budgets, KD_E2E_TRAIN_ARGS (extra script options).
# e2e-tf32: issue 30's TF32 class (tests/e2e/shim_tf32_e2e.py): torch.mm of KD_E2E_TF32_SIZE^3 (4096) in the four
# layouts with TF32 allowed, plain and preloaded after a real kdispatchd prewarmed the recorded keys; KD_E2E_* budgets.
# e2e-rows: issue 33's workloads (tests/e2e/rows_e2e.py): BERT and a bf16 decode loop with layer norm, softmax and
# RMSNorm routed through python/'s kdispatch.torch on top of the shim, against the shim alone and plain torch;
# KD_E2E_* budgets. torch-overrides: tests/e2e/torch_overrides_check.py (kdispatch.torch's uncovered calls and
# fallbacks against torch's own kernels, both override modes).
# tma-gate: the wg_tma trial family's seeds through the validation gate (GpuEvalBuiltin), with times.
# KDISPATCH_TRIAL_FAMILIES=wg_tma in the environment lets fullfile's daemon seed the trial family.
# fullfile: a real kdispatchd tunes tools/shapes/llama3-8b.txt (issue 6's file; fullfile:SHAPES another
# list, its logs named full-NAME-*) through kdctl prewarm
# with per-shape budgets (KD_FULL_ROUNDS, KD_FULL_CANDIDATES, KD_FULL_WALL; KD_FULL_PROPOSER adds
# proposers to builtin, e.g. cublaslt), then kdctl bench times
# every shape (cuBLAS, tuned, roofline) in one run and draws the chart.
# Logs go to $OUT (the device tool's folder) or BUNDLE/logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/dev/device-common.sh
use_bundle "$1"; shift
logs=${OUT:-$bundle/logs}
mkdir -p "$logs"
summary=()
# e2e_daemon NAME [FLAG...]: a kdispatchd on a fresh cache /tmp/kd-NAME (sets c and dpid), its log
# $logs/NAME-daemon.log; returns once its socket is up. The e2e stages and fullfile start theirs so.
e2e_daemon() {
  local name=$1
  shift
  c=/tmp/kd-$name
  rm -rf "$c"
  mkdir -p "$c"
  kdispatchd --cache-dir "$c" --socket "$c/s.sock" --metrics-listen off "$@" >"$logs/$name-daemon.log" 2>&1 &
  dpid=$!
  for _ in $(seq 50); do [[ -S $c/s.sock ]] && break; sleep 0.2; done
}
# search_list NAME N: `kdctl search` (N rounds, N ideas) of every key in tools/dev/NAME.txt, one after
# the other into /tmp/kd-search-cache; the log $logs/NAME.log.
search_list() {
  local name=$1 effort=$2
  : >"$logs/$name.log"
  while read -r key; do
    echo "=== $key" >>"$logs/$name.log"
    kdctl search --key "$key" --rounds "$effort" --ideas "$effort" --impls 1 --topk 2 --cache-dir /tmp/kd-search-cache \
      >>"$logs/$name.log" 2>&1
    echo "rc=$?" >>"$logs/$name.log"
  done <"tools/dev/$name.txt"
  summary+=("$name done")
}

for stage in "$@"; do
  case "$stage" in
    gpu-tests)
      KD_CTEST_VERBOSE=1 tools/dev/run-gpu-tests.sh "$bundle" gpu >"$logs/gpu-tests.log" 2>&1; rm -f "$logs"/ctest-gpu.xml "$logs"/ctest-gpu.log
      summary+=("gpu-tests rc=$?: $(grep -E 'tests passed|tests failed' "$logs/gpu-tests.log" | tail -1)")
      ;;
    gate-table)
      # The gate test prints its rejection table; ctest hides a passing test's output.
      (cd /tmp && gpu_eval --gtest_filter='GpuEvalGate.*') >"$logs/gate-table.log" 2>&1
      summary+=("gate-table rc=$?")
      ;;
    tma-gate)
      (cd /tmp && gpu_eval --gtest_filter='GpuEvalBuiltin.*') >"$logs/tma-gate.log" 2>&1
      summary+=("tma-gate rc=$?")
      ;;
    quickstart)
      KD_QUICKSTART_BIN="$bundle/bin" tools/dev/quickstart.sh /tmp/kd-quickstart >"$logs/quickstart.log" 2>&1
      summary+=("quickstart rc=$?")
      ;;
    search-tc)
      search_list search-tc 3
      ;;
    e2e)
      # PyTorch under LD_PRELOAD: empty cache, then prewarmed through a real kdispatchd; then the
      # decode loop (eager and CUDA graphs) with and without the shim.
      c=/tmp/kd-e2e; rm -rf "$c"; mkdir -p "$c"
      # Searches the empty-cache run's misses start run at full speed here (search_duty_cycle 1), as
      # before the GPU policy existed: these stages measure the shim, not the policy (search-duty does).
      kdispatchd --cache-dir "$c" --socket "$c/s.sock" --metrics-listen off --search-duty-cycle 1 \
        >"$logs/e2e-daemon.log" 2>&1 &
      dpid=$!
      for _ in $(seq 50); do [[ -S $c/s.sock ]] && break; sleep 0.2; done
      pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds 1 --max-candidates 10 --wall-seconds 60"
      python3 tests/e2e/shim_ops_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --workdir /tmp/kd-e2e-ops \
        --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock >"$logs/e2e-ops.log" 2>&1
      summary+=("e2e-ops rc=$?")
      python3 tests/e2e/shim_llama_decode_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --workdir /tmp/kd-e2e-llama \
        --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock --layers 2 --batches 1,16 --steps 16 \
        >"$logs/e2e-llama.log" 2>&1
      summary+=("e2e-llama rc=$?")
      kill "$dpid"; wait "$dpid" 2>/dev/null
      ;;
    validate)
      k="gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=512 n=256 k=384 lda=512 ldb=384 ldc=512 batch=1 epilogue=none beta0=1"
      : >"$logs/validate.log"
      for kernel in naive_f32_nn tf32_on_strict_f32 race; do
        echo "=== kdctl validate $kernel" >>"$logs/validate.log"
        kdctl validate --key "$k" --kernel tests/gpu/eval/kernels/$kernel.cu >>"$logs/validate.log" 2>&1
        echo "exit=$?" >>"$logs/validate.log"
      done
      summary+=("validate done")
      ;;
    bench-verify)
      # After search6/search-tc: the tuned kernels in that cache against cuBLAS, then the gate again.
      kdctl bench tools/dev/search6.txt --cache-dir /tmp/kd-search-cache --chart "$logs/bench.png" >"$logs/bench.log" 2>&1
      summary+=("bench rc=$?")
      kdctl verify --cache-dir /tmp/kd-search-cache >"$logs/verify.log" 2>&1
      summary+=("verify rc=$?")
      ;;
    fullfile | fullfile:*)
      shapes=tools/shapes/llama3-8b.txt tag=full
      [[ $stage == fullfile:* ]] && shapes=${stage#fullfile:} tag=full-$(basename "${stage#fullfile:}" .txt)
      e2e_daemon "$tag"
      t0=$(date +%s)
      timeout "${KD_FULL_PREWARM_LIMIT:-420}" kdctl prewarm "$shapes" --socket "$c/s.sock" \
        --cache-dir "$c" --rounds "${KD_FULL_ROUNDS:-4}" --max-candidates "${KD_FULL_CANDIDATES:-48}" \
        --wall-seconds "${KD_FULL_WALL:-8}" ${KD_FULL_PROPOSER:+--proposer "$KD_FULL_PROPOSER"} \
        >"$logs/$tag-prewarm.log" 2>&1
      rc=$?
      summary+=("$tag prewarm rc=$rc in $(( $(date +%s) - t0 )) s")
      kill "$dpid"; wait "$dpid" 2>/dev/null
      t0=$(date +%s)
      timeout 240 kdctl bench "$shapes" --cache-dir "$c" --chart "$logs/$tag-bench.png" \
        >"$logs/$tag-bench.log" 2>&1
      summary+=("$tag bench rc=$? in $(( $(date +%s) - t0 )) s")
      # Which configuration won each published shape (the builtin families' first source line).
      grep -v '^#' "$shapes" | while read -r line; do
        [[ -n $line ]] && kdctl show "$line" --cache-dir "$c" --source 2>/dev/null | grep -m1 '^// kdispatch builtin' |
          sed "s|^|${line:0:90} |"
      done >"$logs/$tag-winners.log"
      # Every shape's search tree (each candidate's parameters, verdict and times), for the next
      # session's choice of what to tune; shapes that kept cuBLAS have a tree too.
      grep -v '^#' "$shapes" | while read -r line; do
        [[ -n $line ]] && { echo "== $line"; kdctl show "$line" --cache-dir "$c" 2>&1; }
      done >"$logs/$tag-trees.log"
      ;;
    e2e-decode)
      # Issue 27's workload: the Llama-3-8B-dims decode step captured in a CUDA graph, bf16 and f32,
      # batch 1 and 16, with the shim at its defaults, after a real kdispatchd prewarmed the shapes
      # the empty-cache run recorded (builtin and cublaslt proposers; KD_E2E_* budgets;
      # KD_E2E_DECODE_DTYPES and KD_E2E_DECODE_BATCHES narrow the cases).
      e2e_daemon e2e-decode --search-duty-cycle 1
      pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds ${KD_E2E_ROUNDS:-3} --max-candidates ${KD_E2E_CANDIDATES:-32} --wall-seconds ${KD_E2E_WALL:-8} --proposer builtin,cublaslt"
      t0=$(date +%s)
      python3 tests/e2e/shim_llama_decode_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --workdir /tmp/kd-e2e-decode-work \
        --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock --layers "${KD_E2E_LAYERS:-4}" \
        --dtypes "${KD_E2E_DECODE_DTYPES:-bf16,f32}" --batches "${KD_E2E_DECODE_BATCHES:-1,16}" --modes graph --steps 32 \
        >"$logs/e2e-decode.log" 2>&1
      summary+=("e2e-decode rc=$? in $(( $(date +%s) - t0 )) s")
      kdctl bench /tmp/kd-e2e-decode-work/recorded_shapes.txt --cache-dir "$c" --chart "$logs/e2e-decode-bench.png" \
        >"$logs/e2e-decode-bench.log" 2>&1
      kill "$dpid"; wait "$dpid" 2>/dev/null
      ;;
    e2e-rows)
      # Issue 33: BERT (fp32) and a bf16 decode loop with their row operators routed through the
      # Python package on top of the shim, against the shim alone and plain torch; a real kdispatchd
      # prewarms the recorded GEMM lines and the row lines (KD_E2E_* budgets; KD_E2E_ROWS_WORKLOADS
      # narrows the workloads, e.g. to bert).
      e2e_daemon e2e-rows --search-duty-cycle 1
      pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds ${KD_E2E_ROUNDS:-3} --max-candidates ${KD_E2E_CANDIDATES:-32} --wall-seconds ${KD_E2E_WALL:-8} --proposer builtin,cublaslt"
      t0=$(date +%s)
      python3 tests/e2e/rows_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --lib "$bundle/lib/libkdispatch.so" \
        --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock --workloads "${KD_E2E_ROWS_WORKLOADS:-bert,decode}" \
        >"$logs/e2e-rows.log" 2>&1
      summary+=("e2e-rows rc=$? in $(( $(date +%s) - t0 )) s")
      kill "$dpid"; wait "$dpid" 2>/dev/null
      ;;
    torch-overrides)
      # kdispatch.torch's C++ and Python overrides against torch's kernels: every uncovered call and
      # fallback gives torch's exact result and is counted (tests/e2e/torch_overrides_check.py).
      KDISPATCH_LIB="$bundle/lib/libkdispatch.so" python3 tests/e2e/torch_overrides_check.py >"$logs/torch-overrides.log" 2>&1
      summary+=("torch-overrides rc=$?: $(grep -c '^PASS' "$logs/torch-overrides.log") checks passed, $(grep -c '^FAIL' "$logs/torch-overrides.log") failed")
      ;;
    e2e-train)
      e2e_daemon e2e-train --search-duty-cycle 1
      pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds ${KD_E2E_ROUNDS:-3} --max-candidates ${KD_E2E_CANDIDATES:-32} --wall-seconds ${KD_E2E_WALL:-8} --proposer builtin,cublaslt"
      t0=$(date +%s)
      # shellcheck disable=SC2086  # KD_E2E_TRAIN_ARGS is a list of options
      python3 tests/e2e/shim_fp32_training_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --workdir /tmp/kd-e2e-train-work \
        --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock ${KD_E2E_TRAIN_ARGS:-} >"$logs/e2e-train.log" 2>&1
      summary+=("e2e-train rc=$? in $(( $(date +%s) - t0 )) s")
      kdctl bench /tmp/kd-e2e-train-work/recorded_shapes.txt --cache-dir "$c" --chart "$logs/e2e-train-bench.png" \
        >"$logs/e2e-train-bench.log" 2>&1
      kill "$dpid"; wait "$dpid" 2>/dev/null
      ;;
    e2e-tf32)
      e2e_daemon e2e-tf32 --search-duty-cycle 1
      pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds ${KD_E2E_ROUNDS:-2} --max-candidates ${KD_E2E_CANDIDATES:-16} --wall-seconds ${KD_E2E_WALL:-8}"
      t0=$(date +%s)
      python3 tests/e2e/shim_tf32_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --workdir /tmp/kd-e2e-tf32-work \
        --prewarm-cmd "$pre" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock --size "${KD_E2E_TF32_SIZE:-4096}" \
        >"$logs/e2e-tf32.log" 2>&1
      summary+=("e2e-tf32 rc=$? in $(( $(date +%s) - t0 )) s")
      kill "$dpid"; wait "$dpid" 2>/dev/null
      ;;
    e2e-variable)
      for target in ${KD_E2E_VAR_TARGETS:-bert decode}; do
        buckets=default; [[ $target == decode ]] && buckets=${KD_E2E_DECODE_BUCKETS:-default}
        # Searches started by misses (a bucket no prewarm covered) get ${KD_E2E_MISS_WALL:-20} s each,
        # so that the steady state the measured run waits for comes within the stage (the default
        # budget is 600 s at search_duty_cycle 0.1). A bucket that kept cuBLAS leaves a vendor verdict,
        # so its n are not searched again one at a time.
        e2e_daemon "e2e-var-$target" --buckets "$buckets" --budget-wall-seconds "${KD_E2E_MISS_WALL:-20}"
        pre="kdctl prewarm {shapes} --socket $c/s.sock --cache-dir $c --rounds ${KD_E2E_ROUNDS:-2} --max-candidates ${KD_E2E_CANDIDATES:-24} --wall-seconds ${KD_E2E_WALL:-8}"
        t0=$(date +%s)
        python3 tests/e2e/shim_variable_tokens_e2e.py --shim "$bundle/lib/libkdispatch_cublas.so" --kdctl "$bundle/bin/kdctl" \
          --workdir /tmp/kd-e2e-var-$target-work --targets "$target" --prewarm-cmd "$pre" \
          --decode-buckets "$buckets" --env KD_CACHE_DIR=$c --env KD_SOCKET=$c/s.sock >"$logs/e2e-var-$target.log" 2>&1
        summary+=("e2e-variable $target rc=$? in $(( $(date +%s) - t0 )) s")
        kill "$dpid"; wait "$dpid" 2>/dev/null
      done
      ;;
    bench-registry)
      bench_registry_launch --benchmark_min_time=0.2 >"$logs/bench-registry.log" 2>&1
      summary+=("bench-registry rc=$?")
      ;;
    search6)
      search_list search6 2
      ;;
    lab:*)
      IFS=: read -r _ src cfg <<<"$stage"
      (cd tools/dev && PYTHONUNBUFFERED=1 python3 kernel_lab.py "$src" "$cfg" --out /tmp/lab) >"$logs/lab-$(basename "$cfg" .json).log" 2>&1
      summary+=("lab $cfg rc=$?")
      ;;
    multi-gpu-prewarm | multi-gpu-prewarm:*)
      part=both
      [[ $stage == *:* ]] && part=${stage#*:}
      tools/dev/device-multi-gpu.sh "$bundle" "$part" >"$logs/multi-gpu.log" 2>&1
      summary+=("multi-gpu-prewarm rc=$?")
      ;;
    remote-gpu)
      tools/dev/device-remote-gpu.sh "$bundle" >"$logs/remote-gpu.log" 2>&1
      summary+=("remote-gpu rc=$?")
      ;;
    search-duty)
      tools/dev/device-search-duty.sh "$bundle" >"$logs/search-duty.log" 2>&1
      summary+=("search-duty rc=$?")
      ;;
    *) echo "device-run: unknown stage $stage" >&2; exit 2 ;;
  esac
done
[[ -f $logs/gpu-tests.log ]] && grep -E "Test +#|published kernel|published the llm|^[0-9]+: node|tests passed|tests failed" "$logs/gpu-tests.log" | head -40
[[ -f $logs/bench-registry.log ]] && grep -E "^BM_|^Bench|ns " "$logs/bench-registry.log" | head -20
[[ -f $logs/gate-table.log ]] && grep -vE "^\[|^Note|^$" "$logs/gate-table.log" | head -45
[[ -f $logs/tma-gate.log ]] && grep -E "^wg_tma|OK|FAILED" "$logs/tma-gate.log" | cut -c1-200 | head -30
for f in "$logs"/search6.log "$logs"/search-tc.log; do [[ -f $f ]] && grep -E "^=== |^winner|^kept|^stopped|^rc=" "$f"; done
[[ -f $logs/quickstart.log ]] && tail -12 "$logs/quickstart.log"
[[ -f $logs/validate.log ]] && grep -E "^===|^verdict|^  |^exit" "$logs/validate.log"
[[ -f $logs/bench.log ]] && cat "$logs/bench.log"
for f in "$logs"/full*-prewarm.log; do [[ -f $f ]] && tail -50 "$f" | cut -c1-160; done
for f in "$logs"/full*-bench.log; do [[ -f $f ]] && cut -c1-160 "$f"; done
for f in "$logs"/full*-winners.log; do [[ -f $f ]] && sed -E 's/gemm a=([a-z0-9]+) .* m=([0-9]+) n=([0-9]+) k=([0-9]+).*kdispatch builtin family/\1 \2x\3x\4/' "$f" | cut -c1-200; done
[[ -f $logs/verify.log ]] && cat "$logs/verify.log"
for f in "$logs"/e2e-ops.log "$logs"/e2e-llama.log "$logs"/e2e-decode.log "$logs"/e2e-tf32.log "$logs"/e2e-var-bert.log "$logs"/e2e-var-decode.log "$logs"/e2e-rows.log; do [[ -f $f ]] && grep -E "PASS|FAIL|SKIP|tok/s|tokens|speedup|reasons|Error|error" "$f" | tail -25; done
[[ -f $logs/e2e-decode-bench.log ]] && cut -c1-170 "$logs/e2e-decode-bench.log"
[[ -f $logs/e2e-train.log ]] && grep -E "PASS|FAIL|SKIP|ms per step|f32 ta=|reasons|Error|error" "$logs/e2e-train.log" | tail -60
[[ -f $logs/e2e-train-bench.log ]] && cut -c1-170 "$logs/e2e-train-bench.log"
for f in "$logs"/lab-*.log; do [[ -f $f ]] && grep -A30 "^dtype" "$f" | cut -c1-150; done
[[ -f $logs/multi-gpu.log ]] && cat "$logs/multi-gpu.log"
[[ -f $logs/remote-gpu.log ]] && cat "$logs/remote-gpu.log"
[[ -f $logs/search-duty.log ]] && cat "$logs/search-duty.log"
printf '%s\n' "${summary[@]}"
