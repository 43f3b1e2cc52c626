#!/usr/bin/env python3
"""wg_tiled's timeline per CTA, for the kernel lab: where a warp-specialized (KD_WS) launch spends its time.

usage: wg_trace.py instrument OUT_DIR      copies search/src/builtin/kernels to OUT_DIR with trace stamps
       wg_trace.py report TRACE_FILE CTAS  summarises a trace that kernel_lab.py saved

The instrumented copy compiles exactly as the family's kernel unless KD_TRACE=1, which makes the first
thread of each warpgroup write its SM's clock at fixed points into the module's `kd_trace_buf` (128
slots per CTA). A kernel-lab variant with "KD_TRACE": 1 and "trace": true has that buffer read back after
its serving-regime timing (kernel_lab.py), so the stamps are those of the graph's last call, which ran
right behind the call before it, as a server's would. The stamps cost about 0.6-1.3 us a call on
the short-k bmm (H200), so time the same variant without them beside it.

Slots (clock64 unless said; a stamp is taken for k tiles i < 8 and segments s < 2 of the CTA):
  0 globaltimer at the start, 1 clock at the start, 2 clock after the grid-dependency wait;
  4 + i the producer saw k tile i land, 12 + i it published tile i (B split);
  24 + 20w + i consumer w got tile i, 32 + 20w + i it promoted tile i and released it,
  40 + 20w + s it finished the flush (stores) of its segment s;
  3 globaltimer at the end, 62 + w consumer w's end;
  64 + 24w + i consumer w issued tile i's wgmmas (its A fragments loaded and split), 72 + 24w + i they
  retired, 80 + 24w + i it promoted tile i (before releasing it). The retired stamp waits for the wgmmas
  itself (KD_TRACE=1 only), where the promotion would have.
The report puts every event in microseconds from the CTA's start (median, min and max over the CTAs).
The instrumentation finds its places by exact text and stops with the text it could not find, so a
change to the kernel's loops needs the anchors below updated with it (see docs/kernel-notes.md,
session 45, for what the trace showed).
"""
import os, shutil, statistics as st, struct, sys

SLOTS = 128  # per CTA, as KD_TRACE_SLOTS below
HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "../../search/src/builtin/kernels")

STAMPS = r'''#ifndef KD_TRACE
#define KD_TRACE 0
#endif
#define KD_TRACE_SLOTS 128
#if KD_TRACE
__device__ unsigned long long kd_trace_buf[1024 * KD_TRACE_SLOTS];
__device__ __forceinline__ unsigned long long kd_clk() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return c;
}
__device__ __forceinline__ unsigned long long kd_gt() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(c));
  return c;
}
#define KD_TR(slot) do { if ((threadIdx.x & 127) == 0) kd_trace_buf[(blockIdx.x + gridDim.x * blockIdx.z) * KD_TRACE_SLOTS + (slot)] = kd_clk(); } while (0)
#define KD_TRG(slot) do { if (threadIdx.x == 0) kd_trace_buf[(blockIdx.x + gridDim.x * blockIdx.z) * KD_TRACE_SLOTS + (slot)] = kd_gt(); } while (0)
// The stamp when the warpgroup's wgmmas retired: a wait of its own, only in the traced build.
#define KD_TRW(slot) do { kd_wg_wait<0>(); KD_TR(slot); } while (0)
#else
#define KD_TR(slot) do {} while (0)
#define KD_TRG(slot) do {} while (0)
#define KD_TRW(slot) do {} while (0)
#endif
'''

# (file, anchor, replacement): each anchor must occur exactly once.
EDITS = [
    ("wg_tiled.cu", '#include "wg_defaults.cuh"\n', '#include "wg_defaults.cuh"\n' + STAMPS),
    ("wg_tiled.cu", "kd_wg_tiled(kd_gemm_args args) {\n",
     "kd_wg_tiled(kd_gemm_args args) {\n  KD_TRG(0);\n  if (threadIdx.x == 0) KD_TR(1);\n"),
    ("wg_tiled.cu", "  extern __shared__ __align__(16) unsigned char smem_raw[];\n",
     "  if (threadIdx.x == 0) KD_TR(2);\n  extern __shared__ __align__(16) unsigned char smem_raw[];\n"),
    ("wg_tiled.cu", "        kt = 0;\n",
     "        if (s < 2) KD_TR(40 + 20 * wg + s);\n        kt = 0;\n"),
    ("wg_tiled.cu", "  kd_cp_wait<0>();\n#if KD_TMAST\n",
     "  kd_cp_wait<0>();\n  if (wg < 2) KD_TR(62 + wg);\n  if (threadIdx.x == 0) KD_TRG(3);\n#if KD_TMAST\n"),
    ("wg_tiled_pipeline.cuh", "    kd_bar_sync_loaders();\n    if constexpr (!KD_BLO && !KD_F16S) {",
     "    kd_bar_sync_loaders();\n    if (i < 8) KD_TR(4 + i);\n    if constexpr (!KD_BLO && !KD_F16S) {"),
    ("wg_tiled_pipeline.cuh", "    kd_mbar_arrive(full(i));\n  }",
     "    kd_mbar_arrive(full(i));\n    if (i < 8) KD_TR(12 + i);\n  }"),
    ("wg_tiled_pipeline.cuh", "      kd_mbar_wait(ring.full(i), (i / KD_STAGES) & 1);\n      ops.mma_tile(i, P{});",
     "      kd_mbar_wait(ring.full(i), (i / KD_STAGES) & 1);\n      if (i < 8) KD_TR(24 + 20 * (threadIdx.x >> 7) + i);\n"
     "      ops.mma_tile(i, P{});\n      if (i < 8) KD_TR(64 + 24 * (threadIdx.x >> 7) + i);"),
    ("wg_tiled_pipeline.cuh", "        ops.promote();\n        ring.release(i);\n      }",
     "        if (i < 8) KD_TRW(72 + 24 * (threadIdx.x >> 7) + i);\n        ops.promote();\n"
     "        if (i < 8) KD_TR(80 + 24 * (threadIdx.x >> 7) + i);\n        ring.release(i);\n"
     "        if (i < 8) KD_TR(32 + 20 * (threadIdx.x >> 7) + i);\n      }"),
]


