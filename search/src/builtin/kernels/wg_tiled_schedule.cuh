// wg_tiled's schedulers' hooks: where a CTA's sum goes, and the second launches that sum partial
// tiles. The three schedulers (the tile of C a CTA computes and which of its k tiles) are
//  - split-K: tile (blockIdx.x, blockIdx.y), the k tiles in KD_SPLITK equal ranges over blockIdx.z;
//    more than one split leaves partial tiles that kd_wg_tiled_reduce sums (or, with KD_CLUSTER, the
//    cluster sums in distributed shared memory);
//  - the split tail (KD_TAIL > 1): one CTA per tile of the whole waves, then KD_TAIL per tile of the
//    partial last wave, whose partials kd_wg_tail_reduce sums;
//  - stream-K (KD_SK): KD_SK CTAs each take an equal contiguous run of the batch's tile-major k-tile
//    units, cut into segments at tile boundaries; a segment ends with kd_stream_k::flush(), which
//    stores a tile that one CTA covers whole in C and otherwise leaves a partial for kd_wg_sk_reduce.
// Their arithmetic (wg_tiled_layout.cuh shares it with the host rules) is written out in the kernel
// itself. Part of wg_tiled.cu's translation unit (embedded, and expanded in place like wg_common.cuh).

// Stream-K's store at the end of a segment, referring to the kernel's values as a lambda would.
struct kd_stream_k {
  const kd_gemm_args& args;
  float (&acc)[KD_MW][kAcc];
  const int &wg, &warp, &lane;
  const long long &z, &m, &n;
  const int &tm, &ktiles_all, &units;  // tiles per column of C, k tiles per tile, units per batch entry (KD_SKB: in all)

