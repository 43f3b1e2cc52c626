#!/usr/bin/env python3
"""fp32 training steps under libkdispatch_cublas.so (GPU machine; run by the lead).

    python3 tests/e2e/shim_fp32_training_e2e.py --shim build/shims/libkdispatch_cublas.so \
        [--prewarm-cmd "build/tools/kdctl/kdctl prewarm {shapes} --socket ..."] [--env KEY=VALUE] \
        [--layers 2] [--batch 4] [--seq 512] [--hidden 1024] [--heads 16] [--ffn 4096] [--steps 20] \
        [--tolerance 1e-5]

Forward and backward of a small pre-LayerNorm transformer (random weights; attention as explicit
batched matmuls, so that its GEMMs and their gradients are cuBLAS calls too) in strict fp32: TF32
off for matmuls and cuDNN, so every GEMM is keyed precision f32. A training step is the forward,
an MSE loss against a fixed target, and the backward into every parameter and the input: the
forward GEMMs (ta=T tb=N), the input gradients (ta=N tb=N), the weight gradients (ta=N tb=T) and the
attention's batched GEMMs in their layouts. Stages:
  1. without the shim: ms per step, the loss and every gradient, and the same step in fp64 (the
     reference);
  2. with the shim, empty cache, KD_RECORD: loss and gradients within --tolerance of stage 1 (and
     whether they are bit-identical), the recorded shapes, grouped by transposes;
  3. --prewarm-cmd on the recorded shapes, then with the shim and without it again, back to back:
     ms per step both ways, loss and gradients within --tolerance (norm-relative) of stage 1, each
     one's error against fp64 at most 2x the plain run's plus a floor (the gate's criterion, for the
     whole step), hits counted, and the shim's fallback reasons.
Default settings only: no KD_* variable but the cache and socket (and KD_RECORD, KD_STATS). Exit
status 0 only when every check passed.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_common as common  # noqa: E402

# Error against fp64 allowed beyond 2x the plain run's: a floor for tensors whose plain error is ~0.
FP64_FLOOR = 1e-7


def build(torch, args, dtype):
    """The model (a list of blocks), the input and the target, the same in every process and dtype."""
    F = torch.nn.functional
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(1234)
    d, ffn, heads = args.hidden, args.ffn, args.heads
    hd = d // heads

    def rnd(*shape, scale=1.0, offset=0.0):
        # Rounded to f32 first: the fp64 reference starts from the f32 model's exact values.
        values = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + offset
        return values.float().to(dev, dtype)

    def linear(in_f, out_f):
        return {"w": rnd(out_f, in_f, scale=in_f ** -0.5).requires_grad_(),
                "b": rnd(out_f, scale=0.02).requires_grad_()}

    blocks = []
    for _ in range(args.layers):
        blocks.append({
            "ln1": {"w": rnd(d, scale=0.05, offset=1.0).requires_grad_(), "b": rnd(d, scale=0.05).requires_grad_()},
            "qkv": linear(d, 3 * d), "proj": linear(d, d),
            "ln2": {"w": rnd(d, scale=0.05, offset=1.0).requires_grad_(), "b": rnd(d, scale=0.05).requires_grad_()},
            "up": linear(d, ffn), "down": linear(ffn, d),
        })
    x = rnd(args.batch, args.seq, d).requires_grad_()
    target = rnd(args.batch, args.seq, d)

    def block(p, h):
        b, t, _ = h.shape
        y = F.layer_norm(h, (d,), p["ln1"]["w"], p["ln1"]["b"])
        qkv = F.linear(y, p["qkv"]["w"], p["qkv"]["b"]).view(b, t, 3, heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.matmul(q, k.transpose(-1, -2)) * hd ** -0.5
        o = torch.matmul(att.softmax(-1), v).transpose(1, 2).reshape(b, t, d)
        h = h + F.linear(o, p["proj"]["w"], p["proj"]["b"])
        y = F.layer_norm(h, (d,), p["ln2"]["w"], p["ln2"]["b"])
        return h + F.linear(F.gelu(F.linear(y, p["up"]["w"], p["up"]["b"])), p["down"]["w"], p["down"]["b"])

    def leaves():
        out = {"x": x}
        for i, p in enumerate(blocks):
            for part, tensors in p.items():
                for name, tensor in tensors.items():
                    out[f"block{i}.{part}.{name}"] = tensor
        return out

    def step():
        """One training step: forward, loss, backward; returns the loss (a 0-d tensor)."""
        for tensor in leaves().values():
            tensor.grad = None
        h = x
        for p in blocks:
            h = block(p, h)
        loss = F.mse_loss(h, target)
        loss.backward()
        return loss.detach()

    return step, leaves


def worker(args):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # strict fp32: every GEMM keyed precision f32
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    step, leaves = build(torch, args, torch.float32)
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    time.sleep(0.5)  # kdispatch loads tuned kernels on its background thread after the first calls
    step()  # one more, on what was loaded
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        loss = step()
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / args.steps
    # The last timed step's loss and gradients (every step computes the same: no optimizer update).
    result = {"ms_per_step": ms, "loss": loss.cpu(),
              "grads": {name: t.grad.detach().cpu() for name, t in leaves().items()}}
    if args.reference:
        step64, leaves64 = build(torch, args, torch.float64)
        result["ref_loss"] = step64().cpu()
        result["ref_grads"] = {name: t.grad.detach().cpu() for name, t in leaves64().items()}
    print(f"{ms:.3f} ms per step, loss {loss.item():.6g}", flush=True)
    torch.save(result, args.out)


def main():
    parser = common.driver_arguments(__doc__)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--tolerance", type=float, default=1e-5,
                        help="norm-relative difference of the loss and each gradient from the plain run")
    parser.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)  # (worker) also in fp64
    args = common.parse_driver(parser, worker)
    import torch

    script = Path(__file__).resolve()
    work, env, checks = common.start_driver(args)
    model_args = ["--layers", args.layers, "--batch", args.batch, "--seq", args.seq, "--hidden", args.hidden,
                  "--heads", args.heads, "--ffn", args.ffn, "--steps", args.steps, "--warmup", args.warmup]

    def run(tag, shim, shim_env, extra=()):
        out = work / f"{tag}.pt"
        _, err = common.run_worker(script, ["--worker", "train", "--out", out] + model_args + list(extra),
                                   shim=shim, env=shim_env, log_prefix=work / tag)
        return torch.load(out), common.parse_stats(err)

    def compare(tag, result, base):
        """Loss and every gradient within --tolerance of the plain run; returns whether all are equal."""
        diffs = {"loss": common.norm_rel(result["loss"], base["loss"])}
        diffs.update({name: common.norm_rel(g, base["grads"][name]) for name, g in result["grads"].items()})
        worst = max(diffs, key=diffs.get)
        finite = bool(torch.isfinite(result["loss"])) and all(bool(torch.isfinite(g).all())
                                                              for g in result["grads"].values())
        checks.check(finite and diffs[worst] <= args.tolerance,
                     f"{tag}: loss and {len(result['grads'])} gradients within {args.tolerance:g} of the plain run "
                     f"(largest norm-relative difference {diffs[worst]:.3g}, {worst})")
        identical = torch.equal(result["loss"], base["loss"]) and all(
            torch.equal(g, base["grads"][name]) for name, g in result["grads"].items())
        print(f"  {tag}: bit-identical to the plain run: {'yes' if identical else 'no'}")
        return diffs

    base, _ = run("noshim", None, None, ["--reference"])
    print(f"  plain: {base['ms_per_step']:.3f} ms per step")

    record = work / "recorded_shapes.txt"
    record.unlink(missing_ok=True)
    # The empty-cache run records; it reports no misses to the daemon: with the daemon's default
    # buckets they would queue ranges of n ahead of the exact shapes prewarmed below (a miss's job
    # outranks a prewarm's by its calls), and the prewarm would wait for their searches.
    unreported = {**env, "KD_SOCKET": str(work / "no-daemon.sock")}
    empty, stats = run("shim_empty", args.shim, {**unreported, "KD_RECORD": str(record), "KD_STATS": "1"})
    print(f"  empty-cache stats: {stats}")
    compare("empty cache", empty, base)
    lines = record.read_text().splitlines() if record.exists() else []
    checks.check(len(lines) > 0, f"KD_RECORD recorded {len(lines)} distinct shapes")
    print("  recorded shapes:\n    " + "\n    ".join(lines))
    layouts = {}
    for line in lines:
        t = common.key_tokens(line)
        if t.get("a") == "f32":
            layouts.setdefault(f"ta={t.get('ta')} tb={t.get('tb')}", []).append(line)
    for layout, found in sorted(layouts.items()):
        print(f"  f32 {layout}: {len(found)} shapes")
    for layout in ("ta=T tb=N", "ta=N tb=N", "ta=N tb=T"):
        checks.check(layout in layouts, f"the step's f32 GEMMs include {layout} (forward, input and weight gradients)")
    checks.check(all("precision=tf32" not in line for line in lines), "no GEMM keyed precision tf32 (TF32 is off)")

    if not common.prewarm(args, record):
        checks.skip("prewarmed stage: no --prewarm-cmd given")
        return checks.finish()
    # The tuned run and a plain run again, back to back, so both see the GPU in the same state.
    warm, stats = run("shim_warm", args.shim, {**env, "KD_STATS": "1"})
    plain, _ = run("noshim_again", None, None)
    print(f"  prewarmed stats: {stats}")
    checks.check(stats is not None and stats["hits"] > 0, "prewarmed: hits counted")
    if stats is not None:
        print(f"  fallback reasons: {stats.get('reasons', 'none')}")
    diffs = compare("prewarmed", warm, base)

    # The gate's criterion for the whole step: each tensor's error against fp64 at most 2x the plain run's.
    refs = {"loss": base["ref_loss"], **base["ref_grads"]}
    got = {"loss": warm["loss"], **warm["grads"]}
    plain_got = {"loss": base["loss"], **base["grads"]}
    table = []
    print(f"\n{'tensor':<24}{'diff vs plain':>15}{'err shim':>12}{'err plain':>12}")
    for name, ref in refs.items():
        e_shim, e_plain = common.norm_rel(got[name], ref), common.norm_rel(plain_got[name], ref)
        table.append({"tensor": name, "diff_vs_plain": diffs[name], "err_shim": e_shim, "err_plain": e_plain})
        print(f"{name:<24}{diffs[name]:>15.3g}{e_shim:>12.3g}{e_plain:>12.3g}")
        checks.check(e_shim <= 2 * e_plain + FP64_FLOOR,
                     f"prewarmed: {name} error against fp64 {e_shim:.3g} <= 2 x {e_plain:.3g} + {FP64_FLOOR:g}")
    t0, t1 = plain["ms_per_step"], warm["ms_per_step"]
    print(f"\nms per step: plain {t0:.3f}, shim {t1:.3f}, speedup {t0 / t1:.3f}x "
          f"(first plain run {base['ms_per_step']:.3f})")
    summary = {"plain_ms_per_step": t0, "shim_ms_per_step": t1, "speedup": t0 / t1,
               "fallback_reasons": (stats or {}).get("reasons", ""), "tensors": table}
    (work / "train_summary.json").write_text(json.dumps(summary, indent=2))
    print(f"summary: {work / 'train_summary.json'}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
