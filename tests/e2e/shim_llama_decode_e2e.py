#!/usr/bin/env python3
"""Llama-style decode under libkdispatch_cublas.so (GPU machine; run by the lead).

    python3 tests/e2e/shim_llama_decode_e2e.py --shim build/shims/libkdispatch_cublas.so \
        [--prewarm-cmd "build/tools/kdctl/kdctl prewarm --shapes {shapes}"] [--env KEY=VALUE] \
        [--dtypes bf16,f32] [--layers 4] [--batches 1,2,4,8,16] [--modes eager,graph] [--steps 64]

A small decoder stack with random weights (hidden 4096, intermediate 14336, 32 query heads and 8
KV heads of 128, vocabulary 32000, no RoPE: the GEMMs are what is under test), in each of --dtypes,
decoded greedily at each batch size, eagerly and/or with each step captured in a CUDA graph and
replayed, as serving engines do. Stages:
  1. without the shim: tokens/s, first-step logits and the token sequences;
  2. with the shim, empty cache, KD_RECORD: logits and tokens bit-identical to stage 1;
  3. --prewarm-cmd on the recorded shapes, then with the shim: tokens/s with and without the
     shim side by side, logits compared (norm-relative difference within the dtype's class:
     bf16 GEMMs, or strict fp32), token agreement reported, hits counted, and the shim's fallback
     reasons per dtype.
Default settings only: no KD_* variable but the cache and socket. One worker process per dtype
and stage. Exit status 0 only when every check passed.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_common as common  # noqa: E402

HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 4096, 14336, 32, 8, 128, 32000
# Norm-relative logits difference allowed, per dtype: bf16 GEMMs through several layers; strict
# fp32 (kernels at most 2x cuBLAS's error, compounded through the layers).
LOGITS_TOLERANCE = {"bf16": 5e-2, "f32": 1e-4}


def build_model(torch, layers, max_batch, max_len, seed, dtype_name):
    F = torch.nn.functional
    dev = torch.device("cuda")
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype_name]
    gen = torch.Generator(device=dev).manual_seed(seed)

    def weight(out_f, in_f):
        return torch.randn(out_f, in_f, device=dev, dtype=dtype, generator=gen) * in_f ** -0.5

    params = {
        "embed": torch.randn(VOCAB, HIDDEN, device=dev, dtype=dtype, generator=gen),
        "lm_head": weight(VOCAB, HIDDEN),
        "layers": [{
            "wq": weight(HEADS * HEAD_DIM, HIDDEN), "wk": weight(KV_HEADS * HEAD_DIM, HIDDEN),
            "wv": weight(KV_HEADS * HEAD_DIM, HIDDEN), "wo": weight(HIDDEN, HEADS * HEAD_DIM),
            "wg": weight(INTER, HIDDEN), "wu": weight(INTER, HIDDEN), "wd": weight(HIDDEN, INTER),
            "k_cache": torch.zeros(max_batch, KV_HEADS, max_len, HEAD_DIM, device=dev, dtype=dtype),
            "v_cache": torch.zeros(max_batch, KV_HEADS, max_len, HEAD_DIM, device=dev, dtype=dtype),
        } for _ in range(layers)],
    }
    positions = torch.arange(max_len, device=dev)
    group = HEADS // KV_HEADS

    def rms_norm(x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dtype)

    def step(tokens, pos):
        """One decode step for tokens (B,) at position pos (a 1-element tensor): logits (B, V)."""
        b = tokens.shape[0]
        h = params["embed"][tokens]
        mask = (positions <= pos).view(1, 1, 1, max_len)
        for p in params["layers"]:
            x = rms_norm(h)
            q = F.linear(x, p["wq"]).view(b, HEADS, 1, HEAD_DIM)
            k = F.linear(x, p["wk"]).view(b, KV_HEADS, 1, HEAD_DIM)
            v = F.linear(x, p["wv"]).view(b, KV_HEADS, 1, HEAD_DIM)
            kc, vc = p["k_cache"][:b], p["v_cache"][:b]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            kk = kc[:, :, None].expand(b, KV_HEADS, group, max_len, HEAD_DIM).reshape(b, HEADS, max_len, HEAD_DIM)
            vv = vc[:, :, None].expand(b, KV_HEADS, group, max_len, HEAD_DIM).reshape(b, HEADS, max_len, HEAD_DIM)
            attn = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
            h = h + F.linear(attn.reshape(b, HEADS * HEAD_DIM), p["wo"])
            x = rms_norm(h)
            h = h + F.linear(F.silu(F.linear(x, p["wg"])) * F.linear(x, p["wu"]), p["wd"])
        return F.linear(rms_norm(h), params["lm_head"])

    return step


def capture_step(torch, step, tok_buf, pos_buf):
    """One decode step captured in a CUDA graph: (graph, its logits buffer).

    Warms up before capturing, as servers do (vLLM's dummy runs, torch.compile's warm-up
    iterations): kdispatch loads a tuned kernel on its background thread after the first call that
    misses it, and a capture takes whatever is loaded when it runs."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(8):
            step(tok_buf, pos_buf)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    time.sleep(0.1)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        logits_buf = step(tok_buf, pos_buf)
    return graph, logits_buf


