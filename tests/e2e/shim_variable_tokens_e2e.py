#!/usr/bin/env python3
"""Variable token counts under libkdispatch_cublas.so (issue 29; GPU machine, run by the lead).

    python3 tests/e2e/shim_variable_tokens_e2e.py --shim build/shims/libkdispatch_cublas.so \
        --kdctl build/bin/kdctl --prewarm-cmd "kdctl prewarm {shapes} --socket S --cache-dir C" \
        --env KD_CACHE_DIR=C --env KD_SOCKET=S [--targets bert,decode]

Two workloads whose token count n changes from call to call, each run without the shim, with the
shim on an empty cache (KD_RECORD), then prewarmed with the recorded n merged into buckets by
`kdctl record --buckets SPEC`, and with the shim again:

  bert    a BERT-style fp32 encoder (hidden 768, 12 heads, FFN 3072, --bert-layers layers) served
          with variable batches of sequences of 128 tokens: --bert-batches gives n = 128 x batch,
          at least 20 distinct n between 128 and 8192, in a shuffled order, --bert-passes times.
          Checks: the recorded n fall into at most --max-buckets buckets (default buckets); after
          prewarming, at least 95% of the measured GEMM calls are hits (kd_stats deltas around the
          measured passes, after one warm-up pass over every n), the run is at least 1.8x faster
          than without the shim, and the outputs agree with it within strict fp32's class.
  decode  a decoder (fused QKV and gate/up as vLLM has them) in --decode-dtype, one decode step per
          batch size captured in a CUDA graph and replayed, over vLLM's capture sizes 1, 2, 4,
          8..512 by 8 (--decode-sizes to pick fewer). Buckets --decode-buckets (the daemon's
          default: 10 for sizes 1-512; vllm: one capture size per bucket). Checks: after
          prewarming, every GEMM call made while capturing is answered by the cache: a hit (a
          tuned kernel) or a vendor verdict (KD_FALLBACK_VENDOR_CHOSEN: the bucket was searched and
          cuBLAS stayed the fastest), never a miss or another fallback; and tokens/s at every size
          is no worse than without the shim (within --tps-noise). The table shows both counts.

The prewarm command is run on the bucketed list; ranges (n=LO..HI) are searched by the daemon's
range search. Exit status 0 only when every check passed.
"""

import ctypes
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_common as common  # noqa: E402

VLLM_SIZES = [1, 2, 4] + list(range(8, 513, 8))
DEFAULT_BERT_BATCHES = "1,2,3,4,5,6,8,10,12,14,16,20,24,28,32,36,40,44,48,52,56,60,62,64"
DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
KD_FALLBACK_REASON_MAX = 32


class KdStats(ctypes.Structure):
    """kdispatch.h's kd_stats_t."""
    _fields_ = [("hits", ctypes.c_uint64), ("misses", ctypes.c_uint64),
                ("fallbacks", ctypes.c_uint64 * KD_FALLBACK_REASON_MAX),
                ("loads", ctypes.c_uint64), ("load_failures", ctypes.c_uint64), ("swaps", ctypes.c_uint64),
                ("reports_queued", ctypes.c_uint64), ("reports_dropped", ctypes.c_uint64),
                ("reports_sent", ctypes.c_uint64), ("generation", ctypes.c_uint64), ("entries", ctypes.c_uint64),
                ("daemon_connected", ctypes.c_int)]


