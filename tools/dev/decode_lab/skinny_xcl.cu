// LAB KERNEL, not a family: it lost 2.5-3x to cuBLAS (session 29, H100, lab_xcl.json: 0.33-0.45x at 4096-28672 x 16,
// 0.72x at 4096 x 16 x 14336; every variant correct). Every row block of 8-16 rows needs a round trip between
// the cluster's SMs (remote adds, a remote count, a remote generation check), about 4 us each: far more
// than the tokens it saves. What it is:
// skinny_ws (search/src/builtin/kernels/skinny_ws.cu) with k split over a thread-block cluster of
// KD_CL CTAs on different SMs. Session 29 left skinny_ws 5-10 us per call above a streaming read,
// 2-3 us of it the tokens that every CTA reads from L2 (128 KB at k = 4096), and the register file
// split between the tokens (half of it) and the loads in flight (64 KB per SM). With the cluster:
//  - CTA rank r of a cluster streams and multiplies the k slices r * 8 + c, r * 8 + c + 8 * KD_CL, ...
//    (c its consumer warp), 256 elements each: its consumers hold 64 registers of tokens, not 128,
//    and the CTA reads 1 / KD_CL of the tokens;
//  - so the producers get the registers: KD_PDEPTH units (8 rows x 512 bytes each) in flight per
//    producer warp (`setmaxnreg` KD_PREGS / KD_CREGS);
//  - the clusters walk row blocks round robin; each CTA sums its consumers' partials in its own ring
//    (as skinny_ws); the last consumer of a CTA other than rank 0 adds the block's sums into rank 0
//    (red.shared::cluster) and counts itself there; rank 0's last consumer waits for them and
//    finishes the block. (The first version let the last consumer of the cluster, in either CTA,
//    finish the block from rank 0's ring: its remote loads made it 3-4x slower than cuBLAS.)
// Plan: grid = [KD_CL * min(row blocks, SMs / KD_CL), 1, batch] (clusters of KD_CL along x),
//   block = [512], smem = 8 * KD_STAGES * 8 * 576 + 2 * KD_RING * KD_OCTETS * 512 + 64 + 16 * 8 * KD_STAGES.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_CL 2
#define KD_STAGES 2
#define KD_OCTETS 1
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_PDEPTH
#define KD_PDEPTH 4  // units in flight per producer warp (2 or 4)
#endif
#ifndef KD_PREGS
#define KD_PREGS 160  // 256 x 160 + 256 x 96 = 65536
#endif
#ifndef KD_CREGS
#define KD_CREGS 96
#endif
#define KD_RING 4
#define KD_PAIRS 8
#define KD_ROW 576  // 512 bytes of a row + 64: the 8 lanes of a 16-byte phase hit 8 bank groups
#define KD_STAGE (8 * KD_ROW)

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"
#include "../../../search/src/builtin/kernels/bulk_copy.cuh"

