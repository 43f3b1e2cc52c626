#!/usr/bin/env python3
"""Lab: the f16 tensor rate cuBLAS reaches at a shape, and the SM clock and power while it runs: the ceiling
the f16-split families' products (three f16 products per strict f32 GEMM, one for the TF32 class) can be
held against. Serving-style: 30 calls in one CUDA graph on rotating copies of A (3x the L2), replayed for
3 s while nvidia-smi samples every 100 ms. Usage: tensor_rate_probe.py [MxNxK[:f16|bf16|tf32] ...] (default:
BERT's shapes in f16; tf32: f32 operands with TF32 allowed, the TF32 class's baseline)."""
import subprocess, sys, time
import torch
dev = torch.device("cuda")
def probe(m, n, k, dt=torch.float16, reps=30):
    copies = max(3, int(3 * 60e6 / (m * k * dt.itemsize)) + 1)
    As = [torch.randn(m, k, device=dev, dtype=dt) for _ in range(copies)]
    B = torch.randn(k, n, device=dev, dtype=dt)
    C = torch.empty(m, n, device=dev, dtype=dt)
    for a in As[:3]: torch.mm(a, B, out=C)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            for i in range(reps): torch.mm(As[i % copies], B, out=C)
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "100"],
                           stdout=subprocess.PIPE, text=True)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t_end = time.time() + 3.0; times = []
    while time.time() < t_end:
        e0.record(); g.replay(); e1.record(); e1.synchronize(); times.append(e0.elapsed_time(e1) * 1e3 / reps)
    smi.terminate(); out = smi.communicate()[0].split("\n")
    clk = [float(l.split(",")[0]) for l in out if l.strip()]
    pw = [float(l.split(",")[1]) for l in out if l.strip()]
    times.sort(); us = times[len(times) // 2]
    name = "tf32" if dt == torch.float32 else str(dt).replace("torch.", "")
    print(f"{name} {m}x{n}x{k}: {us:.2f} us, {2*m*n*k/us/1e6:.0f} TFLOP/s; SM clock median {sorted(clk)[len(clk)//2]:.0f} MHz (min {min(clk):.0f}), power median {sorted(pw)[len(pw)//2]:.0f} W")
torch.backends.cuda.matmul.allow_tf32 = True
types = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}
for arg in sys.argv[1:] or ["1024x4096x1024", "4096x4096x1024", "1024x4096x4096", "4096x4096x4096"]:
    dims, _, kind = arg.partition(":")
    probe(*(int(v) for v in dims.split("x")), dt=types[kind or "f16"])
