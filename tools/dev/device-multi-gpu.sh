#!/usr/bin/env bash
# multi-gpu-prewarm (issues 32 and 31 item 4): `kdctl prewarm` of a shape list through one kdispatchd
# with workers = 0 (one GPU), then on a fresh cache with workers = auto (every GPU), both timed. In
# the N-GPU run the worker of one searching runner is killed with SIGKILL once a quarter of the
# shapes settled, and the others go on. Prints a table: GPUs, wall time, jobs per runner, every
# search on a GPU of its key's model, the N-GPU time against 1/N of the one-GPU time plus 20%.
# On a one-GPU machine both runs use the one GPU (degenerate, but every step runs).
#
# Usage: tools/dev/device-multi-gpu.sh BUNDLE [one|all|both]      (default both)
#   one: only the one-GPU run; all: only the N-GPU run. Rows are kept in /tmp/kd-mg/rows between
#   calls on the same machine, so the two runs may take two device calls; each prints the table of
#   every row so far. `both` starts the table afresh.
# Environment (the per-job budget bounds the device time; it is printed first):
#   KD_MG_SHAPES      shape list (default BUNDLE/share/kdispatch/shapes/llama3-8b.txt)
#   KD_MG_MAX_SHAPES  only the first N shapes of the list (default all)
#   KD_MG_ROUNDS      search rounds per shape (default 1)
#   KD_MG_CANDIDATES  candidates per shape (default 6)
#   KD_MG_WALL        search wall seconds per shape (default 4; checked before each evaluation)
#   KD_MG_PROPOSER    proposers for the jobs (default: the daemon's, builtin)
#   KD_MG_LIMIT       seconds a prewarm may take before it is cut off (default 280; rc 124)
# With the defaults a one-GPU H100 run of the 41 Llama-3-8B shapes should take about 4 minutes
# (an estimate: each evaluation takes about a second), so `both` fits one 10-minute device call.
#   KD_MG_KILL        0: kill no worker in the N-GPU run (default 1)
#   KD_MG_GPUS        GPU count when nvidia-smi is missing (dry runs without a GPU)
# Logs: multi-gpu-logs.tgz in $OUT (the device tool's folder) or BUNDLE/logs: mg-{one,all}-{daemon,prewarm}.log,
# the status after each run, the table.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source tools/dev/device-common.sh
device_scenario "$1" /tmp/kd-mg-logs multi-gpu-logs.tgz
which=${2:-both}
work=/tmp/kd-mg
mkdir -p "$work"
[[ $which == both ]] && : >"$work/rows"

shapes_src=${KD_MG_SHAPES:-$bundle/share/kdispatch/shapes/llama3-8b.txt}
shapes=$work/shapes.txt
grep -vE '^\s*(#|$)' "$shapes_src" | head -n "${KD_MG_MAX_SHAPES:-100000}" >"$shapes"
count=$(wc -l <"$shapes")
rounds=${KD_MG_ROUNDS:-1} candidates=${KD_MG_CANDIDATES:-6} wall=${KD_MG_WALL:-4} limit=${KD_MG_LIMIT:-280}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[[ $gpus -gt 0 ]] || gpus=${KD_MG_GPUS:-0}
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd';')
echo "multi-gpu-prewarm: $gpus GPU(s) [$gpu_name]; $count shapes from $shapes_src;" \
  "per-job budget: rounds $rounds, candidates $candidates, wall ${wall} s${KD_MG_PROPOSER:+, proposer $KD_MG_PROPOSER};" \
  "each prewarm cut off after $limit s"

# run_phase TAG WORKERS: a fresh cache, a daemon, the timed prewarm, its row appended to the table.
run_phase() {
  local tag=$1 workers=$2
  local c=$work/$tag
  rm -rf "$c"
  mkdir -p "$c"
  kdispatchd --cache-dir "$c" --socket "$c/s.sock" --metrics-listen off --workers "$workers" \
    >"$logs/mg-$tag-daemon.log" 2>&1 &
  local dpid=$!
  for _ in $(seq 150); do [[ -S $c/s.sock ]] && break; sleep 0.2; done
  if [[ ! -S $c/s.sock ]]; then
    echo "run $tag: kdispatchd did not come up (mg-$tag-daemon.log):"
    tail -5 "$logs/mg-$tag-daemon.log"
    kill -9 "$dpid" 2>/dev/null
    return 1
  fi
  local killer=""
  rm -f "$c/kill.json"
  if [[ $tag == all && ${KD_MG_KILL:-1} != 0 ]]; then
    python3 "$here/multi_gpu_report.py" kill-midway "$c/s.sock" $(( (count + 3) / 4 )) "$limit" "$c/kill.json" \
      >"$logs/mg-$tag-kill.log" 2>&1 &
    killer=$!
  fi
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout "$limit" kdctl prewarm "$shapes" --socket "$c/s.sock" --rounds "$rounds" --max-candidates "$candidates" \
    --wall-seconds "$wall" ${KD_MG_PROPOSER:+--proposer "$KD_MG_PROPOSER"} >"$logs/mg-$tag-prewarm.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  [[ -n $killer ]] && { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; }
  kdctl status --json --socket "$c/s.sock" >"$c/status.json" 2>>"$logs/mg-$tag-daemon.log"
  kdctl status --socket "$c/s.sock" >"$logs/mg-$tag-status.txt" 2>&1
  timeout 90 kdctl stop --socket "$c/s.sock" --timeout 60 >/dev/null 2>&1 || kill -9 "$dpid" 2>/dev/null
  wait "$dpid" 2>/dev/null
  local wall_s
  wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  python3 "$here/multi_gpu_report.py" row "$tag" "$wall_s" "$rc" "$c/status.json" \
    "$logs/mg-$tag-daemon.log" "$count" "$c/kill.json" >>"$work/rows"
  echo "run $tag (workers = $workers): kdctl prewarm rc=$rc in $wall_s s"
}

case $which in
  one) run_phase one 0 ;;
  all) run_phase all auto ;;
  both) run_phase one 0 && run_phase all auto ;;
  *) echo "device-multi-gpu: expected one, all or both, not $which" >&2; exit 2 ;;
esac
echo
python3 "$here/multi_gpu_report.py" table "$work/rows" | tee "$logs/mg-table.txt"
for tag in one all; do
  [[ -f $logs/mg-$tag-status.txt ]] && { echo "--- kdctl status after run $tag"; grep -E "^search|runner" "$logs/mg-$tag-status.txt"; }
done
archive
exit 0
