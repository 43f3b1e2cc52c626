#!/usr/bin/env python3
"""Times PyTorch's own row kernels (F.rms_norm, F.layer_norm, softmax over the last dimension) the way
the gate times candidates in the serving regime: R back-to-back calls captured in one CUDA graph,
each on its own copy of x (the copies together at least 3x the L2), per-call time = replay / R.

Usage: row_torch_bench.py KEYLINE...   (row-operator key lines, e.g. "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1")
Prints one line per key: the key, torch's per-call microseconds (median of replays) and the bandwidth
its minimum bytes reach. Issue 33's baseline is the framework's kernel; until a worker times it
beside a candidate, this script puts its numbers next to the gate's in the same device run.
"""
import sys

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def parse(line):
    words = line.split()
    op, fields = words[0], dict(w.split("=", 1) for w in words[1:])
    return op, DTYPES[fields["dtype"]], int(fields["rows"]), int(fields["cols"]), fields.get("weight") == "1", fields.get("bias") == "1"


def min_bytes(rows, cols, dtype, weight, bias):
    e = torch.tensor([], dtype=dtype).element_size()
    return (2 * rows * cols + cols * (int(weight) + int(bias))) * e


def call(op, x, w, b):
    if op == "rmsnorm":
        return F.rms_norm(x, (x.shape[-1],), w, 1e-5)
    if op == "layernorm":
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
    return torch.softmax(x, dim=-1)


def time_key(line):
    op, dtype, rows, cols, weight, bias = parse(line)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    x_bytes = rows * cols * torch.tensor([], dtype=dtype).element_size()
    copies = max(1, min(64, -(-3 * l2 // x_bytes)))
    free, _ = torch.cuda.mem_get_info()
    copies = max(1, min(copies, 1 + (free // 4) // x_bytes))
    xs = [torch.randn(rows, cols, device="cuda", dtype=dtype) for _ in range(copies)]
    w = torch.randn(cols, device="cuda", dtype=dtype) if weight else None
    b = torch.randn(cols, device="cuda", dtype=dtype) if bias else None
    calls = max(copies, 2)
    calls = min(64, max(calls, copies * max(1, 16 // copies)))
    out = [None]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            out[0] = call(op, xs[0], w, b)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            out[0] = call(op, xs[i % copies], w, b)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(30):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / calls)
    times.sort()
    us = times[len(times) // 2]
    tbps = min_bytes(rows, cols, dtype, weight, bias) / (us * 1e-6) / 1e12
    print(f"torch {line:<58} {us:10.2f} us {tbps:6.2f} TB/s  (calls {calls}, copies {copies})", flush=True)
    del xs, g
    torch.cuda.empty_cache()


def main():
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    for line in sys.argv[1:]:
        time_key(line)


if __name__ == "__main__":
    main()
