"""Shared helpers of the PyTorch end-to-end tests of libkdispatch_cublas.so (GPU machine only).

Each e2e script runs itself again as a worker subprocess (--worker ...), once with and once
without LD_PRELOAD, so that the shim is loaded exactly as in production: before torch, with cuBLAS
loaded RTLD_LOCAL by libtorch_cuda.so.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

def bert_encoder(layers, dev):
    """The fp32 BERT-large-style encoder of the BERT e2e (rows_e2e.py) and the labs that time it: Hugging
    Face BertModel, hidden 1024, 16 heads, FFN 4096, eager attention (softmax its own kernel), random
    weights, a batch of 32 x 128 token ids. Returns its forward pass, a function of no arguments."""
    import torch
    from transformers import BertConfig, BertModel
    cfg = BertConfig(hidden_size=1024, num_hidden_layers=layers, num_attention_heads=16, intermediate_size=4096,
                     attn_implementation="eager")
    model = BertModel(cfg).to(dev).eval()
    ids = torch.randint(0, cfg.vocab_size, (32, 128), device=dev)
    return lambda: model(input_ids=ids).last_hidden_state


STATS_RE = re.compile(r"kdispatch_cublas: hits=(\d+) misses=(\d+) fallbacks=(\d+) nested=(\d+) "
                      r"pass_through=(\d+) real_missing=(\d+)")


def driver_arguments(description):
    """The arguments every e2e driver takes."""
    p = argparse.ArgumentParser(description=description)
    # Required for the driver; the worker processes it starts run without it.
    p.add_argument("--shim", required="--worker" not in sys.argv, help="path to libkdispatch_cublas.so")
    p.add_argument("--workdir", default=None,
                   help="directory for records, outputs and logs (default: a new temp dir)")
    p.add_argument("--prewarm-cmd", default=None,
                   help="command that prewarms the cache from a shape list; '{shapes}' is replaced "
                        "by the recorded file, e.g. \"kdctl prewarm --shapes {shapes}\". Without it "
                        "the prewarmed stages are skipped (reported, not passed)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra environment for every shim run (e.g. the cache directory)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return p


def parse_driver(parser, worker):
    """Parses an e2e script's command line. A worker process (--worker, as run_worker starts one)
    runs worker(args) instead and exits 0."""
    args = parser.parse_args()
    if args.worker:
        worker(args)
        sys.exit(0)
    return args


def start_driver(args):
    """The driver's working directory (printed), the extra environment of its shim runs (--env) and
    its checks."""
    work = workdir(args)
    print(f"workdir: {work}")
    return work, extra_env(args), Checks()


def workdir(args):
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        return Path(args.workdir)
    return Path(tempfile.mkdtemp(prefix="kd_e2e_"))


def extra_env(args):
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    return env


def run_worker(script, worker_args, *, shim=None, env=None, log_prefix=None):
    """Runs `script --worker ...` and returns (stdout, stderr); raises on a non-zero exit.

    With `shim`, the child runs with LD_PRELOAD=shim; KD_* variables of this process are never
    inherited, so each stage sets exactly what it means to test.
    """
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("KD_") and k != "LD_PRELOAD"}
    if shim is not None:
        child_env["LD_PRELOAD"] = str(Path(shim).resolve())
    child_env.update(env or {})
    cmd = [sys.executable, str(script)] + [str(a) for a in worker_args]
    proc = subprocess.run(cmd, env=child_env, capture_output=True, text=True)
    if log_prefix is not None:
        Path(f"{log_prefix}.stdout").write_text(proc.stdout)
        Path(f"{log_prefix}.stderr").write_text(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed ({proc.returncode}): {' '.join(cmd)}\n"
                           f"stderr tail:\n{proc.stderr[-4000:]}")
    return proc.stdout, proc.stderr


def parse_stats(stderr):
    """The shim's KD_STATS totals, or None when the report is missing."""
    m = STATS_RE.search(stderr)
    if not m:
        return None
    keys = ["hits", "misses", "fallbacks", "nested", "pass_through", "real_missing"]
    stats = dict(zip(keys, (int(g) for g in m.groups())))
    for line in stderr.splitlines():
        if line.startswith("kdispatch_cublas: reasons"):
            stats["reasons"] = line.split("reasons", 1)[1].strip()
        if line.startswith("kdispatch_cublas: libcublas"):
            stats["resolved"] = line.split(":", 1)[1].strip()
    return stats


def prewarm(args, shapes_file):
    """Runs --prewarm-cmd on the recorded shapes; False when no command was given."""
    if not args.prewarm_cmd:
        return False
    cmd = args.prewarm_cmd.replace("{shapes}", shlex.quote(str(shapes_file)))
    env = dict(os.environ)
    env.update(extra_env(args))
    print(f"prewarm: {cmd}", flush=True)
    subprocess.run(cmd, shell=True, check=True, env=env)
    kdctl = shlex.split(cmd)[0]
    if "KD_SOCKET" in env and not wait_for_idle_daemon(kdctl, env):
        print("prewarm: the daemon did not become idle; measurements may include its searches", flush=True)
    return True


def wait_for_idle_daemon(kdctl, env, timeout_s=900):
    """Waits until the daemon has no job queued or running (live processes' misses can queue
    searches beside the prewarmed ones): measurements taken while a search runs would measure the
    search's use of the GPU. Returns False on timeout or when no daemon answers."""
    import json
    import time
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        proc = subprocess.run([kdctl, "status", "--json"], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            return False
        jobs = json.loads(proc.stdout).get("jobs", {})
        if jobs.get("queued", 0) == 0 and jobs.get("running", 0) == 0:
            return True
        time.sleep(2)
    return False


def replayed_output(torch, fn, warmups=2):
    """fn's output from one replay of a CUDA graph that captured it, on the CPU. fn runs `warmups`
    times on a side stream first (cuBLAS heuristics, kdispatch's entry loads), as applications warm
    up before capturing; the captured output is filled with NaN before the replay, so the replay
    must write every element."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = fn()
    static_out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    return static_out.clone().cpu()


def norm_rel(a, b):
    """|a - b| / |b| over whole tensors, in double (b the reference)."""
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def key_tokens(line):
    """'gemm a=bf16 m=16 ...' -> {'op': 'gemm', 'a': 'bf16', 'm': '16', ...}."""
    words = line.split()
    tokens = {"op": words[0]} if words else {}
    for w in words[1:]:
        k, _, v = w.partition("=")
        tokens[k] = v
    return tokens


class Checks:
    """Collects named pass/fail results; the script's exit code is 1 when any failed."""

    def __init__(self):
        self.failed = []
        self.skipped = []

    def check(self, ok, what):
        print(f"[{'PASS' if ok else 'FAIL'}] {what}", flush=True)
        if not ok:
            self.failed.append(what)
        return ok

    def skip(self, what):
        print(f"[SKIP] {what}", flush=True)
        self.skipped.append(what)

    def finish(self):
        print(f"\n{len(self.failed)} failed, {len(self.skipped)} skipped", flush=True)
        for f in self.failed:
            print(f"  FAILED: {f}")
        return 1 if self.failed else 0
