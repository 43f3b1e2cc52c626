// wg_tiled's pipeline hooks: the ring's mbarriers (kd_ring, warp-specialized) and a consumer
// warpgroup's step for one k tile (kd_consumer), between the producer load (wg_tiled_copy.cuh) and the
// operand policy (wg_tiled_operands.cuh). Part of wg_tiled.cu's translation unit (embedded, and
// expanded in place like wg_common.cuh).

// KD_WS: the ring's mbarriers after the B-lo buffers. The producer warpgroup copies every k tile,
// waits for it, splits its B and arrives on the stage's `full` barrier; the consumer warpgroups wait
// on `full`, run the tile's wgmmas and, once those retired, arrive on the stage's `empty` barrier and
// the B-lo buffer's `lofree` barrier, which the producer waits on before refilling either. No
// CTA-wide barrier in the loop: the consumers drift apart, so one's promotion overlaps the other's
// wgmmas. Phases: the u-th use of a barrier (u = tile / ring size) completes phase u & 1. Producer
// step t publishes tile t, then copies tile t + D (D = STAGES-2) into the slot of tile t + D - STAGES
// once retired. With two tiles per promotion a consumer holds tile t - 1 while waiting for tile t, so
// D <= STAGES - 2 and kLoBufs >= 2 never deadlock. 384 threads start at 168 registers each; the
// producer needs few, the consumers' two 64-column accumulators and A fragments need more (ptxas: no
// spills at 72 / 216); stream-K's producer, with its per-segment plans, needs more (NVRTC: 88 spills
// 52 bytes, 96 none), and its consumers fit in 200.
struct kd_ring {
  const unsigned& bars;
  const kd_ops& ops;
  const int& lane;
  __device__ __forceinline__ unsigned full(int i) const { return bars + 8 * (i % KD_STAGES); }
  __device__ __forceinline__ unsigned empty(int i) const { return bars + 8 * (KD_STAGES + i % KD_STAGES); }
  __device__ __forceinline__ unsigned lofree(int i) const { return bars + 8 * (2 * KD_STAGES + i % kLoRing); }
  // Producer: k tile i has landed; split its B into a B-lo buffer whose tile i - kLoBufs the consumers
  // retired, then publish the tile.
  __device__ __forceinline__ void publish(int i) const {
#if KD_TMAL
    // The TMA's copies of tile i completed on its `landed` barrier (after the B-lo buffers' barriers).
    kd_mbar_wait(bars + 8 * (2 * KD_STAGES + kLoRing + i % KD_STAGES), (i / KD_STAGES) & 1);
#else
    kd_cp_wait<KD_STAGES - 3>();
#endif
    kd_fence_async();
    kd_bar_sync_loaders();
    if constexpr (!KD_BLO && !KD_F16S) {
      if (i >= kLoBufs) kd_mbar_wait(lofree(i), ((i / kLoRing) - 1) & 1);
      ops.split_tile(i);
    }
    kd_mbar_arrive(full(i));
  }
  // Producer: before the slot of k tile `next` is refilled, the consumers retired its previous tile.
  __device__ __forceinline__ void refill_wait(int next) const {
    if (next >= KD_STAGES) kd_mbar_wait(empty(next), ((next / KD_STAGES) - 1) & 1);
  }
  // Every thread: one thread initializes the barriers (full: one arrival per loading thread; empty and
  // lofree: one per consumer warp).
  __device__ __forceinline__ void init() const {
    if (threadIdx.x == 0) {
      for (int s = 0; s < KD_STAGES; ++s) {
        kd_mbar_init(full(s), kLoaders);
        kd_mbar_init(empty(s), 4 * KD_WG);
      }
      if constexpr (!KD_BLO && !KD_F16S)
        for (int s = 0; s < kLoBufs; ++s) kd_mbar_init(lofree(s), 4 * KD_WG);
      if constexpr (KD_TMAL)
        for (int s = 0; s < KD_STAGES; ++s) kd_mbar_init(bars + 8 * (2 * KD_STAGES + kLoRing + s), 1);
      kd_mbar_fence_init();
    }
    __syncthreads();
  }
  // Consumer: k tile i's wgmmas retired; its slot and B-lo buffer go back (one arrival per warp).
  __device__ __forceinline__ void release(int i) const {
    if (lane == 0) {
      kd_mbar_arrive(empty(i));
      if constexpr (!KD_BLO && !KD_F16S) kd_mbar_arrive(lofree(i));
    }
  }
};

// The consumer compute hook: one k tile's step of a consumer warpgroup, referring to the kernel's
// hooks and k range. In step (KD_WS = 0): before tile i, tiles 0 .. i+STAGES-3 are committed; at most
// STAGES-4 pending means tile i+1 has landed (this step splits it), and the barrier also publishes
// tile i's split; KD_LATE = 1 issues the next stage's copies after the tile's wgmmas instead of
// before. Warp-specialized: the tile's `full` barrier, then its slot goes back once its wgmmas
// retired. Either way at most two tiles' wgmmas are in flight: the previous tile's A registers are
// reused next. P: the tile's place in its promotion group; LAST: promote after it.
struct kd_consumer {
  const kd_copy& copy;
  kd_ops& ops;
  const kd_ring& ring;
  const int& nk;
  const long long& kt0;
  template <class P, class LAST>
  __device__ __forceinline__ void tile(int i, P, LAST) const {
    constexpr int p = P::value;
    if constexpr (!KD_WS) {
      kd_cp_wait<KD_STAGES - 4>();
      __syncthreads();
      const int next = i + KD_STAGES - 2;
      if constexpr (!KD_LATE) {
        if (next < nk) copy.load_stage(next % KD_STAGES, kt0 + next);
        kd_cp_commit();
      }
      ops.mma_tile(i, P{});
      if constexpr (KD_LATE) {
        if (next < nk) copy.load_stage(next % KD_STAGES, kt0 + next);
        kd_cp_commit();
      }
      if constexpr (p > 0) kd_wg_wait<1>();
      if (i + 1 < nk) ops.split_tile(i + 1);
      if constexpr (LAST::value) ops.promote();
    } else {
      kd_mbar_wait(ring.full(i), (i / KD_STAGES) & 1);
      ops.mma_tile(i, P{});
      if constexpr (p > 0) {
        kd_wg_wait<1>();
        ring.release(i - 1);
      }
      if constexpr (LAST::value) {
        ops.promote();
        ring.release(i);
      }
    }
  }
  // KD_F16S of 32 or 64 columns (KD_AHEAD): k tile i, whose A the previous step split into fragment
  // set p. Its wgmmas are issued, then tile i + 1's A is split into the other set while they run, then
  // tile i is promoted and its slot goes back. Holding tile i while waiting for tile i + 1 is the
  // two-tile case of kd_ring's deadlock argument.
  template <class P>
  __device__ __forceinline__ void ahead(int i, P) const {
    constexpr int p = P::value;
    ops.template issue<p>(i);
    if (i + 1 < nk) {
      kd_mbar_wait(ring.full(i + 1), ((i + 1) / KD_STAGES) & 1);
      ops.template split_a<1 - p>(i + 1);
    }
    ops.template promote_set<p>();
    ring.release(i);
  }
};
