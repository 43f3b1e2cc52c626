#!/usr/bin/env python3
"""kdispatch.torch's overrides on a GPU, against torch's own kernels (GPU machine; torch >= 2.9):
every call they do not cover, and every fallback, must give exactly torch's result and be counted
under its cause, in both modes (native C++ and Python overrides), eagerly, under autograd and in a
CUDA graph capture. Hits are covered by tests/e2e/rows_e2e.py, which tunes records first.

    KDISPATCH_LIB=bundle/lib/libkdispatch.so python3 tests/e2e/torch_overrides_check.py

Each mode runs in its own process with a fresh, empty cache (every covered call falls back). Exit 0
when every check passes; prints one line per check.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def worker(mode):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, str(ROOT / "python"))
    import kdispatch.torch as kt

    dev = torch.device("cuda")
    torch.manual_seed(0)
    x = torch.randn(64, 1024, device=dev)
    w = torch.randn(1024, device=dev)
    b = torch.randn(1024, device=dev)
    h = x.half()
    cases = {
        # name: (call, the stats key it must add)
        "layernorm f32": (lambda: F.layer_norm(x, (1024,), w, b), "fallback:"),
        "layernorm f64": (lambda: F.layer_norm(x.double(), (1024,), w.double(), b.double()), "uncovered:dtype"),
        "layernorm strided": (lambda: F.layer_norm(x.t().contiguous().t(), (1024,)), "uncovered:layout"),
        "layernorm mixed": (lambda: torch.native_layer_norm(h, (1024,), w, b, 1e-5)[0], "uncovered:mixed_dtype"),
        "layernorm 2-d shape": (lambda: F.layer_norm(x.view(8, 8, 1024), (8, 1024)), "fallback:"),
        "layernorm empty": (lambda: F.layer_norm(x[:0], (1024,)), "uncovered:empty"),
        "softmax f32": (lambda: torch.softmax(x, -1), "fallback:"),
        "softmax dim 0": (lambda: torch.softmax(x, 0), "uncovered:dim"),
        "softmax half_to_float": (lambda: torch._softmax(h, -1, True), "uncovered:half_to_float"),
        "softmax bf16": (lambda: torch.softmax(x.bfloat16(), -1), "fallback:"),
    }
    if hasattr(torch.ops.aten, "_fused_rms_norm"):
        cases["rmsnorm f32"] = (lambda: F.rms_norm(x, (1024,), w), "fallback:")
        cases["rmsnorm eps none"] = (lambda: F.rms_norm(x.bfloat16(), (1024,), w.bfloat16()), "fallback:")
    plain = {}
    with torch.no_grad():
        for name, (call, _) in list(cases.items()):
            try:
                plain[name] = call().clone()
            except RuntimeError as e:  # a combination this torch's own kernel refuses: nothing to compare
                print(f"SKIP [{mode}] {name}: torch refuses it ({str(e).splitlines()[0][:100]})")
                del cases[name]
    routed = kt.enable(native=(mode == "native"))
    failures = []

    def check(ok, what):
        print(f"{'PASS' if ok else 'FAIL'} [{mode}] {what}", flush=True)
        if not ok:
            failures.append(what)

    check(kt.mode() == mode, f"mode {kt.mode()} (routed: {', '.join(routed)})")
    with torch.no_grad():
        for name, (call, key) in cases.items():
            before = kt.stats()
            y = call()
            after = kt.stats()
            added = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
            counted = any(k.startswith(key) for k in added)
            check(torch.equal(y, plain[name]) and counted, f"{name}: torch's result, counted {added}")

    # Autograd: layer_norm with grad needed is not routed (its mean/rstd feed backward); softmax is.
    xs = x.clone().requires_grad_(True)
    before = kt.stats()
    F.layer_norm(xs, (1024,), w, b).square().sum().backward()
    grad_routed = xs.grad.clone()
    check(kt.stats().get("uncovered:grad", 0) > before.get("uncovered:grad", 0), "layernorm under grad: counted uncovered:grad")
    kt.disable()
    xs.grad = None
    F.layer_norm(xs, (1024,), w, b).square().sum().backward()
    check(torch.equal(grad_routed, xs.grad), "layernorm under grad: the same gradient as torch")
    kt.enable(native=(mode == "native"))

    # A CUDA graph capture of routed calls: captures and replays torch's kernels.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        F.layer_norm(x, (1024,), w, b)
        torch.softmax(x, -1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        gy = torch.softmax(F.layer_norm(x, (1024,), w, b), -1)
    g.replay()
    torch.cuda.synchronize()
    kt.disable()
    with torch.no_grad():
        ref = torch.softmax(F.layer_norm(x, (1024,), w, b), -1)
    check(torch.equal(gy, ref), "captured layer_norm + softmax replay torch's result")
    before = kt.stats()
    with torch.no_grad():
        F.layer_norm(x, (1024,), w, b)
        torch.softmax(x, -1)
    check(kt.mode() is None and kt.stats() == before, "disable() restores torch's kernels (nothing counted after it)")
    print(f"stats [{mode}]: {kt.stats()}", flush=True)
    return 1 if failures else 0


def main():
    if len(sys.argv) > 1:
        return worker(sys.argv[1])
    rc = 0
    for mode in ("native", "python"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, KD_CACHE_DIR=cache, KD_SOCKET=os.path.join(cache, "none.sock"))
            rc |= subprocess.run([sys.executable, __file__, mode], env=env).returncode
    print("PASS" if rc == 0 else "FAIL")
    return rc


if __name__ == "__main__":
    sys.exit(main())
