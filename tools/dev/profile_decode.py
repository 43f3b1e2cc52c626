#!/usr/bin/env python3
"""Where one graph-captured decode step's time goes (GPU machine; a lab tool, not a test).

    python3 tools/dev/profile_decode.py --dtype bf16 --batch 1 [--layers 4] [--replays 20] [--json OUT]

Builds tests/e2e/shim_llama_decode_e2e.py's model, captures one step in a CUDA graph, replays it
under torch.profiler and prints, per step: the wall time, every GEMM in order with its time and the
bandwidth its weight bytes imply, the other kernels by name, and the idle time between kernels.
Run it plain and under LD_PRELOAD=libkdispatch_cublas.so (with KD_CACHE_DIR) to compare the two in
the application's own context, which the per-shape serving bench only approximates.
"""

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
import shim_llama_decode_e2e as model  # noqa: E402

ATTENTION_MARKERS = ("fmha", "flash", "attention", "Attention")
GEMM_MARKERS = ("gemm", "nvjet", "xmma", "cutlass", "kd_", "splitk", "splitK", "cublas", "gemv")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--replays", type=int, default=20)
    p.add_argument("--json", default=None, help="write the per-step summary here")
    args = p.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    step = model.build_model(torch, args.layers, args.batch, 64, seed=7, dtype_name=args.dtype)
    dev = torch.device("cuda")
    tok = torch.zeros(args.batch, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    with torch.no_grad():
        graph, _ = model.capture_step(torch, step, tok, pos)
        for _ in range(10):
            graph.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        wall_us = start.elapsed_time(end) * 1000 / 50
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.replays):
                graph.replay()
            torch.cuda.synchronize()
    trace = Path(tempfile.mkdtemp()) / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = [e for e in json.loads(trace.read_text())["traceEvents"]
              if e.get("cat") == "kernel" and "dur" in e]
    events.sort(key=lambda e: e["ts"])
    if not events:
        raise SystemExit("the profiler recorded no kernels (CUPTI unavailable?)")
    per_step = len(events) // args.replays
    # The last replays, steady state: the first may include the profiler's own start.
    steps = [events[i * per_step:(i + 1) * per_step] for i in range(args.replays)][2:]
    elem = 2 if args.dtype == "bf16" else 4
    gemm_order = []  # (name, mean us) in step order
    other = defaultdict(float)
    other_count = defaultdict(int)
    busy = idle = 0.0
    for s in steps:
        for i, e in enumerate(s):
            busy += e["dur"]
            if i:
                idle += max(0.0, e["ts"] - (s[i - 1]["ts"] + s[i - 1]["dur"]))
    n = len(steps)
    for i in range(per_step):
        name = steps[0][i]["name"]
        mean = sum(s[i]["dur"] for s in steps) / n
        if any(m in name for m in GEMM_MARKERS) and not any(m in name for m in ATTENTION_MARKERS):
            gemm_order.append((name, mean))
        else:
            short = name.split("<")[0].split("(")[0][-60:]
            other[short] += mean
            other_count[short] += 1
    # Weight bytes of each GEMM in step order, to put a bandwidth on it (the activations are small).
    hidden, inter, heads, kv, hd, vocab = (model.HIDDEN, model.INTER, model.HEADS, model.KV_HEADS,
                                           model.HEAD_DIM, model.VOCAB)
    layer = [(heads * hd, hidden), (kv * hd, hidden), (kv * hd, hidden), (hidden, heads * hd),
             (inter, hidden), (inter, hidden), (hidden, inter)]
    shapes = layer * args.layers + [(vocab, hidden)]
    gemm_total = sum(t for _, t in gemm_order)
    print(f"{args.dtype} batch {args.batch}: wall {wall_us:.1f} us per step; kernels {per_step} per step, "
          f"busy {busy / n:.1f} us, idle between kernels {idle / n:.1f} us")
    print(f"GEMM kernels: {len(gemm_order)} per step, {gemm_total:.1f} us")
    if len(gemm_order) == len(shapes):
        for (name, t), (m, k) in zip(gemm_order, shapes):
            print(f"  {m:6d}x{args.batch}x{k:<6d} {t:8.2f} us  {m * k * elem / t / 1e6:6.2f} TB/s  {name[:70]}")
    else:
        for name, t in gemm_order:
            print(f"  {t:8.2f} us  {name[:90]}")
    print(f"other kernels: {sum(other.values()):.1f} us")
    for name, t in sorted(other.items(), key=lambda kv: -kv[1]):
        print(f"  {other_count[name]:4d}x {t:8.2f} us  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "dtype": args.dtype, "batch": args.batch, "wall_us": wall_us, "busy_us": busy / n,
            "idle_us": idle / n, "gemms": gemm_order, "other": other}, indent=1))


if __name__ == "__main__":
    main()
