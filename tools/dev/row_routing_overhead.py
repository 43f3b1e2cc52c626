"""Routing overhead of kdispatch.torch (lab, GPU machine): eager fp32 BERT (4 layers, 32 x 128) and
bare softmax / layer_norm calls, plain against routed with a cache that answers nothing (every row
call falls back), in three modes: plain torch; "python", the package's Python overrides
(KD_TORCH_NATIVE=0); "native", its C++ overrides (the default). One mode per process; *_host_us is
the host's time per call. (Session 27, H100, host us per call in three to five
processes each, plain / the Python overrides before their routing cache / Python / native:
layernorm 12-21 / 38-66 / 31-54 / 22, softmax 7-10 / 24-40 / 18-19 / 11.) Run with KDISPATCH_LIB=bundle/lib/libkdispatch.so,
KD_CACHE_DIR an empty directory and KD_SOCKET a path no daemon serves."""
import os, subprocess, sys, time, json
mode = sys.argv[1] if len(sys.argv) > 1 else None
if mode is None:
    out = {}
    for m in ["plain", "python", "native"] * int(os.environ.get("ROUNDS", "2")):
        r = subprocess.run([sys.executable, __file__, m], capture_output=True, text=True)
        print(m, r.stdout.strip(), r.stderr.strip()[-300:] if r.returncode else "", flush=True)
    sys.exit(0)
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
if mode in ("python", "native"):
    import kdispatch.torch as kt
    kt.enable(native=(mode == "native"))
dev = torch.device("cuda")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from e2e_common import bert_encoder
bert = bert_encoder(4, dev)
x = torch.randn(65536, 128, device=dev)
h = torch.randn(4096, 1024, device=dev)
ln = torch.nn.LayerNorm(1024).to(dev)
res = {}
with torch.no_grad():
    for name, fn, n in [("bert_ms", bert, 20),
                        ("softmax_us", lambda: torch.softmax(x, -1), 400),
                        ("layernorm_us", lambda: ln(h), 400)]:
        for _ in range(5): fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n): fn()
        host = time.perf_counter() - t0
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        scale = 1e3 if name.endswith("ms") else 1e6
        res[name] = round(wall / n * scale, 2)
        res[name.replace("_ms", "").replace("_us", "") + "_host_us"] = round(host / n * 1e6, 1)
if mode != "plain":
    res["stats"] = kt.stats()
print(json.dumps(res))
