#!/usr/bin/env python3
"""Kernel lab: compiles builtin kernel variants with nvcc, checks them against an fp64 reference and
times them against cuBLAS (through torch) with L2 flushed between runs. A developer tool for tuning
families on a GPU machine; the product's own gate and bench live in search/ and kdctl.

usage: kernel_lab.py FAMILY_SOURCE CONFIGS.json [--out DIR]
CONFIGS.json: {"cases":[{"dtype":"bf16","m":4096,"n":16,"k":4096,"variants":[{"KD_MT":1,...}, ...]}]}
Each variant is a dict of -D macros plus "grid" / "block" computed here by the family's rule.
Optional, per case: "ta": "T" (default, nn.Linear: A stored k x m) or "N" (torch.mm: A stored m x k,
column-major); "defines": -D macros shared by every variant (types, layout); "arch" (default sm_90; sm_90a for
wgmma); "err_floor" (default
1e-6) added to 2x cuBLAS's norm error. Optional, per variant: "launches": [{"entry","grid","block",
"smem"}, ...] run in order instead of the single (case entry, grid, block, smem) launch, and
"workspace": bytes of device workspace handed in the args (not zeroed, poisoned once). A launch with
"pdl": true goes through cuLaunchKernelEx as a programmatic dependent of the one before it."""
import ctypes, json, os, subprocess, sys, tempfile, concurrent.futures as cf
import torch

src, cfg_path = sys.argv[1], sys.argv[2]
out_dir = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else tempfile.mkdtemp()
here = os.path.dirname(os.path.abspath(__file__))
inc = os.path.join(here, "../../libdispatch/include")
cfg = json.load(open(cfg_path))
os.makedirs(out_dir, exist_ok=True)
# The warpgroup families include the generated wgmma wrappers (the build writes them into its tree).
subprocess.run([sys.executable, os.path.join(here, "gen_wgmma.py"), os.path.join(out_dir, "wg_wgmma.cuh")], check=True)
torch.cuda.init()
dev = torch.device("cuda")
cu = ctypes.CDLL("libcuda.so.1")

class Args(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("c", ctypes.c_void_p), ("w", ctypes.c_void_p)] + \
               [(f, ctypes.c_longlong) for f in ("m", "n", "k", "lda", "ldb", "ldc", "sa", "sb", "sc")] + \
               [("batch", ctypes.c_int), ("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("bias", ctypes.c_void_p)]
assert ctypes.sizeof(Args) == 128

def ck(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: CUresult {rc}")

def compile_variant(job):
    name, defs, arch = job
    cubin = os.path.join(out_dir, name + ".cubin")
    cmd = ["nvcc", f"-arch={arch}", "-cubin", "-std=c++17", "-I", inc, "-I", out_dir, "-o", cubin, src] + [f"-D{k}={v}" for k, v in defs.items()]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return name, cubin if r.returncode == 0 else None, r.stderr[-2000:]

def load(cubin, entry):
    data = open(cubin, "rb").read()
    mod = ctypes.c_void_p(); fn = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), data), "load " + cubin)
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, entry.encode()), "get " + entry)
    ck(cu.cuFuncSetAttribute(fn, 8, 232448 - 1024), "smem opt-in")  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    return fn

class LaunchAttr(ctypes.Structure):  # CUlaunchAttribute: id, 4 bytes of padding, a 64-byte value union
    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]
class LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(LaunchAttr)), ("nattrs", ctypes.c_uint)]
assert ctypes.sizeof(LaunchAttr) == 72

def launch(fn, grid, block, smem, args, stream, pdl=False):
    params = (ctypes.c_void_p * 1)(ctypes.addressof(args))
    if not pdl:
        ck(cu.cuLaunchKernel(fn, *grid, *block, smem, ctypes.c_void_p(stream), params, None), "launch")
        return
    # Programmatic dependent launch: may start before the previous kernel on the stream completes.
    attr = LaunchAttr(id=6, value=1)  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    cfg_ = LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), smem, ctypes.c_void_p(stream),
                        ctypes.pointer(attr), 1)
    ck(cu.cuLaunchKernelEx(ctypes.byref(cfg_), fn, params, None), "launch (pdl)")

