// Lab diagnostic for kernel_lab.py (lab_bmm_loads.json; docs/kernel-notes.md, session 46): the short-k
// bmm's operand loads without its math. 128^3 x256 f32: each CTA reads entries 2c and 2c+1 (A and B: 128
// rows x 512 bytes each, 64 KB contiguous), by cp.async 16 bytes a lane into a ring of KD_D 32 KB slots,
// KD_D in flight. Session 46 (H200, serving): 6.19-6.48 us a call with KD_ST 0, whatever the order or KD_D;
// KD_ST 1 (C's stores too) was written and has not run.
// KD_ORDER 0: a slot is a k tile (128 rows x 128 bytes of A, then of B: the bmm's order);
// KD_ORDER 1: a slot is 32 rows x 512 bytes of A, then of B (contiguous 16 KB pieces).
// Output: C[0] gets a checksum so nothing is optimized away.
#include <kdispatch/gemm.cuh>
#ifndef KD_D
#define KD_D 2
#endif
#ifndef KD_ORDER
#define KD_ORDER 0
#endif
#ifndef KD_ST
#define KD_ST 0  // 1: each entry's C (64 KB) stored after its loads, 16 bytes a lane
#endif
#ifndef KD_TILES
#define KD_TILES 2
#endif
__device__ __forceinline__ void cpa(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
extern "C" __global__ void __launch_bounds__(128, 1) kd_ldpat(kd_gemm_args args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const float* A = static_cast<const float*>(args.a);
  const float* B = static_cast<const float*>(args.b);
  const int tid = threadIdx.x;
  // KD_TILES entries per CTA, 4 slots of 32 KB each.
  const int nslots = KD_TILES * 4;
  auto issue = [&](int s) {
    const long long e = static_cast<long long>(blockIdx.x) * KD_TILES + s / 4;
    const int j = s % 4;
    const unsigned dst = base + (s % KD_D) * 32768;
    const float* a = A + e * 16384;
    const float* b = B + e * 16384;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int c = q * 128 + tid;  // 16-byte chunk 0..1023 of the 16 KB piece
      long long off;                // in floats
      if (KD_ORDER == 0) {
        const int row = c / 8, ch = c % 8;  // 128 rows x 8 chunks of the k tile
        off = row * 128 + j * 32 + ch * 4;
      } else {
        off = j * 4096 + c * 4;
      }
      cpa(dst + c * 16, a + off);
      cpa(dst + 16384 + c * 16, b + off);
    }
  };
  float sum = 0.f;
  int s = 0;
  for (; s < KD_D && s < nslots; ++s) {
    issue(s);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (int i = 0; i < nslots; ++i) {
    asm volatile("cp.async.wait_group %0;" ::"n"(KD_D - 1) : "memory");
    __syncthreads();
    sum += reinterpret_cast<const float*>(smem + (i % KD_D) * 32768)[tid];
    __syncthreads();
    if (KD_ST && i % 4 == 3) {  // the entry's C: 64 KB
      float4* c = reinterpret_cast<float4*>(static_cast<float*>(args.c) + (static_cast<long long>(blockIdx.x) * KD_TILES + i / 4) * 16384);
      const float4 v = make_float4(sum, sum, sum, sum);
#pragma unroll 4
      for (int q = tid; q < 4096; q += 128) c[q] = v;
    }
    if (s < nslots) issue(s);
    ++s;
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (!KD_ST && sum == 123456.f) static_cast<float*>(args.c)[0] = sum;
}