  // The segment that ends at unit u: a tile that one CTA covers whole goes to C; otherwise the
  // segment's partial goes to workspace slot (CTA - the tile's first CTA), [slot][batch][n][m], which
  // kd_wg_sk_reduce sums in slot order. The accumulators start again from zero.
  __device__ __forceinline__ void flush(long long u) const {
    const long long t = u / ktiles_all, ts = t * ktiles_all;  // once per segment
    // KD_SKB: t runs over every batch entry's tiles (z is 0), and each CTA has whole tiles.
    const kd_skb_tile<long long> e = KD_SKB ? kd_skb_at<long long>(t, tm, n) : kd_skb_tile<long long>{0, t};
    const long long zt = e.z, tt = e.t;
    const long long sm0 = tt % tm * kBM, sn0 = tt / tm * KD_BN;
    const long long first = kd_wg_sk_cta(ts, units, KD_SK), last = kd_wg_sk_cta(ts + ktiles_all - 1, units, KD_SK);
    if (first == last) {
      KD_C_T* C = static_cast<KD_C_T*>(args.c) + (z + zt) * args.stride_c;
      if (sm0 + kBM <= m && sn0 + KD_BN <= n)
        kd_store_acc_whole(args, C, acc, wg, warp, lane, sm0, sn0);
      else
        kd_for_each_acc(acc, wg, warp, lane, sm0, sn0,
                        [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
    } else {  // never with KD_SKB: its host rules give every CTA whole tiles
      float* W = static_cast<float*>(args.workspace) + ((blockIdx.x - first) * args.batch + z) * m * n;
      kd_for_each_acc(acc, wg, warp, lane, sm0, sn0, [&](long long r, long long c, float v) {
        if (r < m && c < n) W[r + c * m] = v;
      });
    }
#pragma unroll
    for (int q = 0; q < kAcc; ++q) acc[0][q] = 0.f;
  }
};

// The epilogue of a CTA that stores once (not stream-K), every copy landed and every wgmma retired:
// KD_CLUSTER's partial tile into the ring (`smem` at shared address `base`) and the cluster's sum;
// otherwise (after KD_F16S's column scales) C = alpha * sum (+ beta C) (+ bias) when the CTA has the
// whole tile, else the partial tile to workspace slot `split`, [split][batch][n][m] (f32, column-major
// like C).
__device__ __forceinline__ void kd_store_tile(const kd_gemm_args& args, float (&acc)[KD_MW][kAcc], unsigned char* smem,
                                              unsigned base, int wg, int warp, int lane, long long z, long long m,
                                              long long n, int split, long long m0, long long n0) {
  if constexpr (KD_CLUSTER) {
    kd_bar_sync_all();
    float* P = reinterpret_cast<float*>(smem);
    kd_for_each_acc(acc, wg, warp, lane, 0, 0, [&](long long r, long long c, float v) { P[r + c * kBM] = v; });
    kd_cluster_finish(args, base, z, m0, n0);
    return;
  }
  kd_ops::finish(args, acc, wg, warp, lane, z, n, m0, n0);
  if (KD_TAIL > 1 ? split < 0 : KD_SPLITK == 1) {
    KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
    // f32 only so far: the 16-bit kernels' stores have not been through the GPU gate with it.
    if (kF32 && m0 + kBM <= m && n0 + KD_BN <= n)
      kd_store_acc_whole(args, C, acc, wg, warp, lane, m0, n0);
    else
      kd_for_each_acc(acc, wg, warp, lane, m0, n0,
                      [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
  } else {
    // The reduce launch may start now (programmatic dependent launch: it waits for this grid to
    // complete before reading; launched normally, this does nothing).
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    float* W = static_cast<float*>(args.workspace) + (static_cast<long long>(split) * args.batch + z) * m * n;
    kd_for_each_acc(acc, wg, warp, lane, m0, n0, [&](long long r, long long c, float v) {
      if (r < m && c < n) W[r + c * m] = v;
    });
  }
}

// The S f32 partials of output idx of C (workspace partials S apart by `stride` floats), summed in
// split order, then the epilogue; kd_sum_partials4 does rows row .. row + 3 of one column (idx a
// multiple of 4) with 16-byte loads, same order, same bits. S is a constant where split-K and
// KD_TAIL inline them (the loop unrolls) and a run-time count for KD_SK.
__device__ __forceinline__ void kd_sum_partials4(const kd_gemm_args& args, KD_C_T* C, const float* W, long long stride,
                                                 long long idx, long long row, long long col, int S) {
  float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int s = 0; s < S; ++s) kd_add4(sum, *reinterpret_cast<const float4*>(W + s * stride + idx));
  kd_epilogue(args, C, row, col, sum.x);
  kd_epilogue(args, C, row + 1, col, sum.y);
  kd_epilogue(args, C, row + 2, col, sum.z);
  kd_epilogue(args, C, row + 3, col, sum.w);
}
__device__ __forceinline__ void kd_sum_partials1(const kd_gemm_args& args, KD_C_T* C, const float* W, long long stride,
                                                 long long idx, long long row, long long col, int S) {
  float sum = 0.f;
#pragma unroll
  for (int s = 0; s < S; ++s) sum += W[s * stride + idx];
  kd_epilogue(args, C, row, col, sum);
}

// One tile's S partials summed and stored (the KD_TAIL and KD_SK reductions): grid = [any, tiles,
// batch], blockIdx.x strides over the tile's 4-row column pieces.
__device__ __forceinline__ void kd_sum_tile(const kd_gemm_args& args, long long tile_id, int S) {
  const long long m = args.m, n = args.n, mn = m * n, total = mn * args.batch, z = blockIdx.z;
  const long long tm = (m + kBM - 1) / kBM;
  const long long m0 = tile_id % tm * kBM, n0 = tile_id / tm * KD_BN;
  const float* W = static_cast<const float*>(args.workspace) + z * mn;
  KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
  for (int q = blockIdx.x * 256 + threadIdx.x; q < kBM / 4 * KD_BN; q += 256 * gridDim.x) {
    const long long row = m0 + 4 * (q % (kBM / 4)), col = n0 + q / (kBM / 4);
    if (row >= m || col >= n) continue;
    const long long idx = row + col * m;
    if (m % 4 == 0)
      kd_sum_partials4(args, C, W, total, idx, row, col, S);
    else
      for (int r = 0; r < 4 && row + r < m; ++r) kd_sum_partials1(args, C, W, total, idx + r, row + r, col, S);
  }
}

