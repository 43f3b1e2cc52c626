#!/usr/bin/env python3
"""End-to-end test of libkdispatch_cublas.so under PyTorch (GPU machine; run by the lead).

    python3 tests/e2e/shim_ops_e2e.py --shim build/shims/libkdispatch_cublas.so \
        [--prewarm-cmd "build/tools/kdctl/kdctl prewarm --shapes {shapes}"] [--env KD_CACHE=...]

Covers nn.Linear with and without bias, torch.mm and torch.bmm in fp32, fp16 and bf16, each run
eagerly and replayed from a torch.cuda.graph capture:
  1. empty cache: outputs bit-identical to a run without the shim; every case's GEMM is recorded
     by KD_RECORD (the shape list of the run), and KD_STATS counts misses and no hits;
  2. after prewarming the recorded shapes (--prewarm-cmd): outputs within the precision class of
     the run without the shim (error against fp64 at most 2x the no-shim error plus a floor), and
     hits counted;
  3. the same with KD_GRAPH_WORKSPACE=1 (records with a workspace run inside the captures).
Exit status 0 only when every check passed.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_common as common  # noqa: E402

DTYPES = ["fp32", "fp16", "bf16"]
KEY_DTYPE = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}
TOKENS, IN_FEATURES, OUT_FEATURES = 16, 512, 256
MM_M, MM_K, MM_N = 64, 128, 96          # torch.mm((64,128), (128,96))
BMM_B, BMM_M, BMM_K, BMM_N = 4, 64, 128, 32
# The cuBLAS column-major call each case must produce (a subset of the key's tokens).
EXPECTED_KEYS = {
    "linear_bias": {"ta": "T", "tb": "N", "m": str(OUT_FEATURES), "n": str(TOKENS),
                    "k": str(IN_FEATURES), "batch": "1", "epilogue": "bias"},
    "linear_nobias": {"ta": "T", "tb": "N", "m": str(OUT_FEATURES), "n": str(TOKENS),
                      "k": str(IN_FEATURES), "batch": "1", "epilogue": "none"},
    "mm": {"m": str(MM_N), "n": str(MM_M), "k": str(MM_K), "batch": "1", "epilogue": "none"},
    "bmm": {"m": str(BMM_N), "n": str(BMM_M), "k": str(BMM_K), "batch": str(BMM_B)},
}
# Error floors (relative to max |reference|) per dtype: the "small absolute floor" of the gate.
ERROR_FLOOR = {"fp32": 1e-6, "fp16": 1e-3, "bf16": 8e-3}


def worker(out_path):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays strict fp32
    dev = torch.device("cuda")
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    outputs, refs = {}, {}
    for name in DTYPES:
        dtype = dtypes[name]
        gen = torch.Generator().manual_seed(1234)

        def rnd(*shape, scale=1.0):
            return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dev, dtype)

        x = rnd(TOKENS, IN_FEATURES)
        lin_bias = torch.nn.Linear(IN_FEATURES, OUT_FEATURES, bias=True, device=dev, dtype=dtype)
        lin_nobias = torch.nn.Linear(IN_FEATURES, OUT_FEATURES, bias=False, device=dev, dtype=dtype)
        with torch.no_grad():
            lin_bias.weight.copy_(rnd(OUT_FEATURES, IN_FEATURES, scale=0.05))
            lin_bias.bias.copy_(rnd(OUT_FEATURES))
            lin_nobias.weight.copy_(rnd(OUT_FEATURES, IN_FEATURES, scale=0.05))
        a, b = rnd(MM_M, MM_K), rnd(MM_K, MM_N)
        ba, bb = rnd(BMM_B, BMM_M, BMM_K), rnd(BMM_B, BMM_K, BMM_N)

        cases = {
            "linear_bias": (lambda: lin_bias(x),
                            lambda: x.double() @ lin_bias.weight.double().T + lin_bias.bias.double()),
            "linear_nobias": (lambda: lin_nobias(x), lambda: x.double() @ lin_nobias.weight.double().T),
            "mm": (lambda: torch.mm(a, b), lambda: a.double() @ b.double()),
            "bmm": (lambda: torch.bmm(ba, bb), lambda: torch.bmm(ba.double(), bb.double())),
        }
        with torch.no_grad():
            for case, (fn, ref) in cases.items():
                refs[f"{name}/{case}"] = ref().cpu()
                outputs[f"{name}/{case}/eager"] = fn().cpu()
                torch.cuda.synchronize()
                outputs[f"{name}/{case}/graph"] = common.replayed_output(torch, fn)
    torch.save({"outputs": outputs, "refs": refs}, out_path)


def rel_error(out, ref):
    import torch

    out64 = out.double()
    scale = ref.abs().max().item() or 1.0
    if not torch.isfinite(out64).all():
        return float("inf")
    return (out64 - ref).abs().max().item() / scale


def main():
    args = common.parse_driver(common.driver_arguments(__doc__), lambda a: worker(a.out))
    import torch

    script = Path(__file__).resolve()
    work, env, checks = common.start_driver(args)

    common.run_worker(script, ["--worker", "ops", "--out", work / "noshim.pt"],
                      log_prefix=work / "noshim")
    base = torch.load(work / "noshim.pt")

    # 1. Empty cache: bit-identical, misses recorded.
    record = work / "recorded_shapes.txt"
    record.unlink(missing_ok=True)
    _, err = common.run_worker(
        script, ["--worker", "ops", "--out", work / "shim_empty.pt"], shim=args.shim,
        env={**env, "KD_RECORD": str(record), "KD_STATS": "1"}, log_prefix=work / "shim_empty")
    empty = torch.load(work / "shim_empty.pt")
    for name, ref_out in base["outputs"].items():
        checks.check(torch.equal(empty["outputs"][name], ref_out),
                     f"empty cache: {name} bit-identical to the run without the shim")
    stats = common.parse_stats(err)
    checks.check(stats is not None, "empty cache: KD_STATS report printed at exit")
    if stats:
        print(f"  stats: {stats}")
        checks.check(stats["hits"] == 0 and stats["misses"] > 0,
                     "empty cache: misses counted, no hits")
        checks.check(stats["real_missing"] == 0, "empty cache: every real cuBLAS function found")
    lines = record.read_text().splitlines() if record.exists() else []
    print("  recorded shapes:\n    " + "\n    ".join(lines))
    checks.check(len(lines) == len(set(lines)), "KD_RECORD lines are distinct")
    recorded = [common.key_tokens(line) for line in lines]
    for dtype in DTYPES:
        for case, want in EXPECTED_KEYS.items():
            want = {**want, "op": "gemm", "a": KEY_DTYPE[dtype]}
            found = any(all(t.get(k) == v for k, v in want.items()) for t in recorded)
            checks.check(found, f"KD_RECORD holds {dtype}/{case}: {want}")

    # 2. Prewarmed: within the precision class, hits counted.
    if not common.prewarm(args, record):
        checks.skip("prewarmed stage: no --prewarm-cmd given")
        return checks.finish()
    # 3. The prewarmed run again with KD_GRAPH_WORKSPACE=1 (records with a workspace then run
    #    inside the captures too).
    for tag, extra in (("prewarmed", {}), ("prewarmed, KD_GRAPH_WORKSPACE=1", {"KD_GRAPH_WORKSPACE": "1"})):
        out = work / ("shim_warm.pt" if not extra else "shim_warm_graphws.pt")
        _, err = common.run_worker(
            script, ["--worker", "ops", "--out", out], shim=args.shim,
            env={**env, "KD_STATS": "1", **extra}, log_prefix=out.with_suffix(""))
        warm = torch.load(out)
        for name, ref_out in base["outputs"].items():
            dtype, case, _ = name.split("/")
            ref = base["refs"][f"{dtype}/{case}"]
            e_base, e_shim = rel_error(ref_out, ref), rel_error(warm["outputs"][name], ref)
            bound = 2 * e_base + ERROR_FLOOR[dtype]
            checks.check(e_shim <= bound, f"{tag}: {name} error {e_shim:.3g} <= {bound:.3g} "
                                          f"(no-shim error {e_base:.3g})")
        stats = common.parse_stats(err)
        checks.check(stats is not None and stats["hits"] > 0, f"{tag}: hits counted ({stats})")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
