#!/usr/bin/env bash
# remote-gpu (issue 31's GPU target): two kdispatchd on this machine with separate caches, both on
# GPU 0, sharing one Redis (the bundle's redis-server on loopback) as their remote tier, with the
# default trust (a record from the tier passes this machine's gate before it is used) and the
# default buckets (a miss queues its bucket's range of n, issue 29), as a fleet runs them.
#  1. A shape missed on both daemons at once is searched exactly once; the other daemon serves it
#     after verification only (or finishes it as searched by the fleet when nothing beat cuBLAS).
#  2. An application (tools/dev/gemm_app.py under the shim) runs on A until it hits: A searches its
#     miss and publishes. The same application then starts on B: B takes A's record from the tier,
#     verifies it, and the application hits it without a search on B. Prints the time from the miss
#     to the first hit (target: within 10 s) and the verification's cost (B's log).
#  3. kill -9 of the searching daemon: A prewarms a shape and is killed with SIGKILL mid-search while
#     B waits on A's lease for the same key; B takes the job within the lease (remote_lease_ms,
#     default 30 s) plus its poll, and settles it.
# Usage: tools/dev/device-remote-gpu.sh BUNDLE
# Environment:
#   KD_RG_ROUNDS (2), KD_RG_CANDIDATES (16), KD_RG_WALL (60): each search's budget
#   KD_RG_SHARED   the shape of step 1 (default f32 4096x16x4096: builtin beats cuBLAS there)
#   KD_RG_KILLED   the shape of step 3 (default f32 4096x8x4096)
#   KD_RG_KILL_BUDGET "ROUNDS CANDIDATES WALL" of step 3's search, long enough to be killed in (default "6 96 150")
#   KD_RG_KILL_AFTER seconds A searches before B asks and A is killed (default 3)
#   KD_RG_APP      the application's GEMM "OUT IN TOKENS DTYPE" (default "6144 4096 16 f32")
#   KD_RG_HIT_LIMIT seconds the application waits for its hit (default 60)
#   KD_RG_PORT     Redis port on 127.0.0.1 (default 6391)
#   KD_RG_LIMIT    seconds a search may take before a step gives up (default 2 x KD_RG_WALL + 240)
#   KD_RG_DRY_RUN=1 goes on where a daemon cannot search (to try the script's flow without a GPU)
# Logs: remote-gpu-logs.tgz in $OUT or BUNDLE/logs: rg-redis.log, rg-a.log, rg-b.log, rg-app*.log, rg-*-prewarm.log, rg-summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source tools/dev/device-common.sh
device_scenario "$1" /tmp/kd-rg-logs remote-gpu-logs.tgz
w=/tmp/kd-rg
rm -rf "$w"
mkdir -p "$w/a" "$w/b" "$w/rec"
rounds=${KD_RG_ROUNDS:-2} candidates=${KD_RG_CANDIDATES:-16} wall=${KD_RG_WALL:-60}
port=${KD_RG_PORT:-6391}
shared=${KD_RG_SHARED:-gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1}
killed=${KD_RG_KILLED:-gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=8 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1}
read -r app_out app_in app_tokens app_dtype <<<"${KD_RG_APP:-6144 4096 16 f32}"
shim=$bundle/lib/libkdispatch_cublas.so
summary=$logs/rg-summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
pids=()
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  for s in "$w/a/s.sock" "$w/b/s.sock"; do [[ -S $s ]] && timeout 60 kdctl stop --socket "$s" --timeout 50 >/dev/null 2>&1; done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  archive
}
trap cleanup EXIT

say "remote-gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); search budget rounds $rounds," \
  "candidates $candidates, wall ${wall} s"
redis=$(command -v redis-server) || { say "FAIL: no redis-server in the bundle or on PATH"; exit 1; }
"$redis" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --logfile "$logs/rg-redis.log" &
pids+=($!)
redis_up() { { exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'PING\r\n' >&3 && read -r -t 2 line <&3 && [[ $line == +PONG* ]]; } 2>/dev/null; }
for _ in $(seq 50); do redis_up && break; sleep 0.2; done
redis_up || { say "FAIL: redis-server did not answer on 127.0.0.1:$port (rg-redis.log)"; exit 1; }

# start_daemon NAME: kdispatchd on GPU 0 with its own cache, pointed at the Redis.
start_daemon() {
  local d=$w/$1
  # Full speed (search_duty_cycle 1): step 1's searches are started by misses, with no application to protect.
  kdispatchd --cache-dir "$d" --socket "$d/s.sock" --metrics-listen off --workers 0 --search-duty-cycle 1 \
    --remote "redis://127.0.0.1:$port/0" --remote-poll-ms 250 --budget-rounds "$rounds" \
    --budget-candidates "$candidates" --budget-wall-seconds "$wall" >"$logs/rg-$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 150); do [[ -S $d/s.sock ]] && return 0; sleep 0.2; done
  say "FAIL: kdispatchd $1 did not come up (rg-$1.log)"
  tail -5 "$logs/rg-$1.log"
  exit 1
}
start_daemon a
start_daemon b
for d in a b; do
  why=$(python3 "$here/kd_socket.py" status "$w/$d/s.sock" |
    python3 -c 'import json,sys; b=json.load(sys.stdin)["search_backend"]; print("" if b["available"] else b["message"])')
  if [[ -n $why ]]; then
    say "daemon $d cannot search: $why"
    [[ -n ${KD_RG_DRY_RUN:-} ]] || exit 1
  fi
