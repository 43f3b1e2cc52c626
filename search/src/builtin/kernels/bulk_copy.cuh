// Shared-memory addresses, mbarriers and 1-D bulk copies (cp.async.bulk, sm_90): the helpers the
// families that stream global memory through shared memory with the TMA unit share (skinny_bulk,
// row_reduce's ring). A bulk copy completes `bytes` of the mbarrier's expected transactions.
#ifndef KD_BULK_COPY_CUH
#define KD_BULK_COPY_CUH

__device__ __forceinline__ unsigned kd_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void kd_mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(kd_smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void kd_mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(kd_smem_addr(bar)),
               "r"(bytes) : "memory");
}
__device__ __forceinline__ void kd_mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(kd_smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void kd_mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n"
      "kd_wait_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra kd_wait_%=;\n}\n" ::"r"(kd_smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void kd_bulk_copy(void* smem_dst, const void* gmem_src, unsigned bytes,
                                             unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      ::"r"(kd_smem_addr(smem_dst)), "l"(gmem_src), "r"(bytes), "r"(kd_smem_addr(bar)) : "memory");
}

#endif  // KD_BULK_COPY_CUH
