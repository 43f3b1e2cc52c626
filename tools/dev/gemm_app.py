#!/usr/bin/env python3
"""A small GPU application for the device scripts: torch.nn.functional.linear of TOKENS tokens from
IN to OUT features, which cuBLAS receives as gemm ta=T tb=N m=OUT n=TOKENS k=IN, in a loop.

  gemm_app.py hit --out 6144 --in 4096 --tokens 16 --dtype f32 --seconds 60
      Run under LD_PRELOAD=libkdispatch_cublas.so: calls the GEMM (every 2 ms) until libkdispatch
      counts a hit (kd_stats) or SECONDS pass. Prints one JSON line: seconds from the first call
      (the miss) to the first hit, how long the first call took (cuBLAS starting), the calls made.
  gemm_app.py steps --out 8192 --in 8192 --tokens 8192 --dtype bf16 --seconds 20 --calls 8
      Times steps of CALLS back-to-back calls with CUDA events for SECONDS (or until SIGINT or
      SIGTERM), after a warm-up that ends with a line {"ready": true}. Prints one JSON line: steps,
      median, mean, p90 and max step ms, and per-second means.
Exit status 0, or 1 when `hit` saw no hit within SECONDS.
"""
import argparse
import ctypes
import json
import os
import signal
import statistics
import sys
import time

DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def arguments():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["hit", "steps"])
    p.add_argument("--out", type=int, default=6144)
    p.add_argument("--in", dest="inp", type=int, default=4096)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--calls", type=int, default=8, help="calls per step (steps mode)")
    return p.parse_args()


def kd_hits():
    """libkdispatch's hit counter (kd_stats), from the copy the shim loaded into this process."""
    lib = ctypes.CDLL("libkdispatch.so.0", mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
    buf = (ctypes.c_uint64 * 512)()  # kd_stats_t is far smaller; hits is its first field
    if lib.kd_stats(ctypes.byref(buf)) != 0:
        raise RuntimeError("kd_stats failed")
    return int(buf[0])


def operands(torch, a):
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 stays strict f32 (the key's precision class)
    dtype = getattr(torch, DTYPES[a.dtype])
    x = torch.randn(a.tokens, a.inp, device="cuda", dtype=dtype)
    w = torch.randn(a.out, a.inp, device="cuda", dtype=dtype) * 0.05
    return x, w


def until_hit(torch, a):
    x, w = operands(torch, a)
    torch.cuda.synchronize()
    f = torch.nn.functional.linear
    t0 = time.monotonic()
    f(x, w)
    torch.cuda.synchronize()
    first_call_s = time.monotonic() - t0
    try:
        hits_before = kd_hits()
    except OSError as e:
        print(json.dumps({"hit": False, "error": "libkdispatch is not loaded (run under LD_PRELOAD of the shim): %s" % e}))
        return 1
    calls = 1
    while time.monotonic() - t0 < a.seconds:
        f(x, w)
        torch.cuda.synchronize()
        calls += 1
        if kd_hits() > hits_before:
            print(json.dumps({"hit": True, "time_to_hit_s": round(time.monotonic() - t0, 3),
                              "first_call_s": round(first_call_s, 3), "calls": calls}))
            return 0
        time.sleep(0.002)
    print(json.dumps({"hit": False, "waited_s": a.seconds, "first_call_s": round(first_call_s, 3), "calls": calls}))
    return 1


def steps(torch, a):
    x, w = operands(torch, a)
    f = torch.nn.functional.linear
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def step():
        start.record()
        for _ in range(a.calls):
            f(x, w)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    for _ in range(20):
        step()
    stopping = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.append(True))
    print(json.dumps({"ready": True}), flush=True)
    times, per_second = [], {}
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds and not stopping:
        ms = step()
        times.append(ms)
        per_second.setdefault(int(time.monotonic() - t0), []).append(ms)
    if not times:
        times = [step()]
    times.sort()
    print(json.dumps({"steps": len(times), "median_ms": round(statistics.median(times), 4),
                      "mean_ms": round(statistics.fmean(times), 4),
                      "p90_ms": round(times[int(0.9 * (len(times) - 1))], 4), "max_ms": round(times[-1], 4),
                      "per_second_mean_ms": [round(statistics.fmean(v), 3) for _, v in sorted(per_second.items())]}))
    return 0


def main():
    a = arguments()
    import torch

    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device for torch"}))
        return 1
    return until_hit(torch, a) if a.mode == "hit" else steps(torch, a)


if __name__ == "__main__":
    sys.exit(main())
