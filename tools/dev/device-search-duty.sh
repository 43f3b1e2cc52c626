#!/usr/bin/env bash
# search-duty (issue 29 item 4): an application's step time while searches started by misses run in
# the background on its GPU, against the same application alone, for each duty cycle of
# KD_SD_DUTIES, and the time until every missed shape is tuned. The application
# (tools/dev/gemm_app.py steps, plain torch: its GEMM is in no search's key) loops one GEMM; the
# misses come as an application reports them (tools/dev/kd_socket.py miss).
# For each duty cycle: a fresh cache; a first prewarm of a tiny shape starts the worker (and measures
# the roofline) before anything is timed; the application alone (baseline); then the application
# again while the daemon tunes the missed shapes, until they all settled.
#
# Usage: tools/dev/device-search-duty.sh BUNDLE
# Environment:
#   KD_SD_DUTIES      duty cycles (default "default 1": the daemon's default search_duty_cycle, then full speed)
#   KD_SD_SHAPES      shapes missed in the background: the first N of the bundle's llama3-8b.txt (default 2)
#   KD_SD_ROUNDS (1), KD_SD_CANDIDATES (6), KD_SD_WALL (300): each search's budget (budget_* keys)
#   KD_SD_APP         the application: "OUT IN TOKENS DTYPE CALLS_PER_STEP" (default "4096 4096 1024 bf16 16")
#   KD_SD_BASELINE_S  seconds of the application alone (default 15)
#   KD_SD_LIMIT       seconds the tuning may take per duty cycle before it is cut off (default 240)
# With the defaults, expect about 3-4 minutes at the default share and 1 minute at full speed.
# Logs: search-duty-logs.tgz in $OUT or BUNDLE/logs: sd-<duty>-{daemon,warm,base,busy}.log, status, sd-table.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source tools/dev/device-common.sh
device_scenario "$1" /tmp/kd-sd-logs search-duty-logs.tgz
w=/tmp/kd-sd
mkdir -p "$w"
rounds=${KD_SD_ROUNDS:-1} candidates=${KD_SD_CANDIDATES:-6} wall=${KD_SD_WALL:-300}
limit=${KD_SD_LIMIT:-240} base_s=${KD_SD_BASELINE_S:-15}
read -r app_out app_in app_tokens app_dtype app_calls <<<"${KD_SD_APP:-4096 4096 1024 bf16 16}"
app=(python3 "$here/gemm_app.py" steps --out "$app_out" --in "$app_in" --tokens "$app_tokens" --dtype "$app_dtype"
  --calls "$app_calls")
mapfile -t shapes < <(grep -vE '^\s*(#|$)' "$bundle/share/kdispatch/shapes/llama3-8b.txt" | head -n "${KD_SD_SHAPES:-2}")
tiny="gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=256 n=256 k=384 lda=256 ldb=384 ldc=256 batch=1 epilogue=none beta0=1"
rows=$w/rows
: >"$rows"
echo "search-duty: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); application:" \
  "linear ${app_tokens}x${app_in} -> ${app_out} ${app_dtype}, ${app_calls} calls a step; ${#shapes[@]} shapes missed" \
  "in the background, each search: rounds $rounds, candidates $candidates, wall ${wall} s"

