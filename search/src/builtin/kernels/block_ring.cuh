// A ring of KD_RING per-row-block accumulators in shared memory, for kernels whose warps split k and
// meet per block of 8 * KD_OCTETS rows without a CTA barrier (skinny_ws; the decode lab's kernels in
// tools/dev/decode_lab). A slot holds a block's KD_OCTETS * 128 f32 sums in m16n8k16 C-fragment
// order (element i * 32 + lane of octet o: register i of lane `lane`, the 16 tokens as M, the 8 rows
// as N). Warps add into it with f32 atomics, so the order of the terms, and C's last bits, can change
// from run to run; every warp then arrives, and the last to arrive writes the block to C, zeroes the
// slot and advances its generation, which a warp KD_RING blocks ahead waits for.
//
// Not a header a candidate may include: the embedded-source helper pastes it in place of its include
// line, like c_epilogue.cuh, after which it must come (kd_epilogue). The includer defines KD_RING and
// KD_OCTETS.
#ifndef KD_BLOCK_RING_CUH
#define KD_BLOCK_RING_CUH

// Waits until row block j's slot is free: the block KD_RING before j is finished.
__device__ __forceinline__ void kd_ring_wait(const int* gen, int j, int lane) {
  if (lane == 0)
    while (*reinterpret_cast<const volatile int*>(gen + j % KD_RING) != j / KD_RING) __nanosleep(32);
  __syncwarp();
}

// One of `arrivals` warps is done adding into row block j's slot; the last to arrive writes the
// block's sums to C, from row first_row(j) on (rows and columns past the matrix are dropped), and
// frees the slot.
template <typename T, typename FirstRow>
__device__ __forceinline__ void kd_ring_arrive(const kd_gemm_args& args, T* C, float* ring, int* cnt, int* gen,
                                               int j, const FirstRow& first_row, int lane, int arrivals) {
  float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128;
  __threadfence_block();
  int old = 0;
  if (lane == 0) old = atomicAdd(cnt + j % KD_RING, 1);
  old = __shfl_sync(0xffffffffu, old, 0);
  if (old != arrivals - 1) return;
  __threadfence_block();
  for (int idx = lane; idx < KD_OCTETS * 128; idx += 32) {
    const int o = idx / 128, i = (idx / 32) % 4, l = idx % 32;
    const float sum = *reinterpret_cast<volatile float*>(acc_b + idx);
    acc_b[idx] = 0.f;
    // c0, c1: token (l >> 2), rows 2(l & 3) and +1 of the octet; c2, c3: token + 8.
    kd_epilogue(args, C, first_row(j) + 8 * o + 2 * (l & 3) + (i & 1), (l >> 2) + (i >= 2 ? 8 : 0), sum);
  }
  __syncwarp();
  __threadfence_block();
  if (lane == 0) {
    cnt[j % KD_RING] = 0;
    __threadfence_block();
    *reinterpret_cast<volatile int*>(gen + j % KD_RING) = j / KD_RING + 1;
  }
  __syncwarp();
}

#endif  // KD_BLOCK_RING_CUH
