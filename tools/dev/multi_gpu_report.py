#!/usr/bin/env python3
"""Helpers of tools/dev/device-multi-gpu.sh (issue 32: kdctl prewarm on 1 and on N GPUs).

  multi_gpu_report.py kill-midway SOCKET SETTLED_AT SECONDS OUT.json
      Waits until SETTLED_AT jobs are done or failed, then kills (SIGKILL) the kdispatch-worker of
      the highest-numbered runner that is searching, and writes what it did, with each runner's
      jobs_finished at that moment. Gives up after SECONDS (writes why).
  multi_gpu_report.py row TAG WALL_S RC STATUS.json DAEMON.log SHAPES [KILL.json]
      One result row (a JSON line) from the status after the prewarm and the daemon's log.
  multi_gpu_report.py table ROWS
      The table of every row in ROWS; with a one-GPU row and an N-GPU row, the N-GPU time against
      1/N of the one-GPU time plus 20%.
"""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kd_socket  # noqa: E402

SEARCH_LINE = re.compile(r"search \S+ for (.*) on device (-?\d+) \((.*)\): ")
KEY_GPU = re.compile(r'gpu="([^"]*)"')


def settled_count(status):
    jobs = status.get("jobs", {})
    return sum(int(jobs.get(s, 0)) for s in kd_socket.SETTLED)


def kill_midway(sock, settled_at, seconds, out_path):
    start = time.monotonic()
    result = {"skipped": "the daemon stopped answering before the kill"}
    while time.monotonic() - start < seconds:
        try:
            status = kd_socket.status(sock)
        except OSError:
            time.sleep(0.5)
            continue
        runners = status.get("runners", [])
        settled = settled_count(status)
        busy = [r for r in runners if r.get("state") == "searching" and int(r.get("worker_pid", 0)) > 0]
        if settled >= settled_at and busy:
            victim = max(busy, key=lambda r: r["index"])
            os.kill(int(victim["worker_pid"]), signal.SIGKILL)
            result = {"runner": victim["index"], "ordinal": victim["ordinal"], "pid": victim["worker_pid"],
                      "key": victim.get("key", ""), "at_s": round(time.monotonic() - start, 1),
                      "settled": settled, "before": [r.get("jobs_finished", 0) for r in runners]}
            break
        result = {"skipped": "no runner was searching with %d jobs settled within %d s" % (settled, seconds)}
        time.sleep(0.5)
    with open(out_path, "w") as f:
        json.dump(result, f)
    print(json.dumps(result))


def searches(log_path):
    """(key, ordinal, gpu name) of every search the daemon's log reports."""
    found = []
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                m = SEARCH_LINE.search(line)
                if m:
                    found.append((m.group(1), int(m.group(2)), m.group(3)))
    except OSError:
        pass
    return found


def row(tag, wall_s, rc, status_path, log_path, shapes, kill_path=None):
    with open(status_path) as f:
        status = json.load(f)
    runners = status.get("runners", [])
    jobs = status.get("jobs", {})
    found = searches(log_path)
    keyed = [(k, o, g) for k, o, g in found if KEY_GPU.search(k)]
    matching = [1 for k, o, g in keyed if KEY_GPU.search(k).group(1) == g]
    r = {"tag": tag, "gpus": len(runners), "gpu": runners[0]["gpu"] if runners else "-",
         "wall_s": float(wall_s), "rc": int(rc), "shapes": int(shapes), "settled": settled_count(status),
         "done": int(jobs.get("done", 0)), "failed": int(jobs.get("failed", 0)),
         "jobs_per_runner": [x.get("jobs_finished", 0) for x in runners],
         "ordinals": [x.get("ordinal", -1) for x in runners],
         "workers_lost": [x.get("workers_lost", 0) for x in runners],
         "searches": len(found), "keyed": len(keyed), "on_key_model": len(matching)}
    if kill_path and os.path.exists(kill_path):
        with open(kill_path) as f:
            r["kill"] = json.load(f)
    print(json.dumps(r))


def table(rows_path):
    rows = []
    with open(rows_path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    print("%-5s %4s %8s %3s %9s %11s %-24s %s" % ("run", "GPUs", "wall_s", "rc", "settled", "done/failed",
                                                  "jobs per runner", "searches on their key's GPU model"))
    for r in rows:
        print("%-5s %4d %8.1f %3d %9s %11s %-24s %s" % (
            r["tag"], r["gpus"], r["wall_s"], r["rc"], "%d/%d" % (r["settled"], r["shapes"]),
            "%d/%d" % (r["done"], r["failed"]), ",".join(str(x) for x in r["jobs_per_runner"]) or "-",
            "%d/%d (%d unkeyed)" % (r["on_key_model"], r["keyed"], r["searches"] - r["keyed"])))
    gpu_names = sorted({r["gpu"] for r in rows})
    print("GPU kind: %s" % ", ".join(gpu_names))
    one = next((r for r in rows if r["tag"] == "one"), None)
    many = next((r for r in rows if r["tag"] == "all"), None)
    if one and many and many["gpus"] > 0:
        n = many["gpus"]
        bound = one["wall_s"] / n * 1.2
        ideal = one["wall_s"] / n
        if one["rc"] != 0 or many["rc"] != 0 or one["settled"] < one["shapes"]:
            verdict = "INCOMPLETE (a prewarm was cut off or failed: rc %d and %d; see KD_MG_LIMIT)" % (
                one["rc"], many["rc"])
        else:
            verdict = "PASS" if many["wall_s"] <= bound and many["settled"] == many["shapes"] else "FAIL"
        print("N-GPU time %.1f s on %d GPUs vs 1/%d of the one-GPU %.1f s plus 20%% = %.1f s: %s "
              "(%.2fx the ideal 1/N; speedup %.2fx)" % (many["wall_s"], n, n, one["wall_s"], bound, verdict,
                                                         many["wall_s"] / ideal if ideal > 0 else 0,
                                                         one["wall_s"] / many["wall_s"] if many["wall_s"] > 0 else 0))
    for r in rows:
        k = r.get("kill")
        if not k:
            continue
        if "skipped" in k:
            print("kill in run %s: skipped (%s)" % (r["tag"], k["skipped"]))
            continue
        after = ["runner %d +%d" % (i, now - before)
                 for i, (now, before) in enumerate(zip(r["jobs_per_runner"], k["before"]))]
        lost = r["workers_lost"][k["runner"]] if k["runner"] < len(r["workers_lost"]) else "?"
        print("kill in run %s: worker pid %s of runner %d (GPU %d) killed %.1f s into the prewarm with %d jobs "
              "settled; jobs finished after it: %s; runner %d workers lost: %s" % (
                  r["tag"], k["pid"], k["runner"], k["ordinal"], k["at_s"], k["settled"], ", ".join(after),
                  k["runner"], lost))


COMMANDS = {
    "kill-midway": lambda sock, settled_at, seconds, out_path: kill_midway(sock, int(settled_at), float(seconds),
                                                                         out_path),
    "row": row,
    "table": table,
}


if __name__ == "__main__":
    sys.exit(kd_socket.run_command(sys.argv, COMMANDS, __doc__))