def kd_counters():
    """(hits, fallbacks, fallback reasons) of the libkdispatch this process has loaded through the
    shim; None without the shim."""
    try:
        lib = ctypes.CDLL("libkdispatch.so.0", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        return None
    s = KdStats()
    if lib.kd_stats(ctypes.byref(s)) != 0:
        return None
    lib.kd_fallback_reason_name.restype = ctypes.c_char_p
    reasons = {lib.kd_fallback_reason_name(i).decode(): s.fallbacks[i]
               for i in range(KD_FALLBACK_REASON_MAX) if s.fallbacks[i]}
    return {"hits": s.hits, "fallbacks": sum(s.fallbacks), "reasons": reasons}


def delta(before, after):
    if before is None or after is None:
        return None
    reasons = {k: v - before["reasons"].get(k, 0) for k, v in after["reasons"].items()
               if v - before["reasons"].get(k, 0)}
    return {"hits": after["hits"] - before["hits"], "fallbacks": after["fallbacks"] - before["fallbacks"],
            "reasons": reasons}


def settled_run(args, env, run):
    """The measured run of a prewarmed stage, in the steady state a server reaches: a first run's
    misses (an n no prewarmed bucket covers) queue searches, which run
    beside the application at search_duty_cycle; a run of a fraction of a second measured during
    one of their evaluations would time the evaluation's burst, not the kernels. So one run, a
    wait until the daemon is idle, then the measured run."""
    def measured(tag):
        first = run(tag + "-first")
        idle = common.wait_for_idle_daemon(args.kdctl, {**os.environ, **env})
        print(f"  {tag}: {'the daemon is idle' if idle else 'the daemon did not become idle'} before the measured run",
              flush=True)
        return run(tag)
    return measured


# ---- bert ------------------------------------------------------------------------------------

def bert_worker(args):
    import torch
    F = torch.nn.functional
    torch.backends.cuda.matmul.allow_tf32 = False  # strict fp32, as a BERT service in fp32 runs
    dev = torch.device("cuda")
    hidden, heads, inter, seq = 768, 12, 3072, 128
    gen = torch.Generator(device=dev).manual_seed(5)

    def weight(o, i):
        return torch.randn(o, i, device=dev, generator=gen) * i ** -0.5

    layers = [{"qkv": weight(3 * hidden, hidden), "o": weight(hidden, hidden),
               "up": weight(inter, hidden), "down": weight(hidden, inter)} for _ in range(args.bert_layers)]

    def encode(x):
        b = x.shape[0]
        h = x.reshape(b * seq, hidden)  # n = b * seq tokens in every linear
        for p in layers:
            q, k, v = F.linear(h, p["qkv"]).view(b, seq, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).permute(0, 2, 1, 3).reshape(b * seq, hidden)
            h = F.layer_norm(h + F.linear(a, p["o"]), (hidden,))
            h = F.layer_norm(h + F.linear(F.gelu(F.linear(h, p["up"])), p["down"]), (hidden,))
        return h.view(b, seq, hidden)

    batches = [int(b) for b in args.bert_batches.split(",")]
    inputs = {b: torch.randn(b, seq, hidden, device=dev, generator=gen) for b in batches}
    order = [b for _ in range(args.bert_passes) for b in batches]
    random.Random(3).shuffle(order)
    result = {"outputs": {}, "seconds": 0.0, "counters": None}
    with torch.no_grad():
        for b in batches:  # warm-up: every n once (allocator, heuristics, kdispatch's loads)
            encode(inputs[b])
        torch.cuda.synchronize()
        time.sleep(0.2)
        for b in batches:
            encode(inputs[b])
        torch.cuda.synchronize()
        before = kd_counters()
        start = time.perf_counter()
        for b in order:
            encode(inputs[b])
        torch.cuda.synchronize()
        result["seconds"] = time.perf_counter() - start
        result["counters"] = delta(before, kd_counters())
        for b in batches:
            result["outputs"][b] = encode(inputs[b]).cpu()
    torch.save(result, args.out)
    print(f"bert: {len(order)} batches in {result['seconds']:.3f} s; counters {result['counters']}", flush=True)


def run_bert(args, ctx):
    import torch
    checks, work, env = ctx["checks"], ctx["work"], ctx["env"]
    model = ["--bert-layers", args.bert_layers, "--bert-batches", args.bert_batches, "--bert-passes", args.bert_passes]
    ns = sorted({128 * int(b) for b in args.bert_batches.split(",")})
    checks.check(len(ns) >= 20 and ns[0] >= 128 and ns[-1] <= 8192,
                 f"bert: {len(ns)} distinct n between {ns[0]} and {ns[-1]}")

    def run(tag, shim, shim_env):
        out = work / f"bert-{tag}.pt"
        _, err = common.run_worker(ctx["script"], ["--worker", "bert", "--out", out] + model, shim=shim, env=shim_env,
                                   log_prefix=work / f"bert-{tag}")
        return torch.load(out), common.parse_stats(err)

    plain, _ = run("noshim", None, None)
    record = work / "bert-recorded.txt"
    record.unlink(missing_ok=True)
    run("empty", args.shim, {**env, "KD_RECORD": str(record), "KD_STATS": "1"})
    buckets = bucketed(args, record, work / "bert-buckets.txt", "default")
    ranges = {common.key_tokens(line).get("n") for line in buckets}
    checks.check(0 < len(ranges) <= args.max_buckets,
                 f"bert: the recorded n fall into {len(ranges)} bucket(s) (at most {args.max_buckets}): {sorted(ranges)}")
    if not common.prewarm(args, work / "bert-buckets.txt"):
        checks.skip("bert prewarmed stage: no --prewarm-cmd given")
        return
    settle_then_measure = settled_run(args, env, lambda tag: run(tag, args.shim, {**env, "KD_STATS": "1"}))
    warm, stats = settle_then_measure("warm")
    plain_again, _ = run("noshim-again", None, None)
    c = warm["counters"]
    calls = (c["hits"] + c["fallbacks"]) if c else 0
    rate = c["hits"] / calls if calls else 0.0
    print(f"  bert measured calls: {c}; shim totals {stats}")
    checks.check(calls > 0 and rate >= 0.95, f"bert: {rate:.1%} of {calls} measured GEMM calls are hits (at least 95%)")
    base_s = min(plain["seconds"], plain_again["seconds"])
    speedup = base_s / warm["seconds"]
    checks.check(speedup >= 1.8, f"bert: the run is {speedup:.2f}x as fast as without the shim (at least 1.8x; "
                                 f"{base_s:.3f} s vs {warm['seconds']:.3f} s)")
    worst = max(common.norm_rel(warm["outputs"][b], plain["outputs"][b]) for b in plain["outputs"])
    checks.check(worst <= 1e-4, f"bert: outputs within strict fp32's class (worst norm-relative {worst:.3g})")
    ctx["summary"]["bert"] = {"distinct_n": len(ns), "buckets": sorted(ranges), "hit_rate": rate,
                              "measured_calls": calls, "speedup": speedup, "worst_norm_rel": worst,
                              "reasons": c["reasons"] if c else {}}


# ---- decode ----------------------------------------------------------------------------------

def decode_worker(args):
    import torch
    F = torch.nn.functional
    dev = torch.device("cuda")
    dtype = getattr(torch, DTYPES[args.decode_dtype])
    hidden, inter, heads, kv_heads, head_dim, vocab = 4096, 14336, 32, 8, 128, 32000
    gen = torch.Generator(device=dev).manual_seed(9)

    def weight(o, i):
        return (torch.randn(o, i, device=dev, generator=gen) * i ** -0.5).to(dtype)

    layers = [{"qkv": weight((heads + 2 * kv_heads) * head_dim, hidden), "o": weight(hidden, heads * head_dim),
               "gate_up": weight(2 * inter, hidden), "down": weight(hidden, inter)} for _ in range(args.decode_layers)]
    embed = torch.randn(vocab, hidden, device=dev, generator=gen).to(dtype)
    lm_head = weight(vocab, hidden)

    def step(tokens):
        h = embed[tokens]
        for p in layers:  # attention over the step's own token only: the GEMMs are under test
            qkv = F.linear(h, p["qkv"])
            v = qkv[:, (heads + kv_heads) * head_dim:].repeat_interleave(heads // kv_heads, dim=1)
            h = h + F.linear(v, p["o"])
            g, u = F.linear(h, p["gate_up"]).chunk(2, dim=-1)
            h = h + F.linear(F.silu(g) * u, p["down"])
        return F.linear(h, lm_head)

    sizes = [int(s) for s in args.decode_sizes.split(",")]
    result = {"tps": {}, "capture": {}, "logits": {}}
    with torch.no_grad():
        for b in sizes:
            tok = torch.randint(0, vocab, (b,), device=dev, generator=gen)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up runs before capture, as vLLM does
                for _ in range(4):
                    step(tok)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            time.sleep(0.2)  # kdispatch loads the size's entries on its background thread
            graph = torch.cuda.CUDAGraph()
            before = kd_counters()
            with torch.cuda.graph(graph):
                logits = step(tok)
            result["capture"][b] = delta(before, kd_counters())
            for _ in range(3):
                graph.replay()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.decode_steps):
                graph.replay()
            end.record()
            torch.cuda.synchronize()
            result["tps"][b] = b * args.decode_steps / (start.elapsed_time(end) / 1000.0)
            result["logits"][b] = logits.float().cpu()
            del graph
    torch.save(result, args.out)
    print(f"decode: {len(sizes)} sizes; tokens/s {result['tps']}", flush=True)


def run_decode(args, ctx):
    import torch
    checks, work, env = ctx["checks"], ctx["work"], ctx["env"]
    model = ["--decode-layers", args.decode_layers, "--decode-sizes", args.decode_sizes, "--decode-steps",
             args.decode_steps, "--decode-dtype", args.decode_dtype]

    def run(tag, shim, shim_env):
        out = work / f"decode-{tag}.pt"
        _, err = common.run_worker(ctx["script"], ["--worker", "decode", "--out", out] + model, shim=shim,
                                   env=shim_env, log_prefix=work / f"decode-{tag}")
        return torch.load(out), common.parse_stats(err)

    plain, _ = run("noshim", None, None)
    record = work / "decode-recorded.txt"
    record.unlink(missing_ok=True)
    run("empty", args.shim, {**env, "KD_RECORD": str(record), "KD_STATS": "1"})
    buckets = bucketed(args, record, work / "decode-buckets.txt", args.decode_buckets)
    print(f"  decode: {len(buckets)} shapes to prewarm")
    if not common.prewarm(args, work / "decode-buckets.txt"):
        checks.skip("decode prewarmed stage: no --prewarm-cmd given")
        return
    warm, stats = settled_run(args, env, lambda tag: run(tag, args.shim, {**env, "KD_STATS": "1"}))("warm")
    plain_again, _ = run("noshim-again", None, None)
    print(f"  decode shim totals: {stats}")
    def vendor(c):
        return c["reasons"].get("vendor_chosen", 0) if c else 0

    # A vendor verdict is the cache's answer too: the call runs cuBLAS, nothing is reported or searched.
    missed = {b: c for b, c in warm["capture"].items()
              if c is None or c["fallbacks"] != vendor(c) or c["hits"] + vendor(c) == 0}
    answered = sum(c["hits"] + vendor(c) for c in warm["capture"].values() if c)
    tuned = sum(c["hits"] for c in warm["capture"].values() if c)
    checks.check(not missed, f"decode: every GEMM call captured at the {len(warm['capture'])} sizes is answered "
                             f"by the cache ({tuned} tuned kernels, {answered - tuned} vendor verdicts)"
                             + (f"; not at {sorted(missed)} ({list(missed.values())[:3]})" if missed else ""))
    slower = []
    print(f"\n{'size':>6}{'plain tok/s':>14}{'shim tok/s':>13}{'ratio':>8}{'tuned':>7}{'vendor':>8}")
    rows = []
    for b in sorted(plain["tps"]):
        base = max(plain["tps"][b], plain_again["tps"][b])
        ratio = warm["tps"][b] / base
        c = warm["capture"].get(b)
        hits, kept = (c["hits"], vendor(c)) if c else (0, 0)
        rows.append({"size": b, "plain_tps": base, "shim_tps": warm["tps"][b], "ratio": ratio,
                     "tuned_calls": hits, "vendor_calls": kept})
        print(f"{b:>6}{base:>14.1f}{warm['tps'][b]:>13.1f}{ratio:>8.3f}{hits:>7}{kept:>8}")
        if ratio < 1.0 - args.tps_noise:
            slower.append((b, round(ratio, 3)))
    checks.check(not slower, f"decode: tokens/s at every size no worse than plain (within {args.tps_noise:.0%})"
                             + (f"; slower at {slower}" if slower else ""))
    ctx["summary"]["decode"] = {"sizes": rows, "captures_not_all_hits": sorted(missed)}


# ---- shared ----------------------------------------------------------------------------------

def bucketed(args, recorded, out, spec):
    """`kdctl record --buckets spec` of the recorded shapes into `out`; its shape lines."""
    cmd = [args.kdctl, "record", "--buckets", spec, str(recorded), "-o", str(out)]
    print("record: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    lines = [line for line in out.read_text().splitlines() if line and not line.startswith("#")]
    print("  bucketed shapes:\n    " + "\n    ".join(lines))
    return lines


def main():
    parser = common.driver_arguments(__doc__)
    parser.add_argument("--kdctl", default="kdctl", help="kdctl executable (for kdctl record)")
    parser.add_argument("--targets", default="bert,decode", help="comma list of bert, decode")
    parser.add_argument("--max-buckets", type=int, default=8)
    parser.add_argument("--bert-layers", type=int, default=4)
    parser.add_argument("--bert-batches", default=DEFAULT_BERT_BATCHES)
    parser.add_argument("--bert-passes", type=int, default=3)
    parser.add_argument("--decode-layers", type=int, default=2)
    parser.add_argument("--decode-sizes", default=",".join(str(s) for s in VLLM_SIZES))
    parser.add_argument("--decode-steps", type=int, default=32)
    parser.add_argument("--decode-dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--decode-buckets", default="default", help="kdctl record --buckets for the decode shapes")
    parser.add_argument("--tps-noise", type=float, default=0.02,
                        help="a size counts as slower only below (1 - this) x plain tokens/s")
    args = common.parse_driver(parser, lambda a: {"bert": bert_worker, "decode": decode_worker}[a.worker](a))
    work, env, checks = common.start_driver(args)
    ctx = {"checks": checks, "work": work, "env": env, "script": Path(__file__).resolve(), "summary": {}}
    targets = args.targets.split(",")
    if "bert" in targets:
        run_bert(args, ctx)
    if "decode" in targets:
        run_decode(args, ctx)
    (work / "variable_tokens_summary.json").write_text(json.dumps(ctx["summary"], indent=2, default=str))
    print(f"summary: {work / 'variable_tokens_summary.json'}")
    return ctx["checks"].finish()


if __name__ == "__main__":
    sys.exit(main())