# Cold L2 by reading a buffer larger than L2: a write-based flush (zero_) would leave the L2 full of
# dirty lines whose write-back then competes with the timed kernel's reads.
flush = torch.randn(64 << 20, device=dev)  # 256 MiB
flush_sink = torch.empty(1, device=dev)
def timed(fn, iters=40):
    ts = []
    for _ in range(iters):
        torch.sum(flush, dim=0, keepdim=True, out=flush_sink)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e) * 1000)
    ts.sort()
    return ts[len(ts) // 2]

# Measured copy bandwidth (bytes read + written).
big = torch.empty(1 << 30, dtype=torch.uint8, device=dev); big2 = torch.empty_like(big)
bw_us = timed(lambda: big2.copy_(big), 10)
bw = 2 * (1 << 30) / (bw_us * 1e-6)
print(f"copy bandwidth {bw/1e12:.2f} TB/s", flush=True)

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
rows = []
for case in cfg["cases"]:
    dt = DT[case["dtype"]]; m, n, k = case["m"], case["n"], case["k"]
    entry = case.get("entry", "kd_skinny_mma")
    ta = case.get("ta", "T")
    skip = ("grid", "block", "smem", "launches", "workspace")
    jobs = [(f"{case['dtype']}_{ta}_{m}x{n}x{k}_{i}",
             {**case.get("defines", {}), **{kk: vv for kk, vv in v.items() if kk not in skip}},
             case.get("arch", "sm_90"))
            for i, v in enumerate(case["variants"])]
    with cf.ThreadPoolExecutor(16) as ex:
        compiled = list(ex.map(compile_variant, jobs))
    X = torch.randn(n, k, device=dev, dtype=torch.float32).to(dt)   # B stored k x n (tb=N)
    if ta == "T":
        W = torch.randn(m, k, device=dev, dtype=torch.float32).to(dt)   # op(A) rows: A stored k x m (ta=T)
        Wop = W.t()
    else:
        W = torch.randn(k, m, device=dev, dtype=torch.float32).to(dt)   # A stored m x k col-major (ta=N)
        Wop = W
    lda = k if ta == "T" else m
    ref = (X.double() @ Wop.double())                                # n x m == C^T (C is m x n col-major)
    out = torch.empty(n, m, device=dev, dtype=dt)
    base = timed(lambda: torch.mm(X, Wop, out=out))
    err_base = ((out.double() - ref).norm() / ref.norm()).item()
    maxrel_base = ((out.double() - ref).abs().max() / ref.abs().max()).item()
    floor = case.get("err_floor", 1e-6)
    nbytes = (m * k + k * n + m * n) * W.element_size()
    best = None
    for (name, cubin, log), var in zip(compiled, case["variants"]):
        if cubin is None:
            print(f"{name}: compile failed\n{log[-600:]}"); continue
        launches = var.get("launches") or [{"entry": entry, "grid": var["grid"], "block": var["block"],
                                             "smem": var.get("smem", 0)}]
        fns = [load(cubin, l["entry"]) for l in launches]
        ws = torch.full((max(var.get("workspace", 0), 1),), 0xFF, dtype=torch.uint8, device=dev)
        out.fill_(float("nan"))
        args = Args(W.data_ptr(), X.data_ptr(), out.data_ptr(), ws.data_ptr(), m, n, k, lda, k, m, 0, 0, 0, 1, 1.0, 0.0, 0)
        stream = torch.cuda.current_stream().cuda_stream
        def run(fns=fns, launches=launches, args=args, stream=stream):
            for f, l in zip(fns, launches):
                launch(f, l["grid"], l["block"], l.get("smem", 0), args, stream, l.get("pdl", False))
        run(); torch.cuda.synchronize()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        maxrel = ((out.double() - ref).abs().max() / ref.abs().max()).item()
        ok = err == err and err <= 2 * err_base + floor and (floor >= 1e-6 or maxrel <= 2 * maxrel_base + floor)
        t = timed(run)
        shown = {kk: vv for kk, vv in var.items() if kk not in ("launches",)}
        print(f"{name} {shown} err={err:.2e} (cublas {err_base:.2e}) maxrel={maxrel:.2e} (cublas {maxrel_base:.2e}) {t:.1f}us vs cublas {base:.1f}us "
              f"x{base/t:.2f} {nbytes/(t*1e-6)/bw*100:.0f}%bw {2*m*n*k/(t*1e-6)/1e12:.1f}TFLOP/s {'OK' if ok else 'WRONG'}", flush=True)
        if ok and (best is None or t < best[0]):
            best = (t, shown)
    if best:
        rows.append((case["dtype"], m, n, k, base, best[0], base / best[0], nbytes / (best[0] * 1e-6) / bw * 100,
                     nbytes / (base * 1e-6) / bw * 100, best[1]))
print("\ndtype  m      n   k      cublas_us  best_us  speedup  %bw(best)  %bw(cublas)  config")
for r in rows:
    print(f"{r[0]:5s} {r[1]:6d} {r[2]:3d} {r[3]:6d} {r[4]:9.1f} {r[5]:8.1f} {r[6]:7.2f}x {r[7]:8.0f}% {r[8]:10.0f}%  {r[9]}")
