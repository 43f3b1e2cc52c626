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

// Stream-K: the tile of a consumer's segment. A CTA's segments are consecutive tiles, so the cursor
// divides once, from the CTA's first unit, before the first k tile lands, and then steps a tile per
// segment. Divided in every flush, the tile's place took 0.4 us of each flush on the short-k bmm
// (128^3 x256: about 2 us a flush; kernel lab, H200, session 46).
struct kd_sk_cursor {
  int z, t, tr, tc;  // KD_SKB's batch entry (else 0), the tile in it, its row and column of tiles
  int ts;            // the tile's first unit
  // `tiles`: tiles per batch entry.
  __device__ __forceinline__ kd_sk_cursor(int u0, int tm, int ktiles_all, int tiles) {
    const int all = u0 / ktiles_all;
    z = KD_SKB ? all / tiles : 0;
    t = all - z * tiles;
    tr = t % tm;
    tc = t / tm;
    ts = all * ktiles_all;
  }
  __device__ __forceinline__ void next(int tm, int ktiles_all, int tiles) {
    ts += ktiles_all;
    if (++tr == tm) {
      tr = 0;
      ++tc;
    }
    if (KD_SKB && ++t == tiles) {
      t = tr = tc = 0;
      ++z;
    }
  }
};

// Stream-K's store at the end of a segment, referring to the kernel's values as a lambda would.
struct kd_stream_k {
  const kd_gemm_args& args;
  float (&acc)[KD_MW][kAcc];
  const int &wg, &warp, &lane;
  const long long &z, &m, &n;
  const int &tm, &ktiles_all, &units;  // tiles per column of C, k tiles per tile, units per batch entry (KD_SKB: in all)
  const int &u0, &u1;                   // the CTA's units

  // The segment in tile `c`: a tile that this CTA covers whole goes to C; otherwise the segment's
  // partial goes to workspace slot (CTA - the tile's first CTA), [slot][batch][n][m], which
  // kd_wg_sk_reduce sums in slot order. The accumulators start again from zero.
  __device__ __forceinline__ void flush(const kd_sk_cursor& c) const {
    const long long sm0 = static_cast<long long>(c.tr) * kBM, sn0 = static_cast<long long>(c.tc) * KD_BN;
    // KD_SKB: the host rules give every CTA whole tiles.
    if (c.ts >= u0 && c.ts + ktiles_all <= u1) {
      KD_C_T* C = static_cast<KD_C_T*>(args.c) + (z + c.z) * args.stride_c;
      if (sm0 + kBM <= m && sn0 + KD_BN <= n)
        kd_store_acc_whole(args, C, acc, wg, warp, lane, sm0, sn0);
      else
        kd_for_each_acc(acc, wg, warp, lane, sm0, sn0,
                        [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
    } else {  // never with KD_SKB
      const long long first = kd_wg_sk_cta(c.ts, units, KD_SK);
      float* W = static_cast<float*>(args.workspace) + ((blockIdx.x - first) * args.batch + z) * m * n;
      kd_for_each_acc(acc, wg, warp, lane, sm0, sn0, [&](long long r, long long c, float v) {
        if (r < m && c < n) W[r + c * m] = v;
      });
    }
#pragma unroll
    for (int q = 0; q < kAcc; ++q) acc[0][q] = 0.f;
  }
#if KD_TMAST
  // KD_TMAST: the consumer's 64 x BN outputs, finished here (alpha, beta C, bias), through its 16 KB
  // staging buffer `buf` (two boxes of 32 rows x 64 columns, 128-byte swizzle: column c's 32 rows one
  // 128-byte line, 16-byte chunk q at q ^ (c % 8); no bank conflicts) and two TMA stores per 64 columns;
  // the TMA clips rows and columns past C. Before rewriting the buffer, the stores from it have read it.
  __device__ __forceinline__ void flush_tma(const kd_sk_cursor& c, unsigned buf, const void* map) const {
    const int zz = static_cast<int>(z) + c.z;
    const int row0 = c.tr * kBM + 64 * wg, col0 = c.tc * KD_BN;
    const int g = lane >> 2, tq = lane & 3;
    const int b = warp >> 1;
#pragma unroll
    for (int h = 0; h < KD_BN / 64; ++h) {
      if (warp == 0 && lane == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      asm volatile("bar.sync %0, 128;" ::"r"(5 + wg) : "memory");
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int rr = ((warp & 1) << 4) + g + ((q >> 1) << 3);
          const int cb = 8 * j + 2 * tq + (q & 1);
          const unsigned off = b * 8192 + cb * 128 + ((((rr >> 2) ^ (cb & 7))) << 4) + (rr & 3) * 4;
          float v = kd_epilogue_value(args, acc[0][4 * (8 * h + j) + q]);
#if !KD_BETA_ZERO || KD_BIAS
          const long long gr = row0 + 32 * b + rr, gc = col0 + 64 * h + cb;
          if (gr < m && gc < n) {
#if !KD_BETA_ZERO
            v += args.beta * kd_to_float(static_cast<const KD_C_T*>(args.c)[(z + c.z) * args.stride_c + gr + gc * args.ldc]);
#endif
            v += kd_bias_of<KD_C_T>(args, gr);
          }
#endif
          asm volatile("st.shared.f32 [%0], %1;" ::"r"(buf + off), "f"(v) : "memory");
        }
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      asm volatile("bar.sync %0, 128;" ::"r"(5 + wg) : "memory");
      if (warp == 0 && lane == 0) {
#pragma unroll
        for (int bb = 0; bb < 2; ++bb)
          asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(map),
                       "r"(row0 + 32 * bb), "r"(col0 + 64 * h), "r"(zz), "r"(buf + bb * 8192) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      }
    }
#pragma unroll
    for (int q = 0; q < kAcc; ++q) acc[0][q] = 0.f;
  }
#endif
};
#if KD_TMAST
// C's 3-D tensor map (rows m, columns n, batch; box 32 x 64 x 1; 128-byte swizzle).
__device__ __forceinline__ void kd_make_cmap(unsigned tmp, void* out, const kd_gemm_args& args, int lane) {
  kd_make_map3<32, 64, 3>(tmp, out, args.c, args.m, args.n, args.batch, args.ldc, args.stride_c, lane);
}
#endif

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

