#!/usr/bin/env python3
"""Which access pattern streams a weight matrix at full HBM bandwidth (GPU machine; a lab tool).

    python3 tools/dev/stream_pattern_lab.py [--rows 14336] [--k 4096] [--elem 2]

Reads the same rows x k matrix (row-major, the way nn.Linear stores a weight) in several orders,
each timed in the serving regime (R back-to-back calls in one CUDA graph, each on its own copy,
copies together at least 3x the L2), and prints TB/s. The decode GEMM families stream A in the
order their row blocks and k chunks need; this separates what that order costs from what the
kernels' compute and synchronization cost.
  seq        every thread reads 16 bytes at a grid-wide stride (a plain streaming read)
  blocks     CTAs take 16-row blocks round robin and read each as skinny_bulk's stages do:
             a k chunk of all 16 rows, then the next chunk (CHUNK bytes of each row at a time)
  rowwise    CTAs take 16-row blocks round robin and read each block front to back (contiguous)
  bulk-*     the same two orders through cp.async.bulk into a shared-memory ring on mbarriers
"""
import argparse
import ctypes
import os
import subprocess
import tempfile

import torch

SRC = r"""
#include <cuda_runtime.h>
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
extern "C" __global__ void seq(const uint4* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  const long long n16 = rows * row16, step = (long long)gridDim.x * blockDim.x;
  unsigned acc = 0;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (; i + 7 * step < n16; i += 8 * step) {
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = ld_stream(p + i + j * step);
#pragma unroll
    for (int j = 0; j < 8; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n16; i += step) { uint4 v = ld_stream(p + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
// 16-row blocks round robin over CTAs; within a block, element e of the block's (chunk, row, col)
// order: chunk-major (skinny_bulk's stages) or row-major (contiguous).
template <bool kChunkMajor>
__device__ void blocks_impl(const uint4* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  const long long blocks = rows / 16, per_block = 16 * row16;
  unsigned acc = 0;
  for (long long b = blockIdx.x; b < blocks; b += gridDim.x) {
    const uint4* base = p + b * per_block;
    for (long long e0 = threadIdx.x; e0 < per_block; e0 += 8LL * blockDim.x) {
      uint4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const long long e = e0 + j * (long long)blockDim.x;
        long long off = e;
        if (kChunkMajor) {
          const long long chunk = e / (16 * chunk16), rem = e % (16 * chunk16);
          off = (rem / chunk16) * row16 + chunk * chunk16 + rem % chunk16;
        }
        v[j] = e < per_block ? ld_stream(base + off) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
extern "C" __global__ void blocks(const uint4* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  blocks_impl<true>(p, rows, row16, chunk16, sink);
}
extern "C" __global__ void rowwise(const uint4* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  blocks_impl<false>(p, rows, row16, chunk16, sink);
}
// Bulk copies into a ring of STAGES stages of 16 x CHUNK bytes (chunk-major) or 16*CHUNK contiguous
// bytes (row-major), one producer lane, 8 consumer warps touching one word per row of each stage.
#define STAGES 6
__device__ __forceinline__ unsigned sa(const void* q) { return (unsigned)__cvta_generic_to_shared(q); }
template <bool kChunkMajor>
__device__ void bulk_impl(const unsigned char* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ unsigned long long full[STAGES], empty[STAGES];
  const long long row_bytes = row16 * 16, chunk = chunk16 * 16, stage_bytes = 16 * chunk;
  const long long blocks = rows / 16, chunks = row_bytes / chunk;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sa(&full[s])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 8;" ::"r"(sa(&empty[s])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 8) {
    if (lane == 0) {
      long long seq = 0;
      for (long long b = blockIdx.x; b < blocks; b += gridDim.x)
        for (long long c = 0; c < chunks; ++c, ++seq) {
          const int s = seq % STAGES;
          if (seq >= STAGES) {
            asm volatile("{\n .reg .pred q;\n w%=:\n mbarrier.try_wait.parity.shared::cta.b64 q, [%0], %1;\n @!q bra w%=;\n}"
                         ::"r"(sa(&empty[s])), "r"((unsigned)(((seq / STAGES) - 1) & 1)) : "memory");
          }
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(&full[s])), "r"((unsigned)stage_bytes) : "memory");
          const unsigned char* blk = p + b * 16 * row_bytes;
          if (kChunkMajor) {
            for (int r = 0; r < 16; ++r)
              asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                           ::"r"(sa(smem + s * stage_bytes + r * chunk)), "l"(blk + r * row_bytes + c * chunk),
                           "r"((unsigned)chunk), "r"(sa(&full[s])) : "memory");
          } else {
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(sa(smem + s * stage_bytes)), "l"(blk + c * stage_bytes), "r"((unsigned)stage_bytes),
                         "r"(sa(&full[s])) : "memory");
          }
        }
    }
    return;
  }
  unsigned acc = 0;
  long long seq = 0;
  for (long long b = blockIdx.x; b < blocks; b += gridDim.x)
    for (long long c = 0; c < chunks; ++c, ++seq) {
      const int s = seq % STAGES;
      asm volatile("{\n .reg .pred q;\n w%=:\n mbarrier.try_wait.parity.shared::cta.b64 q, [%0], %1;\n @!q bra w%=;\n}"
                   ::"r"(sa(&full[s])), "r"((unsigned)((seq / STAGES) & 1)) : "memory");
      acc ^= reinterpret_cast<const unsigned*>(smem + s * stage_bytes)[threadIdx.x];
      __syncwarp();
      if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sa(&empty[s])) : "memory");
    }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
extern "C" __global__ void bulk_blocks(const unsigned char* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  bulk_impl<true>(p, rows, row16, chunk16, sink);
}
extern "C" __global__ void bulk_rowwise(const unsigned char* p, long long rows, long long row16, long long chunk16, unsigned* sink) {
  bulk_impl<false>(p, rows, row16, chunk16, sink);
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=14336)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--elem", type=int, default=2)
    args = ap.parse_args()
    out = tempfile.mkdtemp()
    src, cubin = os.path.join(out, "p.cu"), os.path.join(out, "p.cubin")
    open(src, "w").write(SRC)
    subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", cubin, src], check=True)
    torch.cuda.init()
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)  # makes torch's context current for the driver calls below
    cu = ctypes.CDLL("libcuda.so.1")
    mod = ctypes.c_void_p()
    assert cu.cuModuleLoadData(ctypes.byref(mod), open(cubin, "rb").read()) == 0
    props = torch.cuda.get_device_properties(dev)
    sms, l2 = props.multi_processor_count, props.L2_cache_size
    row_bytes = args.k * args.elem
    nbytes = args.rows * row_bytes
    copies = max(2, -(-3 * l2 // nbytes))
    bufs = [torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=dev) for _ in range(copies)]
    reps = copies * max(1, -(-24 // copies))
    sink = torch.zeros(1, dtype=torch.int32, device=dev)

    def fn(name, smem=0):
        f = ctypes.c_void_p()
        assert cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()) == 0
        if smem:
            assert cu.cuFuncSetAttribute(f, 8, smem) == 0
        return f

    def timed(f, grid, block, smem, chunk):
        def calls(stream):
            for i in range(reps):
                vals = [ctypes.c_void_p(bufs[i % copies].data_ptr()), ctypes.c_longlong(args.rows),
                        ctypes.c_longlong(row_bytes // 16), ctypes.c_longlong(chunk // 16),
                        ctypes.c_void_p(sink.data_ptr())]
                params = (ctypes.c_void_p * 5)(*[ctypes.addressof(v) for v in vals])
                assert cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, smem, ctypes.c_void_p(stream), params, None) == 0
            return reps
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            calls(s.cuda_stream)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            calls(s.cuda_stream)
        ts = []
        for _ in range(7):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); g.replay(); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b) * 1000 / reps)
        return sorted(ts)[3]

    print(f"{args.rows} x {args.k} x {args.elem} B = {nbytes / 1e6:.1f} MB, {copies} copies, serving regime")
    rows = []
    for grid_mult in (4,):
        t = timed(fn("seq"), sms * grid_mult, 512, 0, 0)
        rows.append(("seq", f"grid {sms * grid_mult} x 512", t))
    for chunk in (1024, 2048, 4096):
        if row_bytes % chunk:
            continue
        rows.append(("blocks", f"chunk {chunk} B, 132 x 1024", timed(fn("blocks"), sms, 1024, 0, chunk)))
    rows.append(("rowwise", "132 x 1024", timed(fn("rowwise"), sms, 1024, 0, 1024)))
    for chunk in (1024, 2048, 4096):
        if row_bytes % chunk:
            continue
        smem = 6 * 16 * chunk
        if smem > 227 * 1024:
            continue
        rows.append(("bulk-blocks", f"chunk {chunk} B, 6 stages", timed(fn("bulk_blocks", smem), sms, 288, smem, chunk)))
        rows.append(("bulk-rowwise", f"stage {16 * chunk} B, 6 stages",
                     timed(fn("bulk_rowwise", smem), sms, 288, smem, chunk)))
    best = min(t for _, _, t in rows)
    print(f"{'pattern':14s} {'config':28s} {'us':>8s} {'TB/s':>6s} {'of best':>7s}")
    for name, cfg, t in rows:
        print(f"{name:14s} {cfg:28s} {t:8.2f} {nbytes / t / 1e6:6.2f} {best / t * 100:6.0f}%")


if __name__ == "__main__":
    main()
