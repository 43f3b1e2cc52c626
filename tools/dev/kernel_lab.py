#!/usr/bin/env python3
"""Kernel lab: compiles builtin kernel variants with nvcc, checks them against an fp64 reference and
times them against cuBLAS (through torch) with L2 flushed between runs. A developer tool for tuning
families on a GPU machine; the product's own gate and bench live in search/ and kdctl.

usage: kernel_lab.py FAMILY_SOURCE CONFIGS.json [--out DIR] [--serving [--dram]]
       kernel_lab.py dram-report DRAM.csv LAB.log   (see --dram below)
CONFIGS.json: {"cases":[{"dtype":"bf16","m":4096,"n":16,"k":4096,"variants":[{"KD_MT":1,...}, ...]}]}
Each variant is a dict of -D macros plus "grid" / "block" computed here by the family's rule.
`kd_kernel_dump --lab FAMILY 'gemm ...' [PARAMS ...]` prints such a case with the launches, workspace and
PDL flags the family's own rules give (build/bin, no GPU needed).
Optional, per case: "ta": "T" (default, nn.Linear: A stored k x m) or "N" (torch.mm: A stored m x k,
column-major); "tb": "N" (default: B stored k x n) or "T" (B stored n x k, column-major); "defines": -D macros shared by every variant (types, layout); "arch" (default sm_90; sm_90a for
wgmma); "batch" (default 1: a strided batch of packed entries, one after another, against torch.bmm);
"bias": true (a bias per row of C, for KD_BIAS=1 variants; cuBLAS through torch.addmm); "err_floor" (default
1e-6) added to 2x cuBLAS's norm error; "tf32": true (f32 cases) lets cuBLAS use TF32, the baseline of
the TF32 class. Optional, per variant: "launches": [{"entry","grid","block",
"smem"}, ...] run in order instead of the single (case entry, grid, block, smem) launch, and
"workspace": bytes of device workspace handed in the args (not zeroed, poisoned once); a launch's
"carveout" sets its preferred shared-memory carveout (percent of the maximum). A launch with
"pdl": true goes through cuLaunchKernelEx as a programmatic dependent of the one before it; a variant with
"pdl_first": true makes its first launch one too under --serving (of the previous call's last launch in
the graph; the variant must define KD_PDL=1 so its first kernel waits on the grid). A variant
with "diagnostic": "words" times part of a plan (its output is expected to be wrong). A variant with
"trace": true (a source instrumented by wg_trace.py, built with KD_TRACE=1) has its per-CTA timeline read
back after its serving-regime timing, saved as OUT/NAME.trace and summarised (wg_trace.report).

--serving adds the gate's serving regime (design.md, "Timing"): R back-to-back calls captured in one
CUDA graph, each on its own copy of A (the copies together at least 3x the L2), per-call time =
replay time / R, for the variant, cuBLAS and a streaming read of the same bytes (`strm`).

--dram (with --serving): each serving graph is replayed once more between cuProfilerStart and
cuProfilerStop, and the log names it (a "DRAM-GRAPH label reps" line, in order). Run the lab under Nsight
Compute with graphs profiled whole, caches and clocks left alone:
  ncu --profile-from-start off --graph-profiling graph --cache-control none --clock-control none \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum --csv --print-units base \
      --log-file DRAM.csv python3 kernel_lab.py SRC CFG --serving --dram > LAB.log
then `kernel_lab.py dram-report DRAM.csv LAB.log` prints each graph's DRAM bytes read and written per call:
what of a call's operands and output actually reach DRAM in the serving regime."""
import ctypes, csv, json, os, subprocess, sys, tempfile, concurrent.futures as cf

if len(sys.argv) == 4 and sys.argv[1] == "dram-report":
    # ncu's CSV: one row per metric of each profiled workload (a whole graph), in profiling order.
    per = {}
    with open(sys.argv[2]) as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        per.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    labels = [l.split()[1:] for l in open(sys.argv[3]) if l.startswith("DRAM-GRAPH ")]
    if len(labels) != len(per):
        sys.exit(f"dram-report: {len(per)} profiled graphs against {len(labels)} DRAM-GRAPH lines")
    # The time is ncu's: a graph profiled whole runs slower than the lab's own serving timing.
    print(f"{'graph':40s} {'read MB':>9s} {'write MB':>9s} {'ncu us':>8s}  (per call)")
    for (label, reps), (_, m) in zip(labels, sorted(per.items())):
        n = int(reps)
        print(f"{label:40s} {m['dram__bytes_read.sum'] / n / 1e6:9.2f} {m['dram__bytes_write.sum'] / n / 1e6:9.2f} "
              f"{m['gpu__time_duration.sum'] / n / 1e3:8.2f}")
    sys.exit(0)

