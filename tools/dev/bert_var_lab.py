#!/usr/bin/env python3
"""Lab: where the time of the variable-batch fp32 BERT-style encoder goes (issue 29's e2e model),
plain or under LD_PRELOAD. Prints ms per batch for each batch size and the top kernels by GPU time.
Usage: bert_var_lab.py --batches 32,64 [--layers 4] [--reps 5] [--profile] [--mix PASSES]
Run it on the device plain, then with LD_PRELOAD=libkdispatch_cublas.so and KD_CACHE_DIR/KD_SOCKET of a
daemon that prewarmed the buckets: the per-size and mixed times compare kernels without the e2e's
background searches."""
import argparse, time
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--batches", default="32,64")
p.add_argument("--layers", type=int, default=4)
p.add_argument("--reps", type=int, default=5)
p.add_argument("--profile", action="store_true")
p.add_argument("--mix", type=int, default=0, help="then time MIX shuffled passes over every batch size, as the e2e does")
a = p.parse_args()
dev = torch.device("cuda")
hidden, heads, inter, seq = 768, 12, 3072, 128
g = torch.Generator(device=dev).manual_seed(5)
w = lambda o, i: torch.randn(o, i, device=dev, generator=g) * i ** -0.5
layers = [{"qkv": w(3 * hidden, hidden), "o": w(hidden, hidden), "up": w(inter, hidden), "down": w(hidden, inter)}
          for _ in range(a.layers)]

def encode(x):
    b = x.shape[0]
    h = x.reshape(b * seq, hidden)
    for p in layers:
        q, k, v = F.linear(h, p["qkv"]).view(b, seq, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
        at = F.scaled_dot_product_attention(q, k, v).permute(0, 2, 1, 3).reshape(b * seq, hidden)
        h = F.layer_norm(h + F.linear(at, p["o"]), (hidden,))
        h = F.layer_norm(h + F.linear(F.gelu(F.linear(h, p["up"])), p["down"]), (hidden,))
    return h

with torch.no_grad():
    for b in [int(s) for s in a.batches.split(",")]:
        x = torch.randn(b, seq, hidden, device=dev, generator=g)
        for _ in range(3):
            encode(x)
        torch.cuda.synchronize()
        time.sleep(0.3)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        s.record()
        for _ in range(a.reps):
            encode(x)
        e.record()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / a.reps * 1e3
        print(f"batch {b} (n={b * seq}): {s.elapsed_time(e) / a.reps:.3f} ms GPU, {wall:.3f} ms wall per pass")
        if not a.profile:
            continue
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            encode(x)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8, max_name_column_width=70))
    if a.mix:
        import random
        sizes = [int(s) for s in a.batches.split(",")]
        xs = {b: torch.randn(b, seq, hidden, device=dev, generator=g) for b in sizes}
        order = [b for _ in range(a.mix) for b in sizes]
        random.Random(3).shuffle(order)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for b in order:
            encode(xs[b])
        torch.cuda.synchronize()
        print(f"mix: {len(order)} batches in {time.perf_counter() - t0:.3f} s")