for duty in ${KD_SD_DUTIES:-default 1}; do
  tag=${duty//./_}
  c=$w/$tag
  rm -rf "$c"
  mkdir -p "$c"
  duty_flag=()
  [[ $duty != default ]] && duty_flag=(--search-duty-cycle "$duty")
  kdispatchd --cache-dir "$c" --socket "$c/s.sock" --metrics-listen off --workers 0 "${duty_flag[@]}" \
    --budget-rounds "$rounds" --budget-candidates "$candidates" --budget-wall-seconds "$wall" \
    >"$logs/sd-$tag-daemon.log" 2>&1 &
  dpid=$!
  for _ in $(seq 150); do [[ -S $c/s.sock ]] && break; sleep 0.2; done
  if [[ ! -S $c/s.sock ]]; then
    echo "duty $duty: kdispatchd did not come up (sd-$tag-daemon.log)"
    kill -9 "$dpid" 2>/dev/null
    continue
  fi
  share=$(python3 "$here/kd_socket.py" status "$c/s.sock" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["search_policy"]["search_duty_cycle"])')
  # The worker starts (and measures the roofline) before anything is timed.
  echo "$tiny" >"$c/tiny.txt"
  timeout 180 kdctl prewarm "$c/tiny.txt" --socket "$c/s.sock" --rounds 1 --max-candidates 2 >"$logs/sd-$tag-warm.log" 2>&1
  timeout $((base_s + 120)) "${app[@]}" --seconds "$base_s" >"$logs/sd-$tag-base.log" 2>&1
  "${app[@]}" --seconds "$((limit + 60))" >"$logs/sd-$tag-busy.log" 2>&1 &
  apid=$!
  for _ in $(seq 600); do
    grep -q '"ready"' "$logs/sd-$tag-busy.log" 2>/dev/null && break
    kill -0 "$apid" 2>/dev/null || break
    sleep 0.2
  done
  t0=$(date +%s.%N)
  python3 "$here/kd_socket.py" miss "$c/s.sock" "${shapes[@]}" >/dev/null
  python3 "$here/kd_socket.py" wait-settled "$c/s.sock" "$limit" "${shapes[@]}" >"$c/settled.json"
  settled_rc=$?
  t1=$(date +%s.%N)
  kill -INT "$apid" 2>/dev/null
  wait "$apid" 2>/dev/null
  python3 "$here/kd_socket.py" status "$c/s.sock" >"$c/status.json"
  kdctl status --socket "$c/s.sock" >"$logs/sd-$tag-status.txt" 2>&1
  timeout 90 kdctl stop --socket "$c/s.sock" --timeout 60 >/dev/null 2>&1 || kill -9 "$dpid" 2>/dev/null
  wait "$dpid" 2>/dev/null
  python3 - "$duty" "$share" "$t0" "$t1" "$settled_rc" "$c/status.json" "$logs/sd-$tag-base.log" \
    "$logs/sd-$tag-busy.log" "${#shapes[@]}" "$c/settled.json" >>"$rows" <<'PY'
import json, sys
duty, share, t0, t1, rc, status_path, base_path, busy_path, count, settled_path = sys.argv[1:11]

def last(path):
    out = {}
    for line in open(path):
        if line.startswith("{"):
            obj = json.loads(line)
            if "steps" in obj:
                out = obj
    return out

status = json.load(open(status_path))
runner = (status.get("runners") or [{}])[0]
states = json.load(open(settled_path)) or []
print(json.dumps({"duty": duty, "share": float(share), "tune_s": round(float(t1) - float(t0), 1), "cut_off": rc != "0",
                  "shapes": int(count), "done": states.count("done"), "failed": states.count("failed"),
                  "base": last(base_path), "busy": last(busy_path),
                  "evaluating_s": runner.get("evaluating_ms", 0) / 1000.0, "paused_s": runner.get("paused_ms", 0) / 1000.0}))
PY
  echo "duty $duty (search_duty_cycle $share): tuned in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" \
    "$( [[ $settled_rc != 0 ]] && echo "(cut off after $limit s)")"
done

echo
python3 - "$rows" <<'PY' | tee "$logs/sd-table.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%-8s %6s %10s %10s %10s %10s %9s %8s %8s %8s" % ("duty", "share", "alone_ms", "busy_ms", "alone_p90",
                                                         "busy_p90", "slowdown", "tune_s", "eval_s", "paused_s"))
for r in rows:
    b, s = r["base"], r["busy"]
    if not b or not s:
        print("%-8s %6.2f  (the application printed no result: see sd-*-base.log / sd-*-busy.log)" % (r["duty"], r["share"]))
        continue
    slow = 100.0 * (s["mean_ms"] / b["mean_ms"] - 1.0)
    verdict = ""
    if r["duty"] == "default":
        verdict = "  target <= 10%%: %s" % ("PASS" if slow <= 10.0 else "FAIL")
    print("%-8s %6.2f %10.3f %10.3f %10.3f %10.3f %8.1f%% %8s %8.1f %8.1f%s" % (
        r["duty"], r["share"], b["mean_ms"], s["mean_ms"], b["p90_ms"], s["p90_ms"], slow,
        ("%.1f" % r["tune_s"]) + ("+" if r["cut_off"] else ""), r["evaluating_s"], r["paused_s"], verdict))
print("alone/busy: mean step time of the application alone and while the missed shapes were tuned; "
      "tune_s: from the misses until every shape settled (+: cut off); eval_s/paused_s: the runner's evaluations "
      "and its pauses for the duty cycle")
PY
archive
exit 0