import torch

src, cfg_path = sys.argv[1], sys.argv[2]
out_dir = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else tempfile.mkdtemp()
serving = "--serving" in sys.argv
dram = serving and "--dram" in sys.argv
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

modules = {}  # cubin path -> its CUmodule, for a trace's read-back
def load(cubin, entry):
    data = open(cubin, "rb").read()
    mod = ctypes.c_void_p(); fn = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), data), "load " + cubin)
    modules[cubin] = mod
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, entry.encode()), "get " + entry)
    # MAX_DYNAMIC_SHARED_SIZE_BYTES, all that the kernel's static shared memory leaves of the opt-in
    # limit (asking for more is refused, which leaves the 48 KB default); refused for some kernels
    # that use none (then nothing to opt into).
    static = ctypes.c_int(0)
    cu.cuFuncGetAttribute(ctypes.byref(static), 1, fn)  # SHARED_SIZE_BYTES
    cu.cuFuncSetAttribute(fn, 8, 232448 - 1024 - static.value)
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

# The serving regime: calls(stream) issues R calls, each on its own weight copy; captured once.
def graph_time(calls, reps=7, label=None):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        calls(s.cuda_stream)  # warm-up outside the capture (cuBLAS heuristics, module loads)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        n = calls(s.cuda_stream)
    g.replay(); torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / n)
    ts.sort()
    if dram and label:
        ck(cu.cuProfilerStart(), "cuProfilerStart")
        g.replay(); torch.cuda.synchronize()
        ck(cu.cuProfilerStop(), "cuProfilerStop")
        print(f"DRAM-GRAPH {label} {n}", flush=True)
    return ts[len(ts) // 2]

STREAM_SRC = r"""
extern "C" __global__ void kd_stream_read(const uint4* p, long long n16, unsigned* sink) {
  unsigned acc = 0;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (; i + 3 * step < n16; i += 4 * step) {
    uint4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w) : "l"(p + i + j * step));
#pragma unroll
    for (int j = 0; j < 4; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n16; i += step) { uint4 v = p[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
"""
stream_fn = None
if serving:
    with open(os.path.join(out_dir, "stream_read.cu"), "w") as f:
        f.write(STREAM_SRC)
    subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", os.path.join(out_dir, "stream_read.cubin"),
                    os.path.join(out_dir, "stream_read.cu")], check=True)
    stream_fn = load(os.path.join(out_dir, "stream_read.cubin"), "kd_stream_read")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