done
# searches LOG [FROM]: how many searches the daemon's log reports (from line FROM on). A miss's job is
# its bucket's range (n=LO..HI), not the exact line missed, so searches are counted per step.
searches() { tail -n +"${2:-1}" "$1" | grep -cE "search [^ ]+ for gemm "; }
lines() { wc -l <"$1"; }
# wait_idle SOCKET SECONDS: until the daemon has no queued or running job.
wait_idle() {
  python3 - "$1" "$2" <<'PY'
import sys, time
sys.path.insert(0, "tools/dev")
import kd_socket
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        j = kd_socket.status(sys.argv[1])["jobs"]
        if j["queued"] == 0 and j["running"] == 0:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.5)
sys.exit(1)
PY
}
job_of() { python3 "$here/kd_socket.py" jobs "$1" "$2" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j["state"] + ": " + j.get("reason", ""))'; }
jobs_of() { python3 "$here/kd_socket.py" status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"])'; }

# 1. One shape missed on both daemons at once.
python3 "$here/kd_socket.py" miss "$w/a/s.sock" "$shared" >/dev/null
python3 "$here/kd_socket.py" miss "$w/b/s.sock" "$shared" >/dev/null
t0=$(date +%s)
limit=${KD_RG_LIMIT:-$(( 2 * wall + 240 ))}
sleep 2
wait_idle "$w/a/s.sock" "$limit"
wait_idle "$w/b/s.sock" "$(( limit < 120 ? limit : 120 ))"
na=$(searches "$logs/rg-a.log") nb=$(searches "$logs/rg-b.log")
verdict=FAIL
[[ $((na + nb)) -eq 1 ]] && verdict=PASS
say "step 1: a shape missed on A and B ($(awk '{print $2,$8,$9,$10}' <<<"$shared")): searched $na time(s) on A, $nb on B," \
  "in $(( $(date +%s) - t0 )) s: exactly once $verdict"
say "  A's jobs: $(jobs_of "$w/a/s.sock")"
say "  B's jobs: $(jobs_of "$w/b/s.sock")"
grep -hE "passed this machine's gate|failed this machine's gate|imported " "$logs/rg-a.log" "$logs/rg-b.log" | cut -c1-220 |
  sed 's/^/  /' | tee -a "$summary"

# 2. The application's shape (its key recorded with no daemon, for the log): the application runs on A until it
# hits (A searches its bucket and publishes), then on B, which should take the record from the tier.
KD_RECORD=$w/app.txt KD_SOCKET=$w/none.sock KD_CACHE_DIR=$w/rec LD_PRELOAD=$shim \
  python3 "$here/gemm_app.py" hit --out "$app_out" --in "$app_in" --tokens "$app_tokens" --dtype "$app_dtype" \
  --seconds 1 >"$logs/rg-app-record.log" 2>&1
app_key=$(head -1 "$w/app.txt" 2>/dev/null)
if [[ -z $app_key ]]; then
  say "step 2: FAIL: the application recorded no key (rg-app-record.log):"
  tail -5 "$logs/rg-app-record.log" | tee -a "$summary"
  exit 1
fi
say "step 2: the application's GEMM: $app_key"
t0=$(date +%s)
KD_SOCKET=$w/a/s.sock KD_CACHE_DIR=$w/a LD_PRELOAD=$shim \
  python3 "$here/gemm_app.py" hit --out "$app_out" --in "$app_in" --tokens "$app_tokens" --dtype "$app_dtype" \
  --seconds "$limit" >"$logs/rg-app-a.log" 2>&1
result_a=$(grep -E '^\{' "$logs/rg-app-a.log" | tail -1)
hit_a=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1] or "{}"); print(r.get("time_to_hit_s", "none"))' "$result_a")
if [[ $hit_a == none ]]; then
  say "  the application on A did not hit in $limit s (nothing beat cuBLAS for its bucket?): no time to hit on B" \
    "measured; try another KD_RG_APP or a larger budget. A's jobs: $(jobs_of "$w/a/s.sock")"
  exit 1
fi
for _ in $(seq 100); do
  pending=$(python3 "$here/kd_socket.py" status "$w/a/s.sock" | python3 -c 'import json,sys; print(json.load(sys.stdin)["remote"]["pending_pushes"])')
  [[ $pending == 0 ]] && break
  sleep 0.2
done
say "  on A (searched there): first hit ${hit_a} s after its miss; pushed to the tier (pending pushes: $pending)"
b_from=$(( $(lines "$logs/rg-b.log") + 1 ))
KD_SOCKET=$w/b/s.sock KD_CACHE_DIR=$w/b LD_PRELOAD=$shim \
  python3 "$here/gemm_app.py" hit --out "$app_out" --in "$app_in" --tokens "$app_tokens" --dtype "$app_dtype" \
  --seconds "${KD_RG_HIT_LIMIT:-60}" >"$logs/rg-app.log" 2>&1
