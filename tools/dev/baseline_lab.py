#!/usr/bin/env python3
"""cuBLAS (through torch) over a shape list, cold L2 flushed by reads and by writes, with the two
roofline numbers measured in the same run and an empty-kernel calibration. Developer tool.
usage: baseline_lab.py SHAPES.txt"""
import sys, torch
dev = torch.device("cuda")
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
rd = torch.randn(64 << 20, device=dev); sink = torch.empty(1, device=dev)
wr = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
def timed(fn, flush, iters=30):
    ts = []
    for _ in range(iters):
        if flush == "read": torch.sum(rd, dim=0, keepdim=True, out=sink)
        else: wr.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e) * 1000)
    ts.sort(); return ts[len(ts) // 2]
big = torch.empty(1 << 30, dtype=torch.uint8, device=dev); big2 = torch.empty_like(big)
copy_bw = 2 * (1 << 30) / (timed(lambda: big2.copy_(big), "read", 10) * 1e-6)
x1 = torch.zeros(1, device=dev)
empty = timed(lambda: x1.add_(1), "read", 50)
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16); b = torch.randn_like(a)
peak_bf16 = 2 * 8192 ** 3 / (timed(lambda: a @ b, "read", 10) * 1e-6)
a32 = torch.randn(8192, 8192, device=dev); b32 = torch.randn_like(a32)
torch.backends.cuda.matmul.allow_tf32 = False
peak_f32 = 2 * 8192 ** 3 / (timed(lambda: a32 @ b32, "read", 5) * 1e-6)
print(f"copy {copy_bw/1e12:.2f} TB/s, empty kernel {empty:.1f} us, bf16 mm {peak_bf16/1e12:.0f} TFLOP/s, f32 mm {peak_f32/1e12:.1f} TFLOP/s")
print("dtype ta m      n     k      cublas_read_us cublas_write_us  floor_us  %roof(read) %roof(write)")
for line in open(sys.argv[1]):
    if not line.startswith("gemm"): continue
    kv = dict(t.split("=", 1) for t in line.split()[1:])
    m, n, k = int(kv["m"]), int(kv["n"]), int(kv["k"]); dt = DT[kv["a"]]
    if kv["ta"] == "T":   # nn.Linear: C(m x n) = W(m x k) . X(n x k)^T
        W = torch.randn(m, k, device=dev).to(dt); X = torch.randn(n, k, device=dev).to(dt)
        out = torch.empty(n, m, device=dev, dtype=dt); fn = lambda: torch.mm(X, W.t(), out=out)
    else:                 # torch.mm(A, B) row-major == cuBLAS N,N on the transposed problem
        A = torch.randn(n, k, device=dev).to(dt); B = torch.randn(k, m, device=dev).to(dt)
        out = torch.empty(n, m, device=dev, dtype=dt); fn = lambda: torch.mm(A, B, out=out)
    es = torch.finfo(dt).bits // 8
    nbytes = (m * k + k * n + m * n) * es; fl = 2 * m * n * k
    floor = max(nbytes / copy_bw, fl / (peak_bf16 if dt != torch.float32 else peak_f32)) * 1e6
    r, w = timed(fn, "read"), timed(fn, "write")
    print(f"{kv['a']:5s} {kv['ta']}  {m:6d} {n:5d} {k:6d} {r:12.1f} {w:14.1f} {floor:9.1f} {floor/r*100:10.0f}% {floor/w*100:10.0f}%", flush=True)
