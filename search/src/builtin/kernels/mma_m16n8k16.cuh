// mma.sync m16n8k16 with f32 accumulation in place, d += a*b, for the 16-bit tensor-core families
// (tc_tiled, skinny_mma, skinny_bulk); the last argument's type picks bf16 or f16 inputs.
//
// Not a header a candidate may include: the embedded-source helper (embedded_kernels.cpp) replaces
// each `#include "mma_m16n8k16.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
#ifndef KD_MMA_M16N8K16_CUH
#define KD_MMA_M16N8K16_CUH

#define KD_MMA_M16N8K16(T, PTX_TYPE)                                                                 \
  __device__ __forceinline__ void kd_mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,       \
                                         unsigned a3, unsigned b0, unsigned b1, T*) {                \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PTX_TYPE "." PTX_TYPE ".f32 {%0,%1,%2,%3}, " \
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                                            \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                    \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                            \
  }
KD_MMA_M16N8K16(__nv_bfloat16, "bf16")
KD_MMA_M16N8K16(__half, "f16")
#undef KD_MMA_M16N8K16

#endif  // KD_MMA_M16N8K16_CUH
