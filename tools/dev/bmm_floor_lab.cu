// Lab diagnostic for kernel_lab.py (lab49_bmm_floor.json; docs/kernel-notes.md, session 49): a strided
// f32 batch's memory traffic without its math, for any m, n, k: each batch entry's A (m x k) and B (k x n)
// read once, 16 bytes a lane (ld.global.nc, no L1 allocation), and its C (m x n) written, 16 bytes a lane,
// with a value derived from the loads so that nothing is optimized away. No shared memory, so several CTAs
// share an SM: their loads and stores overlap as the hardware schedules them. Entries are packed (strides
// m k, k n, m n) and their sizes multiples of 16 bytes.
//   KD_SPLIT CTAs per entry (each a contiguous 1/KD_SPLIT of A, B and C); grid.x = batch * KD_SPLIT / KD_PER,
//   each CTA taking KD_PER consecutive entries' parts in turn (KD_PER 1: one part per CTA).
//   KD_UNROLL 16-byte loads a lane in flight.
#include <kdispatch/gemm.cuh>
#ifndef KD_SPLIT
#define KD_SPLIT 1
#endif
#ifndef KD_PER
#define KD_PER 1
#endif
#ifndef KD_UNROLL
#define KD_UNROLL 8
#endif
__device__ __forceinline__ uint4 kd_ldnc(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// XOR of the 16-byte words [lo, hi) of p that this thread reads.
__device__ __forceinline__ unsigned kd_read_part(const uint4* p, long long lo, long long hi) {
  unsigned x = 0;
  for (long long q = lo + threadIdx.x; q < hi; q += static_cast<long long>(blockDim.x) * KD_UNROLL) {
    uint4 v[KD_UNROLL];
#pragma unroll
    for (int u = 0; u < KD_UNROLL; ++u) {
      const long long i = q + static_cast<long long>(u) * blockDim.x;
      v[u] = i < hi ? kd_ldnc(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < KD_UNROLL; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  return x;
}
extern "C" __global__ void __launch_bounds__(256) kd_bmm_floor(kd_gemm_args args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long wa = args.m * args.k / 4, wb = args.k * args.n / 4, wc = args.m * args.n / 4;
  for (int e = 0; e < KD_PER; ++e) {
    const long long part = static_cast<long long>(blockIdx.x) * KD_PER + e, z = part / KD_SPLIT, s = part % KD_SPLIT;
    if (z >= args.batch) break;
    const uint4* A = static_cast<const uint4*>(args.a) + z * wa;
    const uint4* B = static_cast<const uint4*>(args.b) + z * wb;
    uint4* C = static_cast<uint4*>(args.c) + z * wc;
    const unsigned x = kd_read_part(A, wa * s / KD_SPLIT, wa * (s + 1) / KD_SPLIT) ^
                       kd_read_part(B, wb * s / KD_SPLIT, wb * (s + 1) / KD_SPLIT);
    const float f = static_cast<float>(x & 0xffff) * 1e-30f;
    const uint4 w = make_uint4(__float_as_uint(f), __float_as_uint(f), __float_as_uint(f), __float_as_uint(f));
    for (long long q = wc * s / KD_SPLIT + threadIdx.x; q < wc * (s + 1) / KD_SPLIT; q += blockDim.x) C[q] = w;
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