result=$(grep -E '^\{' "$logs/rg-app.log" | tail -1)
hit_s=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1] or "{}"); print(r.get("time_to_hit_s", "none"))' "$result")
nsearch=$(searches "$logs/rg-b.log" "$b_from")
gate=$(tail -n +"$b_from" "$logs/rg-b.log" | grep -oE "passed this machine's gate in [0-9]+ ms" | tail -1)
verdict=FAIL
python3 -c 'import sys; sys.exit(0 if sys.argv[1] != "none" and float(sys.argv[1]) <= 10 else 1)' "$hit_s" && [[ $nsearch == 0 ]] && verdict=PASS
say "  the application on B: first call (a miss) to first hit: ${hit_s} s (target 10 s); searches of it on B: $nsearch;" \
  "B's verification: ${gate:-not logged by B}: $verdict"
say "  application: $result"

# 3. kill -9 of the searching daemon. A prewarm (exact key, as kdctl prewarm sends it) on A; once A's
# runner searches it, the same key on B, which finds A's lease and waits; then A is killed.
a_pid=$(python3 "$here/kd_socket.py" status "$w/a/s.sock" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
b_from=$(( $(lines "$logs/rg-b.log") + 1 ))
printf '%s\n' "$killed" >"$w/killed.txt"
# A budget long enough to be killed in (KD_RG_KILL_BUDGET: rounds candidates wall seconds).
read -r k_rounds k_candidates k_wall <<<"${KD_RG_KILL_BUDGET:-6 96 150}"
kdctl prewarm "$w/killed.txt" --socket "$w/a/s.sock" --rounds "$k_rounds" --max-candidates "$k_candidates" \
  --wall-seconds "$k_wall" --no-wait >"$logs/rg-a-prewarm.log" 2>&1
runner_state() {  # SOCKET: the first runner's state and key
  python3 "$here/kd_socket.py" status "$1" 2>/dev/null |
    python3 -c 'import json,sys; r=(json.load(sys.stdin).get("runners") or [{}])[0]; print(r.get("state",""), r.get("key",""))'
}
searching=""
for _ in $(seq 240); do
  st=$(runner_state "$w/a/s.sock")
  [[ $st == searching* ]] && { searching=1; break; }
  sleep 0.5
done
if [[ -z $searching ]]; then
  say "step 3: FAIL: A never started searching the prewarmed shape (rg-a-prewarm.log, rg-a.log)"
  exit 1
fi
sleep "${KD_RG_KILL_AFTER:-3}"
kdctl prewarm "$w/killed.txt" --socket "$w/b/s.sock" --rounds "$k_rounds" --max-candidates "$k_candidates" \
  --wall-seconds "$k_wall" --no-wait >"$logs/rg-b-prewarm.log" 2>&1
sleep 2
st=$(runner_state "$w/a/s.sock")
if [[ $st != searching* ]]; then
  say "step 3: FAIL: A finished its search before the kill (state: $st); raise KD_RG_WALL or KD_RG_CANDIDATES"
  exit 1
fi
kill -9 "$a_pid"
t_kill=$(date +%s.%N)
lease_ms=$(python3 "$here/kd_socket.py" status "$w/b/s.sock" | python3 -c 'import json,sys; print(json.load(sys.stdin)["remote"].get("lease_ms", 30000))' 2>/dev/null)
took=""
for _ in $(seq 600); do
  st=$(runner_state "$w/b/s.sock")
  if [[ $st == searching* ]]; then took=$(python3 -c "import time; print(f'{time.time() - $t_kill:.1f}')"); break; fi
  sleep 0.2
done
wait_idle "$w/b/s.sock" "$limit"
nb=$(searches "$logs/rg-b.log" "$b_from")
takeovers=$(python3 "$here/kd_socket.py" status "$w/b/s.sock" | python3 -c 'import json,sys; print(json.load(sys.stdin)["remote"]["counters"].get("lease_takeovers", "?"))')
verdict=FAIL
[[ -n $took ]] && python3 -c "import sys; sys.exit(0 if $took <= ${lease_ms:-30000} / 1000 + 5 else 1)" && [[ $nb -ge 1 ]] && verdict=PASS
say "step 3: A (pid $a_pid) killed with SIGKILL mid-search; B started the job ${took:-never} s later (lease" \
  "${lease_ms:-30000} ms; target: within the lease plus 5 s of polling), B's searches since: $nb, B's lease" \
  "takeovers: $takeovers, B's jobs: $(jobs_of "$w/b/s.sock"): $verdict"
for d in b; do
  python3 "$here/kd_socket.py" status "$w/$d/s.sock" |
    python3 -c 'import json,sys; r=json.load(sys.stdin).get("remote",{}); c=r.get("counters",{}); print("  daemon '"$d"' tier counters:", json.dumps(c, sort_keys=True))' |
    tee -a "$summary"
done
exit 0