// Distributed shared memory: a shared::cta address mapped into CTA `rank` of the cluster.
__device__ __forceinline__ unsigned kd_mapa(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void kd_red_cl(unsigned a, float v) {
  asm volatile("red.relaxed.cluster.shared::cluster.add.f32 [%0], %1;" ::"r"(a), "f"(v) : "memory");
}
__device__ __forceinline__ int kd_atom_add_cl(unsigned a, int v) {
  int old;
  asm volatile("atom.acq_rel.cluster.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(a), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ int kd_ld_acquire_cl(unsigned a) {
  int v;
  asm volatile("ld.acquire.cluster.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ float kd_ldf_cl(unsigned a) {
  float v;
  asm volatile("ld.relaxed.cluster.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void kd_stf_cl(unsigned a, float v) {
  asm volatile("st.relaxed.cluster.shared::cluster.f32 [%0], %1;" ::"r"(a), "f"(v) : "memory");
}
__device__ __forceinline__ void kd_st_release_cl(unsigned a, int v) {
  asm volatile("st.release.cluster.shared::cluster.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void kd_cl_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

extern "C" __global__ void __cluster_dims__(KD_CL, 1, 1) __launch_bounds__(512, 1) kd_skinny_xcl(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool producer = warp < KD_PAIRS;
  const int pair = producer ? warp : warp - KD_PAIRS;
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const int cid = static_cast<int>(blockIdx.x / KD_CL), ncl = static_cast<int>(gridDim.x / KD_CL);
  unsigned char* stages = smem + pair * KD_STAGES * KD_STAGE;
  float* ring = reinterpret_cast<float*>(smem + KD_PAIRS * KD_STAGES * KD_STAGE);
  float* rring = ring + KD_RING * KD_OCTETS * 128;  // rank 0: the other CTAs' sums per block
  int* cnt = reinterpret_cast<int*>(rring + KD_RING * KD_OCTETS * 128);
  int* gen = cnt + KD_RING;
  int* rcnt = gen + KD_RING;  // rank 0: how many other CTAs added their sums to a slot
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(rcnt + KD_RING + 4);
  unsigned long long* full = bars + pair * 2 * KD_STAGES;
  unsigned long long* empty = full + KD_STAGES;
  // Each CTA sums its consumers in its own ring (as skinny_ws); the CTAs other than rank 0 then add
  // their block sums into rank 0's rring and count themselves in its rcnt; rank 0 finishes the block.
  const unsigned rring0 = kd_mapa(kd_smem_addr(rring), 0), rcnt0 = kd_mapa(kd_smem_addr(rcnt), 0);
  const unsigned gen0 = kd_mapa(kd_smem_addr(gen), 0);
  for (int i = threadIdx.x; i < 2 * KD_RING * KD_OCTETS * 128; i += blockDim.x) ring[i] = 0.f;
  if (threadIdx.x < 3 * KD_RING) cnt[threadIdx.x] = 0;
  if (threadIdx.x < KD_PAIRS * 2 * KD_STAGES) kd_mbar_init(bars + threadIdx.x, 32);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  kd_cl_sync();
  const uint4 zero = make_uint4(0, 0, 0, 0);

  const long long rows_per_block = 8 * KD_OCTETS;
  const long long nblk = (m + rows_per_block - 1) / rows_per_block;
  const long long nslices = (k + 255) / 256;
  const int gc = static_cast<int>(rank) * KD_PAIRS + pair, tc = KD_CL * KD_PAIRS;  // consumer of the cluster
  (void)rring0;
  const int my_slices = gc < nslices ? static_cast<int>((nslices - 1 - gc) / tc + 1) : 0;
  const int my_blocks = cid < nblk ? static_cast<int>((nblk - 1 - cid) / ncl + 1) : 0;
  const int upb = my_slices * KD_OCTETS;  // units per row block
  const int units = my_blocks * upb;
  auto first_row = [&](int j) { return (cid + static_cast<long long>(j) * ncl) * rows_per_block; };

  if (producer) {
#if KD_PREGS > 128
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(KD_PREGS));
#elif KD_PREGS < 128
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(KD_PREGS));
#endif
    auto load = [&](uint4 (&w)[8], int u) {  // unit u: row block j, slice si, octet o
      if (u >= units) return;
      const int j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
      const long long kl = (gc + static_cast<long long>(si) * tc) * 256 + 8 * lane;
      const long long row0 = first_row(j) + 8 * o;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const long long row = row0 + jj < m ? row0 + jj : m - 1;  // a repeated row's sums are dropped
        w[jj] = kl < k ? kd_load_stream(A + row * args.lda + kl) : zero;
      }
    };
    auto put = [&](uint4 (&w)[8], int u) {
      if (u >= units) return;
      const int s = u % KD_STAGES;
      if (u >= KD_STAGES) kd_mbar_wait(empty + s, static_cast<unsigned>((u / KD_STAGES - 1) & 1));
      unsigned char* st = stages + s * KD_STAGE + lane * 16;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) *reinterpret_cast<uint4*>(st + jj * KD_ROW) = w[jj];
      kd_mbar_arrive(full + s);  // release: this lane's stores of the unit
      load(w, u + KD_PDEPTH);
    };
    uint4 w[KD_PDEPTH][8];
#pragma unroll
    for (int i = 0; i < KD_PDEPTH; ++i) load(w[i], i);
#pragma unroll 1
    for (int u = 0; u < units; u += KD_PDEPTH) {
#pragma unroll
      for (int i = 0; i < KD_PDEPTH; ++i) put(w[i], u + i);
    }
  } else {
#if KD_CREGS > 128
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(KD_CREGS));
#elif KD_CREGS < 128
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(KD_CREGS));
#endif
    const int g = lane >> 2, t = lane & 3;
    auto slot_wait = [&](int j) {  // this CTA's slot is free once its block KD_RING before j is finished
      if (lane == 0)
        while (*reinterpret_cast<volatile int*>(gen + j % KD_RING) != j / KD_RING) __nanosleep(32);
      __syncwarp();
    };
    auto arrive = [&](int j) {  // the last consumer of this CTA to arrive passes block j on
      const int slot = j % KD_RING;
      float* acc_b = ring + slot * KD_OCTETS * 128;
      __threadfence_block();
      int old = 0;
      if (lane == 0) old = atomicAdd(cnt + slot, 1);
      old = __shfl_sync(0xffffffffu, old, 0);
      if (old != KD_PAIRS - 1) return;
      __threadfence_block();
      if (rank != 0) {
        // Rank 0's rring slot is free once rank 0 finished the block KD_RING before j.
        if (lane == 0)
          while (kd_ld_acquire_cl(gen0 + 4 * slot) != j / KD_RING) __nanosleep(32);
        __syncwarp();
        for (int idx = lane; idx < KD_OCTETS * 128; idx += 32) {
          kd_red_cl(rring0 + 4u * (slot * KD_OCTETS * 128 + idx), acc_b[idx]);
          acc_b[idx] = 0.f;
        }
        asm volatile("fence.acq_rel.cluster;" ::: "memory");  // every lane's adds before the count
        __syncwarp();
        if (lane == 0) kd_atom_add_cl(rcnt0 + 4 * slot, 1);
      } else {
        if (lane == 0)  // ...and rank 0 waits for every other CTA's sums of the block
          while (kd_ld_acquire_cl(kd_smem_addr(rcnt + slot)) != KD_CL - 1) __nanosleep(32);
        __syncwarp();
        float* racc = rring + slot * KD_OCTETS * 128;
        for (int idx = lane; idx < KD_OCTETS * 128; idx += 32) {
          const int o = idx / 128, i = (idx / 32) % 4, l = idx % 32;
          const float sum = acc_b[idx] + *reinterpret_cast<volatile float*>(racc + idx);
          acc_b[idx] = 0.f;
          racc[idx] = 0.f;
          // c0, c1: token (l >> 2), rows 2(l & 3) and +1 of the octet; c2, c3: token + 8.
          kd_epilogue(args, C, first_row(j) + 8 * o + 2 * (l & 3) + (i & 1), (l >> 2) + (i >= 2 ? 8 : 0), sum);
        }
        __syncwarp();
        if (lane == 0) rcnt[slot] = 0;
      }
      asm volatile("fence.acq_rel.cluster;" ::: "memory");
      if (lane == 0) {
        cnt[slot] = 0;
        kd_st_release_cl(kd_smem_addr(gen + slot), j / KD_RING + 1);
      }
      __syncwarp();
    };
    if (units == 0) {  // a consumer with no k slice still counts in every block's arrivals
      for (int j = 0; j < my_blocks; ++j) {
        slot_wait(j);
        arrive(j);
      }
    } else {
      uint4 xa[8], xb[8];  // tokens g and g + 8 at 16-byte chunks 4q + t of the slice
      long long cur_slice = -1;
#pragma unroll 1
      for (int u = 0; u < units; ++u) {
        const int j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
        if (r == 0) slot_wait(j);
        const long long s = gc + static_cast<long long>(si) * tc;
        if (s != cur_slice) {
          cur_slice = s;
#pragma unroll
          for (int q = 0; q < 8; ++q) {
            const long long kk = s * 256 + 8 * (4 * q + t);
            xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
            xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
          }
        }
        const int st = u % KD_STAGES;
        kd_mbar_wait(full + st, static_cast<unsigned>((u / KD_STAGES) & 1));
        const unsigned char* tile = stages + st * KD_STAGE + g * KD_ROW + t * 16;
        float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const uint4 b = *reinterpret_cast<const uint4*>(tile + q * 64);
          kd_mma(acc[q & 1], xa[q].x, xb[q].x, xa[q].y, xb[q].y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
          kd_mma(acc[q & 1], xa[q].z, xb[q].z, xa[q].w, xb[q].w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
        }
        kd_mbar_arrive(empty + st);  // this lane's reads of the stage are done
        float* acc_b = ring + ((j % KD_RING) * KD_OCTETS + o) * 128 + lane;
#pragma unroll
        for (int i = 0; i < 4; ++i) atomicAdd(acc_b + 32 * i, acc[0][i] + acc[1][i]);
        if (r == upb - 1) arrive(j);
      }
    }
  }
  // No CTA leaves while another may still add into, or read, rank 0's ring.
  kd_cl_sync();
}
