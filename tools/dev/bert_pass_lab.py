#!/usr/bin/env python3
"""Lab: is rows_e2e.py's BERT pass (Hugging Face BertModel, eager attention, fp32, 32 x 128) bound by the
GPU or by the host that issues it? Run it on the device plain, then with LD_PRELOAD=libkdispatch_cublas.so
and KD_CACHE_DIR of a cache the e2e prewarmed (/tmp/kd-e2e-rows after `device-run.sh e2e-rows`). Prints,
per pass:
  eager    elapsed GPU time of back-to-back passes (events), as rows_e2e.py times them;
  issue    the host's time to issue one pass that starts on an idle GPU (no synchronize inside);
  busy     the union of the pass's kernel intervals from a profiler trace (overlapping programmatic
           dependents count once) and idle = elapsed - busy, with the longest gaps and what ran before each.
When issue nears eager, the host sets the pace and the kernels' speed cannot show.
Usage: bert_pass_lab.py [--layers 4] [--iters 20] [--gaps 8] [--trace FILE]"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=4)
p.add_argument("--iters", type=int, default=20)
p.add_argument("--gaps", type=int, default=8)
p.add_argument("--trace", default="")
a = p.parse_args()

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from e2e_common import bert_encoder  # noqa: E402

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
run = bert_encoder(a.layers, torch.device("cuda"))

with torch.no_grad():
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        run()
    host_loop = (time.perf_counter() - t0) * 1e3 / a.iters
    e1.record()
    e1.synchronize()
    eager = e0.elapsed_time(e1) / a.iters
    issue = []
    for _ in range(a.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run()
        issue.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    issue.sort()

    from torch.profiler import ProfilerActivity, profile
    passes = 5
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(passes):
            run()
        torch.cuda.synchronize()
    path = a.trace or os.path.join(tempfile.mkdtemp(), "bert.json")
    prof.export_chrome_trace(path)

with open(path) as f:
    events = json.load(f)["traceEvents"]
kernels = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                 if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("dur", 0) > 0)
busy, gaps, end, prev = 0.0, [], None, None
for s, t, name in kernels:
    if end is None:
        busy, end, prev = t - s, t, name
        continue
    if s > end:
        gaps.append((s - end, prev[:50], name[:50]))
        busy += t - s
    elif t > end:
        busy += t - end
    if t >= end:
        end, prev = t, name
span = end - kernels[0][0]
print(f"kernels per pass {len(kernels) / passes:.0f}")
print(f"eager {eager:.3f} ms/pass (host loop {host_loop:.3f}); issue from idle: median {issue[len(issue) // 2]:.3f} "
      f"ms, min {issue[0]:.3f}")
print(f"profiled {passes} passes: span {span / passes / 1e3:.3f} ms/pass, busy (union) {busy / passes / 1e3:.3f}, "
      f"idle {(span - busy) / passes / 1e3:.3f}, gaps over 2 us: {sum(1 for g in gaps if g[0] > 2) / passes:.0f}/pass")
gaps.sort(reverse=True)
for g, before, after in gaps[:a.gaps]:
    print(f"  gap {g:8.1f} us  after {before}  before {after}")
by_kind = {}
for g, before, after in gaps:
    key = after.split("<")[0][:40]
    by_kind[key] = by_kind.get(key, 0.0) + g
print("idle before each kernel kind, us/pass:")
for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])[:10]:
    print(f"  {v / passes:8.1f}  {k}")
