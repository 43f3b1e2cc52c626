#include "builtin/row_family.hpp"

#include <algorithm>
#include <array>
#include <sstream>

#include <fmt/format.h>

#include "builtin/embedded_kernels.hpp"
#include "builtin/family_rules.hpp"

namespace kd::builtin {
namespace {

using namespace row_param;

// The kernel's KD_OP and KD_DT numbering is the enums' declaration order.
static_assert(static_cast<int>(RowOp::rmsnorm) == 0 && static_cast<int>(RowOp::layernorm) == 1 &&
              static_cast<int>(RowOp::softmax) == 2);
static_assert(static_cast<int>(DType::f16) == 0 && static_cast<int>(DType::bf16) == 1 &&
              static_cast<int>(DType::f32) == 2);
constexpr std::array<std::string_view, 3> kOpNames = {"rmsnorm", "layernorm", "softmax"};
constexpr std::array<std::string_view, 3> kDTypeNames = {"f16", "bf16", "f32"};

constexpr long long kAccessBytes = 16;      // the widest access
constexpr long long kWaves = 4;             // kd_row_main's grid cap, in waves of resident blocks
constexpr long long kSplitWaves = 2;        // a split plan's blocks, in waves
constexpr long long kSplitMinAccesses = 4;  // per thread and chunk: fewer make the partials dominate
constexpr long long kSplitRowBytes = 128 * 1024;  // split rows from here, when rows are few
constexpr long long kManyRowsPerSm = 8;           // rows enough for small groups to fill the GPU
constexpr long long kMaxGridY = 65535;

long long elem_bytes(const RowShape& s) { return static_cast<long long>(dtype_bytes(s.dtype)); }

// The largest power of two dividing cols with at most 16-byte accesses.
long long widest_vec(const RowShape& s) {
  for (long long v = kAccessBytes / elem_bytes(s); v > 1; v /= 2)
    if (s.cols % v == 0) return v;
  return 1;
}

long long pow2_ceil(long long v) {
  long long p = 1;
  while (p < v) p *= 2;
  return p;
}

// Resident blocks per SM as the threads allow (2048 threads and 32 blocks per SM, sm_80 to sm_90);
// registers may allow fewer, which the grid-stride loop absorbs.
long long blocks_per_sm(long long threads) { return std::clamp(2048 / threads, 1LL, 32LL); }

// The most accesses of `vec` elements one thread may hold.
long long most_accesses(const RowShape& s, long long vec) { return std::max(1LL, row_cache_values(s.dtype) / vec); }

// Vectors of a row each block of a cluster (of `cluster` blocks) holds.
long long chunk_vecs(const RowShape& s, const Params& p) {
  const long long nvec = s.cols / std::max(1LL, param(p, kVec));
  return ceil_div(nvec, p.contains(kCluster) ? std::max(1LL, param(p, kCluster)) : 1LL);
}

// A ring's shared memory per block: stages of rows per block x chunk x 16 bytes.
long long ring_bytes(const RowShape& s, const Params& p) {
  const long long rows_per_block = param(p, kThreads) / std::max(1LL, param(p, kRowThreads));
  return param(p, kStages) * rows_per_block * chunk_vecs(s, p) * kAccessBytes;
}

// Blocks per row that give about kSplitWaves waves of `threads`-thread blocks, keeping at least
// kSplitMinAccesses accesses per thread in each chunk.
long long split_for(const RowShape& s, const Target& t, long long threads, long long vec) {
  const long long target = kSplitWaves * t.sms * blocks_per_sm(threads);
  const long long most = (s.cols / vec) / (threads * kSplitMinAccesses);
  return std::min(ceil_div(target, s.rows), most);
}

}  // namespace

long long row_cache_values(DType dtype) { return dtype_bytes(dtype) == 2 ? kRowCacheValues16 : kRowCacheValues; }
long long row_cache_values_max(DType dtype) {
  return dtype_bytes(dtype) == 2 ? kRowCacheValuesMax16 : kRowCacheValuesMax;
}

bool row_one_tile(const RowShape& s, const Params& p) {
  return param(p, kSplit) <= 1 && chunk_vecs(s, p) <= param(p, kRowThreads) * param(p, kCache);
}

namespace {
// Every block's chunk is exactly one full tile: every cluster block's chunk alike, every access of
// every thread in bounds (the kernel drops its bounds checks).
bool row_full_tile(const RowShape& s, const Params& p) {
  const long long nvec = s.cols / std::max(1LL, param(p, kVec));
  const long long cluster = p.contains(kCluster) ? std::max(1LL, param(p, kCluster)) : 1LL;
  return row_one_tile(s, p) && nvec % cluster == 0 && nvec / cluster == param(p, kRowThreads) * param(p, kCache);
}
}  // namespace

std::optional<std::string> row_rejects(const RowShape& s) {
  if (s.rows < 1 || s.cols < 1) return fmt::format("empty tensor ({} rows of {} columns)", s.rows, s.cols);
  if (s.op == RowOp::softmax && (s.weight || s.bias)) return "softmax takes no weight or bias";
  if (s.op == RowOp::rmsnorm && s.bias) return "rmsnorm takes no bias";
  return std::nullopt;
}

namespace {
// Every seed row_seeds would propose, best guess first.
std::vector<Params> all_seeds(const RowShape& s, const Target& t) {
  const long long vec = widest_vec(s), nvec = s.cols / vec, most = most_accesses(s, vec);
  std::vector<Params> out;
  const long long deepest = std::max(1LL, row_cache_values_max(s.dtype) / vec);
  auto add = [&](long long threads, long long row_threads, long long cache, long long split, long long prefetch = 0,
                 long long no_l1 = 0) {
    Params p{{kThreads, threads},
             {kRowThreads, row_threads},
             {kVec, vec},
             {kCache, cache},
             {kSplit, split},
             {kPdl, t.cc_major >= 9 ? 1 : 0},
             {kCluster, 1},
             {kStages, 0},
             {kHoldWb, 0},
             {kPrefetch, prefetch},
             {kNoL1, no_l1}};
    if (row_valid(s, t, p) && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  };
  // Groups of `row_threads` holding their rows in registers, `threads / row_threads` rows per block
  // (the next row prefetched into L2 when `prefetch`: blocks that loop over several rows).
  auto held = [&](long long threads, long long row_threads, long long prefetch = 0, long long no_l1 = 0) {
    if (ceil_div(nvec, row_threads) <= most)
      add(threads, row_threads, ceil_div(nvec, row_threads), 1, prefetch, no_l1);
  };
  // Half the group, each thread holding up to twice the values (a deep tile): more bytes per thread
  // in flight, rows narrower or two long rows per SM.
  auto deep = [&](long long threads, long long row_threads) {
    const long long cache = ceil_div(nvec, row_threads);
    if (cache > most && cache <= deepest) add(threads, row_threads, cache, 1);
  };
  // The smallest row group that holds a row.
  const long long group = std::max(32LL, pow2_ceil(ceil_div(nvec, most)));

  if (s.rows < 2 * t.sms && s.cols * elem_bytes(s) >= kSplitRowBytes) {
    // Too few rows to fill the GPU: blocks share rows, and x is read twice (once per launch). Small
    // blocks first (H200, 16 x 4M f32 layernorm: 256 threads 259 us, 512 257 us, 1024 263 us, one
    // block per row 841 us; 8 x 1M bf16: 24, 26, 28 and 140 us).
    for (const long long threads : {256LL, 512LL, 1024LL}) {
      const long long split = split_for(s, t, threads, vec);
      if (split >= 2) add(threads, threads, std::min(4LL, most), split);
    }
    add(1024, 1024, std::min(4LL, most), 1);
    return out;
  }
  if (s.rows < kManyRowsPerSm * t.sms && nvec <= 1024 * most) {
    // Few rows that a block holds (decode-sized calls): latency, not bandwidth, sets the time, so a
    // block per row with the fewest accesses per thread first (H200, 16 x 4096 bf16 rmsnorm: 512
    // threads of one access 1.84 us, 256 of two 1.93 us, 128 of four 2.32 us).
    const long long widest = std::clamp(pow2_ceil(nvec), 32LL, 1024LL);
    for (long long w = widest; w >= std::max(32LL, widest / 4); w /= 2) {
      held(w, w);
      deep(w, w);  // a row a block holds only deep: half the threads, two rows per SM in flight
    }
    if (out.size() >= 3) return out;  // else the short-row seeds below join them
  }
  // Rows a group narrower than a warp holds (f32 up to 384 columns): several rows per warp, each lane
  // with several loads in flight (a warp per 128-column f32 row has one 16-byte load per lane).
  const long long narrow = pow2_ceil(ceil_div(nvec, most));
  if (narrow < 32) {
    held(256, std::max(4LL, narrow));
    if (2 * narrow < 32) held(256, std::max(4LL, 2 * narrow));
  }
  if (group <= 128) {
    // Short rows: several per block, in the smallest group that holds one (its next row prefetched,
    // then not), in half of it with deep tiles, in smaller blocks (x past L1 where weights are read
    // for every row), then in wider groups (H200, plain launches: 4096 x 1024 f32 layernorm, 32 lanes
    // of 32 values 10.3 us, 64 of 16 11.1 us; 16384 x 1024 bf16 layernorm, a warp per row 22.1 us,
    // 21.7 prefetching, 19.6 in blocks of 128 with x past L1).
    held(std::max(256LL, group), group, 1);
    held(std::max(256LL, group), group);
    if (group / 2 >= 4) deep(256, group / 2);
    held(std::max(128LL, group), group, 0, s.weight || s.bias ? 1 : 0);
    held(std::max(256LL, 2 * group), 2 * group);
    held(std::max(512LL, 4 * group), 4 * group);
    return out;
  }
  if (group <= 1024) {
    // A block of `threads` holding its row with about four accesses per thread.
    const long long threads = std::clamp(pow2_ceil(ceil_div(nvec, 4)), group, 1024LL);
    if (s.rows >= kManyRowsPerSm * t.sms) {
      // Many rows: the smallest group holding a row, each thread with the most bytes in flight, its
      // next row prefetched and not; then a small group reading x twice (the second time from L2),
      // half the group with deep tiles and a wider group holding it (H200, 16384 x 8192 bf16
      // layernorm, plain launches: 256 threads of 32 values 146.7 us, 141.5 prefetching; 128 of 64
      // values 144.3 us; session 25: 128 threads reading twice 209 us, 512 of 16 values 250 us).
      held(std::max(256LL, group), group, 1);
      held(std::max(256LL, group), group);
      add(128, 128, most, 1);
      if (group / 2 >= 32) deep(std::max(128LL, group / 2), group / 2);
      held(std::min(1024LL, std::max(256LL, 2 * group)), std::min(1024LL, 2 * group));
      return out;
    }
    // Few rows: a block per row holding it, then one row per half of a larger block, then fewer
    // accesses; the last reads x twice with a small block.
    held(threads, threads);
    deep(threads / 2, threads / 2);
    held(std::min(1024LL, 2 * threads), threads);
    held(std::min(1024LL, 2 * threads), std::min(1024LL, 2 * threads));
    add(128, 128, most, 1);
    return out;
  }
  // Long rows, read twice (H200, 4096 x 65536 f32 softmax: 1024 threads 736 us, 512 779 us, 256
  // 812 us), then held by a cluster of 512-thread blocks (833 us with 8: the cluster barrier per row
  // costs more than the second read saves, so far).
  add(1024, 1024, std::min(4LL, most), 1);
  add(512, 512, most, 1);
  add(256, 256, most, 1);
  const long long cluster = pow2_ceil(ceil_div(nvec, 512 * most));
  if (cluster <= 8 && t.cc_major >= 9) {
    Params p{{kThreads, 512}, {kRowThreads, 512}, {kVec, vec},   {kSplit, 1},
             {kPdl, 1},         {kCluster, cluster}, {kStages, 0}, {kHoldWb, 0}, {kPrefetch, 0}, {kNoL1, 0}};
    p = row_complete(s, t, std::move(p));
    if (row_valid(s, t, p) && row_one_tile(s, p)) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::vector<Params> row_seeds(const RowShape& s, const Target& t) {
  std::vector<Params> out = all_seeds(s, t);
  if (out.size() > 6) out.resize(6);  // the best guesses come first
  return out;
}

Params row_complete(const RowShape& s, const Target& t, Params p) {
  if (!p.contains(kVec)) p[kVec] = widest_vec(s);
  if (!p.contains(kThreads)) p[kThreads] = 256;
  if (!p.contains(kRowThreads)) p[kRowThreads] = p[kThreads];
  if (!p.contains(kSplit)) p[kSplit] = 1;
  if (!p.contains(kPdl)) p[kPdl] = t.cc_major >= 9 ? 1 : 0;
  if (!p.contains(kCluster)) p[kCluster] = 1;
  if (!p.contains(kStages)) p[kStages] = 0;
  if (!p.contains(kHoldWb)) p[kHoldWb] = 0;
  if (!p.contains(kPrefetch)) p[kPrefetch] = 0;
  if (!p.contains(kNoL1)) p[kNoL1] = 0;
  if (!p.contains(kCache)) {
    const long long vec = std::max(1LL, p[kVec]);
    const long long segment = ceil_div(s.cols / vec, std::max(1LL, p[kSplit]) * std::max(1LL, p[kCluster]));
    p[kCache] = std::min(most_accesses(s, vec), ceil_div(segment, std::max(1LL, p[kRowThreads])));
  }
  return p;
}

bool row_valid(const RowShape& s, const Target& t, const Params& p) {
  if (row_rejects(s)) return false;
  const long long threads = param(p, kThreads), row_threads = param(p, kRowThreads), vec = param(p, kVec);
  const long long cache = param(p, kCache), split = param(p, kSplit), pdl = param(p, kPdl);
  if (threads < 32 || threads > 1024 || threads % 32) return false;
  // Row groups of 4, 8 or 16 lanes share a warp (short rows); wider ones are whole warps.
  if (row_threads < 4 || (row_threads % 32 != 0 && 32 % row_threads != 0) || threads % row_threads) return false;
  if (vec < 1 || (vec & (vec - 1)) || vec * elem_bytes(s) > kAccessBytes || s.cols % vec) return false;
  if (cache < 1 || vec * cache > row_cache_values_max(s.dtype)) return false;
  if (pdl != 0 && pdl != 1) return false;
  if (pdl == 1 && t.cc_major < 9) return false;  // griddepcontrol is sm_90's
  if (split < 1 || split > kMaxGridY) return false;
  if (split > 1 && (row_threads != threads || s.rows > kMaxGridY || split > s.cols / vec)) return false;
  // Absent, the parameters added in session 25 mean what records from before them ran: no cluster,
  // no ring, weights loaded per row.
  const long long cluster = p.contains(kCluster) ? param(p, kCluster) : 1;
  const long long stages = param(p, kStages), hold = param(p, kHoldWb);
  if (cluster != 1 && cluster != 2 && cluster != 4 && cluster != 8) return false;
  if (cluster > 1 && (t.cc_major < 9 || split > 1 || row_threads != threads || cluster > s.cols / vec)) return false;
  if (stages < 0 || stages > 8) return false;
  if (stages > 0 && (t.cc_major < 9 || split > 1 || vec * elem_bytes(s) != kAccessBytes ||
                     ring_bytes(s, p) > std::min<long long>(kRowRingBytes, t.smem_optin_bytes)))
    return false;
  const long long prefetch = param(p, kPrefetch);
  if (prefetch != 0 && prefetch != 1) return false;
  if (prefetch == 1 && (t.cc_major < 9 || split > 1 || stages > 0)) return false;  // a bulk prefetch, sm_90
  const long long no_l1 = param(p, kNoL1);
  if (no_l1 != 0 && no_l1 != 1) return false;
  if (hold != 0 && hold != 1) return false;
  if (hold == 1) {
    const long long operands = (s.weight ? 1 : 0) + (s.bias ? 1 : 0);
    if (operands == 0 || split > 1 || chunk_vecs(s, p) > row_threads * cache ||
        operands * cache * vec * elem_bytes(s) > 64)
      return false;
  }
  return true;
}

LaunchPlan row_plan(const RowShape& s, const Target& t, const Params& p) {
  const long long threads = param(p, kThreads), split = param(p, kSplit);
  const bool pdl = param(p, kPdl) == 1;
  LaunchPlan plan;
  if (split <= 1) {
    const long long rows_per_block = threads / param(p, kRowThreads), cluster = param(p, kCluster);
    const long long ring = ring_bytes(s, p);
    long long resident = kWaves * t.sms * blocks_per_sm(threads);
    // A ring block streams its rows itself: one wave of as many blocks as the rings' memory lets
    // reside (an SM's opt-in shared memory, a kilobyte of it per block for the static slots).
    if (ring > 0)
      resident = t.sms * std::clamp<long long>((t.smem_optin_bytes + 1024LL) / (ring + 1024), 1, blocks_per_sm(threads));
    const long long clusters = std::max(1LL, std::min(ceil_div(s.rows, rows_per_block), resident / cluster));
    LaunchSpec main;
    main.entry = "kd_row_main";
    main.grid = {u32(clusters * cluster), 1, 1};
    main.block = {u32(threads), 1, 1};
    main.smem_bytes = u32(ring);
    main.pdl = pdl;
    plan.launches.push_back(main);
    return plan;
  }
  LaunchSpec partial;
  partial.entry = "kd_row_partial";
  partial.grid = {u32(split), u32(s.rows), 1};
  partial.block = {u32(threads), 1, 1};
  partial.pdl = pdl;
  LaunchSpec finish = partial;
  finish.entry = "kd_row_finish";  // waits for the partials in every case; as a dependent it starts sooner
  plan.launches = {partial, finish};
  plan.workspace_bytes = static_cast<std::uint64_t>(s.rows * split * 16);  // one float4 per chunk
  return plan;
}

std::string row_render(const RowShape& s, const Target& t, const Params& p) {
  const auto op = static_cast<std::size_t>(s.op), dt = static_cast<std::size_t>(s.dtype);
  std::ostringstream src;
  src << "// kdispatch builtin family " << kRowFamilyName << ": " << describe(p) << "\n";
  src << fmt::format("// shape: {} rows={} cols={} dtype={} weight={} bias={}\n", kOpNames.at(op), s.rows, s.cols,
                     kDTypeNames.at(dt), s.weight ? 1 : 0, s.bias ? 1 : 0);
  src << "// kdispatch:plan " << plan_to_json(row_plan(s, t, p)) << "\n";
  src << fmt::format(
      "#define KD_OP {}\n#define KD_DT {}\n#define KD_HAS_W {}\n#define KD_HAS_B {}\n#define KD_ONE_TILE {}\n"
      "#define KD_FULL_TILE {}\n",
      op, dt, s.weight ? 1 : 0, s.bias ? 1 : 0, row_one_tile(s, p) ? 1 : 0, row_full_tile(s, p) ? 1 : 0);
  for (const auto& [name, value] : p) src << "#define " << name << " " << value << "\n";
  src << embedded_kernel("row_reduce.cu");
  return src.str();
}

namespace {

std::optional<Params> scale(const Params& p, const char* name, long long num, long long den, bool refit_cache) {
  Params out = p;
  const long long v = param(p, name) * num / den;
  if (v < 1 || v * den != param(p, name) * num) return std::nullopt;
  out[name] = v;
  if (refit_cache) out.erase(kCache);
  return out;
}

// A split row's block is its row group (row_valid): moves of one keep the other in step.
std::optional<Params> block_x2(const Params& p) {
  auto out = scale(p, kThreads, 2, 1, false);
  if (out && param(p, kSplit) > 1) {
    (*out)[kRowThreads] = (*out)[kThreads];
    out->erase(kCache);
  }
  return out;
}
std::optional<Params> block_half(const Params& p) {
  auto out = scale(p, kThreads, 1, 2, false);
  if (out && param(*out, kRowThreads) > param(*out, kThreads)) {
    (*out)[kRowThreads] = (*out)[kThreads];
    out->erase(kCache);
  }
  return out;
}
std::optional<Params> row_threads_x2(const Params& p) {
  auto out = scale(p, kRowThreads, 2, 1, true);
  if (out) (*out)[kThreads] = std::max(param(*out, kThreads), param(*out, kRowThreads));
  return out;
}
std::optional<Params> row_threads_half(const Params& p) {
  if (param(p, kSplit) > 1) return std::nullopt;  // a split row keeps the whole block
  return scale(p, kRowThreads, 1, 2, true);
}
std::optional<Params> cache_x2(const Params& p) { return scale(p, kCache, 2, 1, false); }
std::optional<Params> cache_half(const Params& p) { return scale(p, kCache, 1, 2, false); }
std::optional<Params> split_x2(const Params& p) {
  auto out = scale(p, kSplit, 2, 1, true);
  if (out) (*out)[kRowThreads] = (*out)[kThreads];
  return out;
}
std::optional<Params> split_half(const Params& p) { return scale(p, kSplit, 1, 2, true); }
// A cluster row takes whole blocks (row_valid), as a split row does.
std::optional<Params> cluster_x2(const Params& p) {
  Params out = p;
  out[kCluster] = std::max(1LL, param(p, kCluster)) * 2;
  out[kRowThreads] = param(p, kThreads);
  out.erase(kCache);
  return out;
}
std::optional<Params> cluster_half(const Params& p) {
  if (param(p, kCluster) < 2) return std::nullopt;
  return scale(p, kCluster, 1, 2, true);
}
std::optional<Params> stages_x2(const Params& p) {
  Params out = p;
  out[kStages] = param(p, kStages) == 0 ? 2 : 2 * param(p, kStages);
  return out;
}
// Name set to Value; nullopt where it already is (absent counts as 0).
template <const char* Name, long long Value>
std::optional<Params> set_to(const Params& p) {
  if (param(p, Name) == Value) return std::nullopt;
  Params out = p;
  out[Name] = Value;
  return out;
}

}  // namespace

const std::vector<RowMove>& row_moves() {
  static const std::vector<RowMove> moves{
      {"row_block_x2", "twice the block size", block_x2},
      {"row_block_half", "half the block size", block_half},
      {"row_threads_x2", "twice the threads per row", row_threads_x2},
      {"row_threads_half", "half the threads per row", row_threads_half},
      {"row_cache_x2", "twice the register cache depth", cache_x2},
      {"row_cache_half", "half the register cache depth", cache_half},
      {"row_split_x2", "twice the blocks per row", split_x2},
      {"row_split_half", "half the blocks per row", split_half},
      {"row_cluster_x2", "twice the cluster blocks per row", cluster_x2},
      {"row_cluster_half", "half the cluster blocks per row", cluster_half},
      {"row_ring_x2", "twice the shared-memory ring stages (two from none)", stages_x2},
      {"row_ring_off", "no shared-memory ring", set_to<kStages, 0>},
      {"row_prefetch_on", "each row group prefetches its next row into L2", set_to<kPrefetch, 1>},
      {"row_prefetch_off", "no prefetch of the next row", set_to<kPrefetch, 0>},
      {"row_x_past_l1", "x, read once, bypasses L1 (left to the weights)", set_to<kNoL1, 1>},
      {"row_x_through_l1", "x read through L1", set_to<kNoL1, 0>},
  };
  return moves;
}

std::optional<Params> apply_row_move(const RowMove& move, const RowShape& shape, const Target& target,
                                     const Params& params) {
  std::optional<Params> moved = move.move(params);
  if (!moved) return std::nullopt;
  Params done = row_complete(shape, target, std::move(*moved));
  if (done == params || !row_valid(shape, target, done)) return std::nullopt;
  return done;
}

}  // namespace kd::builtin
