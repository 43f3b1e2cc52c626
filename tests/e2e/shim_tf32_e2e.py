#!/usr/bin/env python3
"""The TF32 class under libkdispatch_cublas.so (issue 30; GPU machine, run by the lead).

    python3 tests/e2e/shim_tf32_e2e.py --shim build/shims/libkdispatch_cublas.so \
        --prewarm-cmd "kdctl prewarm {shapes} --socket S --cache-dir C" --env KD_CACHE_DIR=C \
        --env KD_SOCKET=S [--size 4096]

An fp32 PyTorch application that allows TF32 (torch.backends.cuda.matmul.allow_tf32 = True), so its
f32 GEMMs are keyed precision=tf32: torch.mm of SIZE^3 in the four transpose combinations cuBLAS
sees (a @ b, a.T @ b, a @ b.T, a.T @ b.T with every operand contiguous), each called back to back
eagerly and once replayed from a CUDA graph capture. Stages:
  1. without the shim: the reference outputs and ms per call;
  2. the shim on an empty cache with KD_RECORD: outputs bit-identical to stage 1, the four keys
     recorded with precision=tf32;
  3. --prewarm-cmd on the recorded keys, then the shim again: every output (eager and replayed)
     within the TF32 class of stage 1's (error against fp64 at most 2x stage 1's plus 1e-6), hits
     counted, the shim's fallback reasons printed (a capture whose record needs more workspace than
     PyTorch lent cuBLAS falls back as workspace_too_small, and its output is cuBLAS's).
The table last: ms per call without and with the shim in the same session, and the speedup.
Exit status 0 only when every check passed.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_common as common  # noqa: E402

CASES = ["NN", "TN", "NT", "TT"]  # op(a) @ op(b) in torch's row-major terms: T is a transposed view
ERROR_FLOOR = 1e-6
CALLS = 20


def worker(args):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    dev = torch.device("cuda")
    s = args.size
    gen = torch.Generator().manual_seed(30)

    def rnd():
        return torch.randn(s, s, generator=gen, dtype=torch.float64).to(dev, torch.float32)

    a, b = rnd(), rnd()
    outputs, refs, ms = {}, {}, {}
    with torch.no_grad():
        for case in CASES:
            op_a = a.t() if case[0] == "T" else a
            op_b = b.t() if case[1] == "T" else b

            def fn(op_a=op_a, op_b=op_b):
                return torch.mm(op_a, op_b)

            refs[case] = (op_a.double() @ op_b.double()).cpu()
            outputs[f"{case}/eager"] = fn().cpu()
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(CALLS):
                fn()
            end.record()
            end.synchronize()
            ms[case] = start.elapsed_time(end) / CALLS
            outputs[f"{case}/graph"] = common.replayed_output(torch, fn)
    torch.save({"outputs": outputs, "refs": refs, "ms": ms}, args.out)


def rel_error(out, ref):
    import torch

    out64 = out.double()
    if not torch.isfinite(out64).all():
        return float("inf")
    return (out64 - ref).abs().max().item() / (ref.abs().max().item() or 1.0)


def main():
    parser = common.driver_arguments(__doc__)
    parser.add_argument("--size", type=int, default=4096, help="m = n = k of every call")
    args = common.parse_driver(parser, worker)
    import torch

    script = Path(__file__).resolve()
    work, env, checks = common.start_driver(args)
    size = ["--size", args.size]

    common.run_worker(script, ["--worker", "tf32", "--out", work / "noshim.pt", *size], log_prefix=work / "noshim")
    base = torch.load(work / "noshim.pt")

    record = work / "recorded_shapes.txt"
    record.unlink(missing_ok=True)
    _, err = common.run_worker(script, ["--worker", "tf32", "--out", work / "shim_empty.pt", *size], shim=args.shim,
                               env={**env, "KD_RECORD": str(record), "KD_STATS": "1"}, log_prefix=work / "shim_empty")
    empty = torch.load(work / "shim_empty.pt")
    for name, out in base["outputs"].items():
        checks.check(torch.equal(empty["outputs"][name], out), f"empty cache: {name} bit-identical to no shim")
    lines = record.read_text().splitlines() if record.exists() else []
    print("  recorded shapes:\n    " + "\n    ".join(lines))
    recorded = [common.key_tokens(line) for line in lines]
    layouts = {(t.get("ta"), t.get("tb")) for t in recorded
               if t.get("a") == "f32" and t.get("precision") == "tf32" and t.get("m") == str(args.size)}
    checks.check(len(layouts) == 4, f"KD_RECORD holds the four layouts with precision=tf32 ({sorted(layouts)})")

    if not common.prewarm(args, record):
        checks.skip("prewarmed stage: no --prewarm-cmd given")
        return checks.finish()
    # The preloaded run right after a plain one, so both time the GPU in the same state.
    common.run_worker(script, ["--worker", "tf32", "--out", work / "noshim2.pt", *size], log_prefix=work / "noshim2")
    plain = torch.load(work / "noshim2.pt")
    _, err = common.run_worker(script, ["--worker", "tf32", "--out", work / "shim_warm.pt", *size], shim=args.shim,
                               env={**env, "KD_STATS": "1"}, log_prefix=work / "shim_warm")
    warm = torch.load(work / "shim_warm.pt")
    for name, out in base["outputs"].items():
        ref = base["refs"][name.split("/")[0]]
        e_base, e_shim = rel_error(out, ref), rel_error(warm["outputs"][name], ref)
        bound = 2 * e_base + ERROR_FLOOR
        checks.check(e_shim <= bound, f"prewarmed: {name} error {e_shim:.3g} <= {bound:.3g} (no shim {e_base:.3g})")
    stats = common.parse_stats(err)
    checks.check(stats is not None and stats["hits"] > 0, f"prewarmed: hits counted ({stats})")
    if stats:
        print(f"  fallback reasons: {stats.get('reasons', '(none)')}")

    print(f"\nTF32 class, torch.mm {args.size}^3, ms per call ({CALLS} eager calls back to back)")
    print("layout  plain_ms  preloaded_ms  speedup")
    for case in CASES:
        p, w = plain["ms"][case], warm["ms"][case]
        print(f"{case:6s}  {p:8.3f}  {w:12.3f}  {p / w:6.2f}x")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
