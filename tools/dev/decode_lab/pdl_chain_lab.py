#!/usr/bin/env python3
"""Lab (issue 27, session 50): q, k and v of a decode step as a chain of programmatic dependents.

    python3 tools/dev/decode_lab/pdl_chain_lab.py [--out DIR]

The e2e decode step calls F.linear for q (4096 x 16 x 4096), k and v (1024 x 16 x 4096 each) back to
back on the same tokens, after an elementwise kernel of the application. cuBLAS runs each call as an
isolated kernel, so the two small ones pay their whole ramp and tail. Here skinny_xreg.cu runs the three
as programmatic dependents (each first launch may start before the previous kernel ends), with and
without KD_TRIG (launch_dependents first) and KD_PF (the CTA's weight rows prefetched into the L2
before the grid wait). Each layer has its own weights (8 layers, cold in HBM as in a step); graph time
per layer, cuBLAS in the same run. Prints a table last."""
import ctypes, os, subprocess, sys, tempfile
import torch

here = os.path.dirname(os.path.abspath(__file__))
inc = os.path.join(here, "../../../libdispatch/include")
src = os.path.join(here, "skinny_xreg.cu")
out_dir = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else tempfile.mkdtemp()
os.makedirs(out_dir, exist_ok=True)
cu = ctypes.CDLL("libcuda.so.1")
torch.cuda.init()
dev = torch.device("cuda")


class Args(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("c", ctypes.c_void_p), ("w", ctypes.c_void_p)] + \
               [(f, ctypes.c_longlong) for f in ("m", "n", "k", "lda", "ldb", "ldc", "sa", "sb", "sc")] + \
               [("batch", ctypes.c_int), ("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("bias", ctypes.c_void_p)]


class LaunchAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(LaunchAttr)), ("nattrs", ctypes.c_uint)]


def ck(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: CUresult {rc}")


kernels = {}


def kernel(warps, octets, pf, trig):
    key = (warps, octets, pf, trig)
    if key in kernels:
        return kernels[key]
    cubin = os.path.join(out_dir, f"xreg_w{warps}_o{octets}_pf{pf}_t{trig}.cubin")
    defs = dict(KD_IN_T="__nv_bfloat16", KD_OUT_T="__nv_bfloat16", KD_WARPS=warps, KD_OCTETS=octets, KD_BETA_ZERO=1,
                KD_BIAS=0, KD_PDL=1, KD_PF=pf, KD_TRIG=trig)
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-std=c++17", "-I", inc, "-o", cubin, src] +
                   [f"-D{k}={v}" for k, v in defs.items()], check=True)
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), open(cubin, "rb").read()), "load")
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"kd_skinny_xreg"), "get")
    smem = warps * 8 * 528 + warps * octets * 512
    ck(cu.cuFuncSetAttribute(fn, 8, smem), "smem attr")
    kernels[key] = (fn, smem, mod)
    return kernels[key]


keep = []


def launch_xreg(cfg, w, x, out, stream):
    warps, octets, pf, trig = cfg
    fn, smem, _ = kernel(warps, octets, pf, trig)
    m, k = w.shape
    n = x.shape[0]
    a = Args(w.data_ptr(), x.data_ptr(), out.data_ptr(), 0, m, n, k, k, k, m, 0, 0, 0, 1, 1.0, 0.0, 0)
    keep.append(a)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(a))
    keep.append(params)
    attr = LaunchAttr(id=6, value=1)
    keep.append(attr)
    grid = ((m + 8 * octets - 1) // (8 * octets), 1, 1)
    c = LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(32 * warps, 1, 1), smem, ctypes.c_void_p(stream),
                     ctypes.pointer(attr), 1)
    ck(cu.cuLaunchKernelEx(ctypes.byref(c), fn, params, None), "launch")


L, N, H, KV = 8, 16, 4096, 1024
gen = torch.Generator(device=dev).manual_seed(5)
Wq = [torch.randn(H, H, device=dev, dtype=torch.bfloat16, generator=gen) * H ** -0.5 for _ in range(L)]
Wk = [torch.randn(KV, H, device=dev, dtype=torch.bfloat16, generator=gen) * H ** -0.5 for _ in range(L)]
Wv = [torch.randn(KV, H, device=dev, dtype=torch.bfloat16, generator=gen) * H ** -0.5 for _ in range(L)]
x = torch.randn(N, H, device=dev, dtype=torch.bfloat16, generator=gen)
y = torch.randn(N, H, device=dev, dtype=torch.bfloat16, generator=gen)  # the application's elementwise kernel's
q = torch.empty(N, H, device=dev, dtype=torch.bfloat16)
kk = torch.empty(N, KV, device=dev, dtype=torch.bfloat16)
vv = torch.empty(N, KV, device=dev, dtype=torch.bfloat16)


def step(plan, stream):
    """One pass over the L layers: an elementwise kernel, then q, k, v by `plan` (None: cuBLAS)."""
    for l in range(L):
        y.mul_(1.0)
        for w, o, cfg in ((Wq[l], q, plan and plan[0]), (Wk[l], kk, plan and plan[1]), (Wv[l], vv, plan and plan[1])):
            if cfg is None:
                torch.matmul(x, w.t(), out=o)
            else:
                launch_xreg(cfg, w, x, o, stream)


def graph_time(plan, reps=7, inner=4):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step(plan, s.cuda_stream)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(inner):
            step(plan, s.cuda_stream)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / (inner * L))
    ts.sort()
    return ts[len(ts) // 2]


def check(plan):
    ref = [(x.float() @ Wq[0].float().t()), (x.float() @ Wk[0].float().t()), (x.float() @ Wv[0].float().t())]
    s = torch.cuda.current_stream().cuda_stream
    errs = []
    for w, o, cfg, r in ((Wq[0], q, plan[0], ref[0]), (Wk[0], kk, plan[1], ref[1]), (Wv[0], vv, plan[1], ref[2])):
        o.fill_(float("nan"))
        launch_xreg(cfg, w, x, o, s)
        torch.cuda.synchronize()
        errs.append(((o.float() - r).norm() / r.norm()).item())
    return max(errs)


rows = []
base = graph_time(None)
rows.append(("cuBLAS q, k, v", base, None))
variants = []
for qc in [(16, 4), (16, 2)]:
    for kc in [(16, 1), (16, 2), (8, 2)]:
        for pf, trig in [(0, 0), (0, 1), (1, 1)]:
            variants.append(((qc[0], qc[1], pf, trig), (kc[0], kc[1], pf, trig)))
for plan in variants:
    e = check(plan)
    t = graph_time(plan)
    rows.append((f"q W{plan[0][0]} O{plan[0][1]}, k/v W{plan[1][0]} O{plan[1][1]}, pf {plan[0][2]} trig {plan[0][3]}", t, e))
    print(rows[-1], flush=True)
# cuBLAS q, then k and v chained (q does not trigger early: k waits for its end)
for kc in [(16, 2), (8, 2)]:
    plan = (None, (kc[0], kc[1], 1, 1))
    t = graph_time(plan)
    rows.append((f"cuBLAS q, k/v W{kc[0]} O{kc[1]} pf 1 trig 1", t, None))
rows.append(("cuBLAS q, k, v (again)", graph_time(None), None))

print(f"\nper layer (elementwise + q + k + v), us, graph of {L} layers x 4, H200-class GPU: {torch.cuda.get_device_name(0)}")
for name, t, e in rows:
    print(f"  {name:52s} {t:8.2f}  {base / t:.3f}x" + (f"  err {e:.2e}" if e is not None else ""))
