#!/usr/bin/env python3
"""Lab (issue 27): does an L2 prefetch of the next GEMM's weight, issued right after a GEMM by a
kernel that exits at once, shorten a decode step captured in a CUDA graph?

    nvcc -arch=sm_90a -O3 -shared -Xcompiler -fPIC -cudart static -o libkd_l2_prefetch.so \
        tools/dev/decode_lab/l2_prefetch.cu        # here, then carried to the device
    python3 tools/dev/decode_lab/l2_prefetch_step.py --lib $PWD/libkd_l2_prefetch.so [--batch 16]

Builds the e2e decode step (tests/e2e/shim_llama_decode_e2e.py's model, plain torch, no kdispatch),
wraps F.linear so that after each call a prefetch kernel asks the L2 for the first CAP bytes of the
weight the step reads next, captures the step, and times replays. Prints a table last."""
import argparse, ctypes, statistics, sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "e2e"))
import shim_llama_decode_e2e as e2e  # noqa: E402
from step_timing import replay_us  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--caps", default="0,8,16,24,32,40")
ap.add_argument("--reps", type=int, default=5)
args = ap.parse_args()

lib = ctypes.CDLL(args.lib)
lib.kd_lab_prefetch.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p]
lib.kd_lab_spin.argtypes = [ctypes.c_longlong, ctypes.c_void_p]
F = torch.nn.functional
real_linear = F.linear
print(torch.cuda.get_device_name(0), "L2", torch.cuda.get_device_properties(0).L2_cache_size >> 20, "MB", flush=True)

# The step's weights in call order (one step): learned by one eager pass.
order = []
F.linear = lambda x, w, b=None: (order.append(w), real_linear(x, w, b))[1]
step = e2e.build_model(torch, args.layers, args.batch, 80, seed=7, dtype_name=args.dtype)
tok = torch.randint(0, e2e.VOCAB, (args.batch,), device="cuda")
pos = torch.zeros(1, dtype=torch.long, device="cuda")
with torch.no_grad():
    step(tok, pos)
nxt = {order[i].data_ptr(): order[(i + 1) % len(order)] for i in range(len(order))}
print("linear calls per step:", len(order), flush=True)

state = {"cap": 0, "mode": 0, "chunk": 64 << 10, "on": False, "before": False}


def issue(w):
    n = min(w.numel() * w.element_size(), state["cap"])
    lib.kd_lab_prefetch(w.data_ptr(), n, state["chunk"], state["mode"], torch.cuda.current_stream().cuda_stream)


def wrapped(x, w, b=None):
    y = real_linear(x, w, b)
    if state["on"]:
        issue(nxt[w.data_ptr()])
    return y


F.linear = wrapped


def time_config(cap, mode=0, on=True):
    state.update(cap=cap << 20, mode=mode, on=on)
    with torch.no_grad():
        g, _ = e2e.capture_step(torch, step, tok, pos)
    times = [replay_us(torch, g, 50, warm=10 if i == 0 else 0) for i in range(args.reps)]
    del g
    return statistics.median(times), min(times), max(times)


rows = []
base = time_config(0, on=False)
rows.append(("plain", *base))
for rep in range(2):
    for cap in [int(c) for c in args.caps.split(",")]:
        for mode in ([0, 1] if cap in (0, 32) else [0]):
            r = time_config(cap, mode)
            rows.append((f"cap {cap} MB {'bulk' if mode == 0 else 'lines'}", *r))
    r = time_config(0, on=False)
    rows.append(("plain", *r))

# Does a prefetch outlive its kernel? Eager: flush, prefetch, spin 30 us, then the linear alone.
w = order[3]  # wo
x = torch.randn(args.batch, w.shape[1], device="cuda", dtype=w.dtype)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
micro = []
for label, cap, spin in [("cold", 0, 30000), ("prefetched 32 MB, spin 30 us", 32, 30000), ("prefetched 32 MB, no spin", 32, 0),
                         ("hot (run twice)", -1, 30000)]:
    ts = []
    for _ in range(20):
        flush.zero_()
        if cap == -1:
            real_linear(x, w)
        elif cap:
            lib.kd_lab_prefetch(w.data_ptr(), min(cap << 20, w.numel() * 2), 64 << 10, 0, torch.cuda.current_stream().cuda_stream)
        if spin:
            lib.kd_lab_spin(spin, torch.cuda.current_stream().cuda_stream)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        real_linear(x, w)
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1000)
    micro.append((label, statistics.median(ts)))

print(f"\nstep (bf16 batch {args.batch}, {args.layers} layers, graph), us per step: median min max")
for name, med, lo, hi in rows:
    print(f"  {name:28s} {med:9.1f} {lo:9.1f} {hi:9.1f}   {base[0] / med:.3f}x")
print(f"\nlinear {tuple(w.shape)} x batch {args.batch}, event-timed eager, us:")
for label, t in micro:
    print(f"  {label:32s} {t:8.2f}")