def decode(torch, step, batch, steps, mode, seed):
    """Greedy decode from fixed first tokens; returns (tokens/s, first logits, tokens)."""
    dev = torch.device("cuda")
    tok = torch.randint(0, VOCAB, (batch,), device=dev,
                        generator=torch.Generator(device=dev).manual_seed(seed + batch))
    tok_buf = tok.clone()
    pos_buf = torch.zeros(1, dtype=torch.long, device=dev)
    if mode == "graph":
        graph, logits_buf = capture_step(torch, step, tok_buf, pos_buf)

        def run_step():
            graph.replay()
            return logits_buf
    else:
        def run_step():
            return step(tok_buf, pos_buf)

    def run(n, keep):
        tok_buf.copy_(tok)
        first, seq = None, []
        for t in range(n):
            pos_buf.fill_(t)
            logits = run_step()
            nxt = logits.argmax(-1)
            if keep:
                if first is None:
                    first = logits.float().cpu()
                seq.append(nxt)
            tok_buf.copy_(nxt)
        return first, seq

    with torch.no_grad():
        run(min(steps, 8), keep=False)  # warm-up (allocator, cuBLAS heuristics, kdispatch loads)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        first, seq = run(steps, keep=True)
        end.record()
        torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1000.0
    return batch * steps / seconds, first, torch.stack(seq).cpu()


def worker(args):
    import torch

    batches = [int(b) for b in args.batches.split(",")]
    step = build_model(torch, args.layers, max(batches), args.steps + 8, seed=7, dtype_name=args.dtype)
    result = {"tps": {}, "logits": {}, "tokens": {}}
    for batch in batches:
        for mode in args.modes.split(","):
            tps, first, seq = decode(torch, step, batch, args.steps, mode, seed=11)
            name = f"{args.dtype} B={batch}/{mode}"
            result["tps"][name] = tps
            result["logits"][name] = first
            result["tokens"][name] = seq
            print(f"{name}: {tps:.1f} tokens/s", flush=True)
    torch.save(result, args.out)


def main():
    parser = common.driver_arguments(__doc__)
    parser.add_argument("--dtypes", default="bf16", help="comma list of bf16, f32")
    parser.add_argument("--dtype", default="bf16", help="(worker) its one dtype")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batches", default="1,2,4,8,16")
    parser.add_argument("--modes", default="eager,graph", help="comma list of eager, graph")
    parser.add_argument("--steps", type=int, default=64)
    args = common.parse_driver(parser, worker)
    import torch

    script = Path(__file__).resolve()
    work, env, checks = common.start_driver(args)
    dtypes = args.dtypes.split(",")
    model_args = ["--layers", args.layers, "--batches", args.batches, "--steps", args.steps, "--modes", args.modes]

    def run(tag, shim, shim_env):
        """One worker per dtype; the results merged, and the shim's counters per dtype."""
        merged, stats = {"tps": {}, "logits": {}, "tokens": {}}, {}
        for dt in dtypes:
            out = work / f"{tag}-{dt}.pt"
            _, err = common.run_worker(script, ["--worker", "decode", "--out", out, "--dtype", dt] + model_args,
                                       shim=shim, env=shim_env, log_prefix=work / f"{tag}-{dt}")
            part = torch.load(out)
            for field in merged:
                merged[field].update(part[field])
            stats[dt] = common.parse_stats(err)
        return merged, stats

    base, _ = run("noshim", None, None)

    record = work / "recorded_shapes.txt"
    record.unlink(missing_ok=True)
    empty, stats = run("shim_empty", args.shim, {**env, "KD_RECORD": str(record), "KD_STATS": "1"})
    print(f"  empty-cache stats: {stats}")
    for name in base["logits"]:
        checks.check(torch.equal(empty["logits"][name], base["logits"][name]) and
                     torch.equal(empty["tokens"][name], base["tokens"][name]),
                     f"empty cache: {name} logits and tokens bit-identical to the run without the shim")
    lines = record.read_text().splitlines() if record.exists() else []
    checks.check(len(lines) > 0, f"KD_RECORD recorded {len(lines)} distinct shapes")
    print("  recorded shapes:\n    " + "\n    ".join(lines))

    if not common.prewarm(args, record):
        checks.skip("prewarmed stage: no --prewarm-cmd given")
        return checks.finish()
    # The tuned run and a plain run again, back to back, so both see the GPU in the same state.
    warm, stats = run("shim_warm", args.shim, {**env, "KD_STATS": "1"})
    plain, _ = run("noshim_again", None, None)
    for dt in dtypes:
        s = stats.get(dt)
        print(f"  prewarmed stats, {dt}: {s}")
        checks.check(s is not None and s["hits"] > 0, f"prewarmed {dt}: hits counted")
        if s is not None:
            print(f"  {dt} fallback reasons: {s.get('reasons', 'none')}")

    table = []
    print(f"\n{'case':<20}{'plain tok/s':>13}{'shim tok/s':>12}{'speedup':>9}{'logits diff':>13}{'tokens agree':>14}")
    for name in base["logits"]:
        dt = name.split()[0]
        diff = common.norm_rel(warm["logits"][name], base["logits"][name])
        agree = (warm["tokens"][name] == base["tokens"][name]).float().mean().item()
        t0, t1 = plain["tps"][name], warm["tps"][name]
        table.append({"case": name, "noshim_tps": t0, "shim_tps": t1, "speedup": t1 / t0,
                      "logits_norm_rel_diff": diff, "token_agreement": agree,
                      "fallback_reasons": (stats.get(dt) or {}).get("reasons", "")})
        print(f"{name:<20}{t0:>13.1f}{t1:>12.1f}{t1 / t0:>9.3f}{diff:>13.3g}{agree:>14.3f}")
        finite = bool(torch.isfinite(warm["logits"][name]).all())
        tol = LOGITS_TOLERANCE[dt]
        checks.check(finite and diff <= tol,
                     f"prewarmed: {name} first-step logits within {tol} (norm-relative {diff:.3g})")
    (work / "decode_summary.json").write_text(json.dumps(table, indent=2))
    print(f"summary: {work / 'decode_summary.json'}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