rows = []
for case in cfg["cases"]:
    dt = DT[case["dtype"]]; m, n, k = case["m"], case["n"], case["k"]
    nb = case.get("batch", 1)  # entries, each packed, one after another
    mm = torch.mm if nb == 1 else torch.bmm
    shape = (lambda *d: d) if nb == 1 else (lambda *d: (nb,) + d)
    tr = (lambda t: t.t()) if nb == 1 else (lambda t: t.transpose(1, 2))
    entry = case.get("entry", "kd_skinny_mma")
    ta, tb = case.get("ta", "T"), case.get("tb", "N")
    skip = ("grid", "block", "smem", "launches", "workspace", "diagnostic", "pdl_first", "trace")
    jobs = [(f"{case['dtype']}_{ta}{'' if tb == 'N' else tb}_{m}x{n}x{k}{'' if nb == 1 else f'x{nb}'}_{i}",
             {**case.get("defines", {}), **{kk: vv for kk, vv in v.items() if kk not in skip}},
             case.get("arch", "sm_90"))
            for i, v in enumerate(case["variants"])]
    with cf.ThreadPoolExecutor(16) as ex:
        compiled = list(ex.map(compile_variant, jobs))
    if tb == "N":
        X = torch.randn(*shape(n, k), device=dev, dtype=torch.float32).to(dt)   # B stored k x n (tb=N)
        Xop = X
    else:
        X = torch.randn(*shape(k, n), device=dev, dtype=torch.float32).to(dt)   # B stored n x k col-major (tb=T)
        Xop = tr(X)
    ldb = k if tb == "N" else n
    if ta == "T":
        W = torch.randn(*shape(m, k), device=dev, dtype=torch.float32).to(dt)   # op(A) rows: A stored k x m (ta=T)
        Wop = tr(W)
    else:
        W = torch.randn(*shape(k, m), device=dev, dtype=torch.float32).to(dt)   # A stored m x k col-major (ta=N)
        Wop = W
    lda = k if ta == "T" else m
    strides = (m * k, k * n, m * n) if nb > 1 else (0, 0, 0)
    ref = (Xop.double() @ Wop.double())                                # n x m == C^T (C is m x n col-major)
    out = torch.empty(*shape(n, m), device=dev, dtype=dt)
    # "bias": true adds a bias per row of C (KD_BIAS=1 variants), as nn.Linear does; cuBLAS through addmm.
    bias = torch.randn(m, device=dev, dtype=torch.float32).to(dt) if case.get("bias") else None
    if bias is not None:
        assert nb == 1, "bias: one batch entry"
        ref = ref + bias.double()
        mm = lambda x, w, out: torch.addmm(bias, x, w, out=out)
    bias_ptr = 0 if bias is None else bias.data_ptr()
    # "tf32": true times cuBLAS as an application that allows TF32 calls it (the TF32 class).
    torch.backends.cuda.matmul.allow_tf32 = bool(case.get("tf32", False))
    base = timed(lambda: mm(Xop, Wop, out=out))
    if serving:
        wbytes = W.numel() * W.element_size()
        copies = max(2, -(-3 * l2 // wbytes))
        Ws = [W] + [W.clone() for _ in range(copies - 1)]
        reps = copies * max(1, -(-24 // copies))
        Wops = [tr(w) if ta == "T" else w for w in Ws]
        def mm_calls(stream):
            for i in range(reps):
                mm(Xop, Wops[i % copies], out=out)
            return reps
        base_srv = graph_time(mm_calls, label=f"cublas_{case['dtype']}_{m}x{n}x{k}x{nb}")
        sink = torch.zeros(1, dtype=torch.int32, device=dev)
        def stream_calls(stream):
            for i in range(reps):
                p = (ctypes.c_void_p * 1)(Ws[i % copies].data_ptr())
                n16 = ctypes.c_longlong(wbytes // 16); sp = ctypes.c_void_p(sink.data_ptr())
                params = (ctypes.c_void_p * 3)(ctypes.addressof(p), ctypes.addressof(n16), ctypes.addressof(sp))
                ck(cu.cuLaunchKernel(stream_fn, sms * 4, 1, 1, 512, 1, 1, 0, ctypes.c_void_p(stream), params, None), "stream")
            return reps
        strm = graph_time(stream_calls, label=f"strm_{case['dtype']}_{m}x{n}x{k}x{nb}")
        print(f"{case['dtype']} {m}x{n}x{k}: serving cuBLAS {base_srv:.2f} us ({strm / base_srv * 100:.0f}% strm), "
              f"streaming read {strm:.2f} us, {copies} copies x {reps // copies}", flush=True)
    err_base = ((out.double() - ref).norm() / ref.norm()).item()
    maxrel_base = ((out.double() - ref).abs().max() / ref.abs().max()).item()
    floor = case.get("err_floor", 1e-6)
    nbytes = (m * k + k * n + m * n) * W.element_size() * nb
    best = None
    # One workspace for every variant (poisoned again before each), and the first variant timed once more
    # before its timed pass: without both, the first variant of a case ran 0.8 us slower than an identical
    # later one (1024^3 strict f32, 19.5 against 18.7 us, serving regime, H200, session 40).
    ws_all = torch.empty((max([v.get("workspace", 0) for v in case["variants"]] + [1]),), dtype=torch.uint8, device=dev)
    warm = serving
    for (name, cubin, log), var in zip(compiled, case["variants"]):
        if cubin is None:
            print(f"{name}: compile failed\n{log[-600:]}"); continue
        launches = var.get("launches") or [{"entry": entry, "grid": var["grid"], "block": var["block"],
                                             "smem": var.get("smem", 0)}]
        fns = [load(cubin, l["entry"]) for l in launches]
        for f, l in zip(fns, launches):
            if "carveout" in l:  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent of the maximum
                ck(cu.cuFuncSetAttribute(f, 9, int(l["carveout"])), "carveout")
        ws = ws_all[:max(var.get("workspace", 0), 1)]
        ws.fill_(0xFF)
        out.fill_(float("nan"))
        args = Args(W.data_ptr(), X.data_ptr(), out.data_ptr(), ws.data_ptr(), m, n, k, lda, ldb, m, *strides, nb, 1.0, 0.0, bias_ptr)
        stream = torch.cuda.current_stream().cuda_stream
        def run(fns=fns, launches=launches, args=args, stream=stream):
            for f, l in zip(fns, launches):
                launch(f, l["grid"], l["block"], l.get("smem", 0), args, stream, l.get("pdl", False))
        run(); torch.cuda.synchronize()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        maxrel = ((out.double() - ref).abs().max() / ref.abs().max()).item()
        ok = err == err and err <= 2 * err_base + floor and (floor >= 1e-6 or maxrel <= 2 * maxrel_base + floor)
        t = timed(run)
        srv, t_rank = "", t
        if serving:
            argsets = [Args(w.data_ptr(), X.data_ptr(), out.data_ptr(), ws.data_ptr(), m, n, k, lda, ldb, m, *strides, nb, 1.0, 0.0, bias_ptr)
                       for w in Ws]
            def var_calls(stream, fns=fns, launches=launches, argsets=argsets):
                for i in range(reps):
                    for j, (f, l) in enumerate(zip(fns, launches)):
                        launch(f, l["grid"], l["block"], l.get("smem", 0), argsets[i % copies], stream,
                               l.get("pdl", False) or (j == 0 and var.get("pdl_first", False)))
                return reps
            if warm:
                graph_time(var_calls)
                warm = False
            ts_ = graph_time(var_calls, label=name)
            if var.get("trace"):
                # The stamps of the graph's last call (wg_trace.py), one slot row per CTA of the first launch.
                import wg_trace
                torch.cuda.synchronize()
                dptr, size = ctypes.c_ulonglong(), ctypes.c_size_t()
                ck(cu.cuModuleGetGlobal_v2(ctypes.byref(dptr), ctypes.byref(size), modules[cubin], b"kd_trace_buf"),
                   "kd_trace_buf (built with KD_TRACE=1?)")
                raw = ctypes.create_string_buffer(size.value)
                ck(cu.cuMemcpyDtoH_v2(raw, dptr, size), "trace read-back")
                open(os.path.join(out_dir, name + ".trace"), "wb").write(raw.raw)
                g = launches[0]["grid"]
                wg_trace.report(raw.raw, g[0] * g[2], name)
            srv = f" | serving {ts_:.2f}us vs cublas {base_srv:.2f}us x{base_srv/ts_:.3f} {strm/ts_*100:.0f}%strm"
            t_rank = ts_
        shown = {kk: vv for kk, vv in var.items() if kk not in ("launches",)}
        print(f"{name} {shown} err={err:.2e} (cublas {err_base:.2e}) maxrel={maxrel:.2e} (cublas {maxrel_base:.2e}) {t:.1f}us vs cublas {base:.1f}us "
              f"x{base/t:.2f} {nbytes/(t*1e-6)/bw*100:.0f}%bw {2*m*n*k*nb/(t*1e-6)/1e12:.1f}TFLOP/s {'OK' if ok else 'WRONG'}{srv}", flush=True)
        if ok and (best is None or t_rank < best[0]):
            best = (t_rank, shown)
    if best:
        # Serving: ranked by the serving time, with cuBLAS's serving time and % of the streaming read.
        b0, ref = (base_srv, nbytes / (strm * 1e-6)) if serving else (base, bw)
        rows.append((case["dtype"], m, n, k, b0, best[0], b0 / best[0], nbytes / (best[0] * 1e-6) / ref * 100,
                     nbytes / (b0 * 1e-6) / ref * 100, best[1]))
unit = "%strm" if serving else "%bw"
print(f"\n{'serving regime' if serving else 'isolated, cold L2'}")
print(f"dtype  m      n   k      cublas_us  best_us  speedup  {unit}(best)  {unit}(cublas)  config")
for r in rows:
    print(f"{r[0]:5s} {r[1]:6d} {r[2]:3d} {r[3]:6d} {r[4]:9.2f} {r[5]:8.2f} {r[6]:7.3f}x {r[7]:8.0f}% {r[8]:10.0f}%  {r[9]}")
