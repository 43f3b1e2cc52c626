#!/usr/bin/env python3
"""Lab (issue 27, session 50): the ceiling of the e2e decode step for kernels that stream the weights.

    python3 tools/dev/decode_lab/decode_ceiling.py --lib $PWD/libkd_l2_prefetch.so [--batches 16,1]

(the library built from l2_prefetch.cu as l2_prefetch_step.py says).
The e2e decode step (tests/e2e/shim_llama_decode_e2e.py's model, plain torch), captured in a CUDA graph,
with every F.linear (a) as it is (cuBLAS); (b) replaced by the kernel lab's streaming read of its
weight, launched plainly or (c) as a programmatic dependent that waits on the grid first (as kdispatch
launches), its output left unwritten; (d) replaced by nothing (the output allocated only): the step's
other kernels. (b) and (c) are what the step would take if every GEMM ran at the rate of a streaming
read, so plain / (c) bounds what per-call kernels can gain. Prints a table last."""
import argparse, ctypes, statistics, sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "e2e"))
import shim_llama_decode_e2e as e2e  # noqa: E402
from step_timing import replay_us  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--batches", default="16,1")
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--reps", type=int, default=7)
args = ap.parse_args()
lib = ctypes.CDLL(args.lib)
lib.kd_lab_stream.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
F = torch.nn.functional
real_linear = F.linear
sink = torch.zeros(1, dtype=torch.int32, device="cuda")
mode = {"m": "plain"}


def linear(x, w, b=None):
    if mode["m"] == "plain":
        return real_linear(x, w, b)
    out = torch.empty(*x.shape[:-1], w.shape[0], device=x.device, dtype=x.dtype)
    if mode["m"] in ("stream", "stream_pdl"):
        lib.kd_lab_stream(w.data_ptr(), w.numel() * w.element_size(), sink.data_ptr(), int(mode["m"] == "stream_pdl"),
                          torch.cuda.current_stream().cuda_stream)
    return out


F.linear = linear
print(torch.cuda.get_device_name(0), flush=True)
rows = []
for batch in [int(b) for b in args.batches.split(",")]:
    step = e2e.build_model(torch, args.layers, batch, 80, seed=7, dtype_name="bf16")
    tok = torch.randint(0, e2e.VOCAB, (batch,), device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    graphs = {}
    for m in ("plain", "stream", "stream_pdl", "none"):
        mode["m"] = m
        with torch.no_grad():
            graphs[m], _ = e2e.capture_step(torch, step, tok, pos)
    times = {m: [] for m in graphs}
    for _ in range(args.reps):  # interleaved, so clock drift falls on every mode alike
        for m, g in graphs.items():
            times[m].append(replay_us(torch, g, 40))
    med = {m: statistics.median(t) for m, t in times.items()}
    for m in graphs:
        rows.append((batch, m, med[m], min(times[m]), max(times[m]), med["plain"] / med[m]))
    del graphs, step
    torch.cuda.empty_cache()

print("\nbf16 decode step (4 layers, graph), us per step: median min max, plain / mode")
names = {"plain": "cuBLAS (plain)", "stream": "GEMMs as streaming reads", "stream_pdl": "streaming reads, PDL + wait",
         "none": "GEMMs removed (other kernels)"}
for batch, m, med, lo, hi, sp in rows:
    print(f"  batch {batch:2d}  {names[m]:32s} {med:8.1f} {lo:8.1f} {hi:8.1f}   {sp:.3f}x")
