// The 16-byte load of an operand that a kernel reads exactly once (a decode GEMM's weight): not
// allocated in L1, where it would only evict what is reused. Shared by skinny_mma and simt_gemv
// (and the lab kernels in tools/dev/decode_lab); pasted in place of its include like c_epilogue.cuh.
#ifndef KD_LOAD_STREAM_CUH
#define KD_LOAD_STREAM_CUH

__device__ __forceinline__ uint4 kd_load_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

#endif  // KD_LOAD_STREAM_CUH