def instrument(out):
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(KERNELS, out)
    for name, anchor, repl in EDITS:
        path = os.path.join(out, name)
        text = open(path).read()
        if text.count(anchor) != 1:
            sys.exit(f"wg_trace: {name}: expected one occurrence of {anchor!r}, found {text.count(anchor)}; "
                     "update EDITS for the kernel's current text")
        open(path, "w").write(text.replace(anchor, repl))
    print(f"instrumented copy in {out}: compile {os.path.join(out, 'wg_tiled.cu')} with KD_TRACE=1")


def report(raw, ncta, name=""):
    """Prints the events' medians over the CTAs, in us from each CTA's start."""
    v = struct.unpack(f"<{len(raw) // 8}Q", raw[: len(raw) // 8 * 8])
    ctas = [v[c * SLOTS:(c + 1) * SLOTS] for c in range(ncta)]
    freqs = []
    for c in ctas:
        dt, dc = c[3] - c[0], max(c[62], c[63]) - c[1]
        if 0 < dt < 1e9 and 0 < dc < 1e10:
            freqs.append(dc / dt)
    if not freqs:
        print(f"TRACE {name}: no complete CTA in the buffer (was the variant built with KD_TRACE=1?)")
        return
    f = st.median(freqs)  # clocks per ns
    g0 = min(c[0] for c in ctas)
    ends = [c[3] - g0 for c in ctas]
    print(f"TRACE {name}: {ncta} CTAs, SM clock {f:.3f} GHz; starts spread over {(max(c[0] for c in ctas) - g0) / 1e3:.2f} us; "
          f"ends median {st.median(ends) / 1e3:.2f}, last {max(ends) / 1e3:.2f} us after the first start")

    def ev(slot):
        xs = [(c[slot] - c[1]) / f / 1e3 for c in ctas if c[1] <= c[slot] < c[1] + 1e8]
        return (st.median(xs), min(xs), max(xs)) if xs else None

    # Single events with their spread; per-tile events as one row of medians over tiles 0-7 ("-": not
    # stamped), with the first tile's spread, which the start of the call decides.
    for label, slot in [("dependency wait done", 2)] + [(f"consumer {w}: flushed {s}", 40 + 20 * w + s) for w in range(2)
                                                         for s in range(2)] + [(f"consumer {w}: end", 62 + w) for w in range(2)]:
        e = ev(slot)
        if e:
            print(f"  {label:24s} {e[0]:7.2f} us  (min {e[1]:6.2f}, max {e[2]:6.2f})")
    tiles = [("producer: landed", 4), ("producer: published", 12)]
    for w in range(2):
        tiles += [(f"consumer {w}: got", 24 + 20 * w), (f"consumer {w}: issued", 64 + 24 * w),
                  (f"consumer {w}: retired", 72 + 24 * w), (f"consumer {w}: promoted", 80 + 24 * w),
                  (f"consumer {w}: done", 32 + 20 * w)]
    print(f"  {'k tile (median us)':24s}" + "".join(f"{i:>7d}" for i in range(8)) + "   tile 0 min / max")
    for label, slot0 in tiles:
        es = [ev(slot0 + i) for i in range(8)]
        if not any(es):
            continue
        cells = "".join(f"{e[0]:7.2f}" if e else f"{'-':>7s}" for e in es)
        spread = f"   {es[0][1]:6.2f} / {es[0][2]:6.2f}" if es[0] else ""
        print(f"  {label:24s}{cells}{spread}")

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "instrument":
        instrument(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        report(open(sys.argv[2], "rb").read(), int(sys.argv[3]), os.path.basename(sys.argv[2]))
    else:
        sys.exit(__doc__)
