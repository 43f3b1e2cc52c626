// The builtin family for row operators (issue 33): row_reduce, rmsnorm, layernorm and softmax over the
// last dimension (kernels/row_reduce.cu, the contract in <kdispatch/rowop.cuh>). Its host rules are
// the GEMM families' (family.hpp) for a RowShape instead of a GemmKey: what it rejects, round-0 seeds,
// completion, validity, the launch plan and the rendered source.
//
// Required alignment: x, y, weight and bias start on 16-byte boundaries (kRowAlignmentBytes); every
// row then starts on a KD_VEC-element boundary because KD_VEC divides cols.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "builtin/family.hpp"
#include "key/row_shape.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {

inline constexpr std::string_view kRowFamilyName = "row_reduce";
inline constexpr std::size_t kRowAlignmentBytes = 16;

// The most elements one thread holds in registers (KD_VEC * KD_CACHE): the kernel caps registers at
// 64 per thread (at least 1024 resident threads per SM). There ptxas holds 24 f32 values without
// spilling in every op, and 32 of a 16-bit dtype (kept packed: 16 registers; layernorm with weight
// and bias spills one word). Fewer values per thread leave too few bytes in flight per SM: an H200
// ran 16384 x 8192 bf16 layernorm at 3.15 TB/s with 32 and 2.15 with 16.
inline constexpr long long kRowCacheValues = 24;
inline constexpr long long kRowCacheValues16 = 32;
long long row_cache_values(DType dtype);
// The most the search may give one thread: deep tiles, half the threads each holding twice the values,
// so two blocks of an SM each hold a long row (H200, 1024 x 32768 bf16 softmax: 512 threads of 64
// values 39.1 us, 1024 threads of 32 values 53.6 us) or a row group narrows (4096 x 1024 f32
// layernorm: 32 lanes of 32 values 10.3 us, 64 of 16 11.1 us). ptxas still holds them in 64
// registers (softmax spills one word).
inline constexpr long long kRowCacheValuesMax = 32;
inline constexpr long long kRowCacheValuesMax16 = 64;
long long row_cache_values_max(DType dtype);

// The most shared memory a ring may take per block (of 227 KiB per SM on sm_90), leaving the rest to
// the static reduction slots and another block's ring where two fit.
inline constexpr long long kRowRingBytes = 200 * 1024;

// The family's named parameters (the kernel's KD_* macros besides KD_OP, KD_DT, KD_HAS_W and KD_HAS_B,
// which come from the shape at render time).
namespace row_param {
inline constexpr char kThreads[] = "KD_THREADS";         // block size
inline constexpr char kRowThreads[] = "KD_ROW_THREADS";  // threads per row: 4, 8, 16, 32 .. KD_THREADS
inline constexpr char kVec[] = "KD_VEC";                 // elements per access
inline constexpr char kCache[] = "KD_CACHE";             // accesses per thread held in registers
inline constexpr char kSplit[] = "KD_SPLIT";             // blocks per row (> 1: two launches)
inline constexpr char kPdl[] = "KD_PDL";                 // 1: the first launch may overlap the previous kernel
inline constexpr char kCluster[] = "KD_CLUSTER";         // blocks per row in a cluster (1: none)
inline constexpr char kStages[] = "KD_STAGES";           // shared-memory ring stages fed by bulk copies (0: none)
inline constexpr char kHoldWb[] = "KD_HOLD_WB";          // 1: weight and bias loaded once per thread
inline constexpr char kPrefetch[] = "KD_PREFETCH";       // 1: each group asks the L2 for its next row
inline constexpr char kNoL1[] = "KD_NO_L1";              // 1: x, read once, bypasses L1 (kept for the weights)
}  // namespace row_param

// Why the family cannot compute `shape`, or nullopt. It serves every dtype, op and size of a valid
// RowShape; it rejects only shapes the operator does not define (no rows or columns, softmax with a
// weight or bias, rmsnorm with a bias).
std::optional<std::string> row_rejects(const RowShape& shape);

// Round-0 configurations for `shape` (not rejected), 1 to 6, best guess first, each complete and
// valid on `target`. Few rows a block holds (decode): a block per row, the widest first, and half
// of it with deep tiles. Many rows: the smallest power-of-two group that holds a row in registers
// (several rows per block when small), prefetching its next row and not, then a small group reading
// x twice, half the group with deep tiles and a wider holding group. Rows no block holds: a block
// reading x twice, then a cluster holding the row. Rows of at least 128 KiB, fewer than two per SM,
// are split across blocks instead.
std::vector<Params> row_seeds(const RowShape& shape, const Target& target);

// `params` with the parameters it lacks filled in: KD_VEC the widest access cols allows, KD_THREADS
// 256, KD_ROW_THREADS KD_THREADS, KD_SPLIT 1, KD_CLUSTER 1, KD_STAGES 0, KD_HOLD_WB 0, KD_PREFETCH 0,
// KD_NO_L1 0, KD_PDL 1 on sm_90+, KD_CACHE the fewest accesses that hold a row (or chunk), at most
// row_cache_values / KD_VEC. Present ones are kept.
Params row_complete(const RowShape& shape, const Target& target, Params params);

// Whether `params` is legal for `shape` on `target`: block and row-group sizes, KD_VEC dividing cols
// within 16 bytes, the register cache within row_cache_values_max, split rows in whole blocks with a grid
// row per row and at least one access per chunk, KD_PDL only on sm_90+; clusters (2, 4 or 8 whole
// blocks per row, sm_90+, not split); a ring (sm_90+, not split, 16-byte accesses, its stages within
// kRowRingBytes); held weights only where each row chunk is one tile and they take at most 64 bytes
// of registers per thread; the L2 prefetch of the next row (sm_90+, one launch, no ring).
bool row_valid(const RowShape& shape, const Target& target, const Params& params);

// KD_SPLIT == 1: kd_row_main over at most four waves of blocks (grid-stride beyond), each row's
// KD_CLUSTER blocks adjacent in x; with a ring, one wave of the blocks the ring's shared memory lets
// reside (each streams its rows through its own ring). KD_SPLIT > 1:
// kd_row_partial then kd_row_finish, each grid [KD_SPLIT, rows], workspace rows * KD_SPLIT * 16
// bytes. With KD_PDL == 1 every launch is a programmatic dependent. Requires row_valid.
LaunchPlan row_plan(const RowShape& shape, const Target& target, const Params& params);

// Whether each block's row chunk of `shape` is one tile of `params` (held in registers from one read).
bool row_one_tile(const RowShape& shape, const Params& params);

// The complete candidate source: a header naming the family, its parameters and the shape, the
// `kdispatch:plan` comment, the #defines (KD_OP, KD_DT, KD_HAS_W, KD_HAS_B, KD_ONE_TILE and
// KD_FULL_TILE from the shape, then `params`), then kernels/row_reduce.cu. Deterministic for equal inputs.
std::string row_render(const RowShape& shape, const Target& target, const Params& params);

// The family's idea moves (the builtin proposer's ideas for a row_reduce seed): block size x2 and /2,
// threads per row x2 and /2 (fewer or more rows per block), register cache depth x2 and /2, blocks
// per row x2 and /2 (split rows), cluster blocks per row x2 and /2, shared-memory ring stages x2
// (from none: two) and off, the next row's L2 prefetch on and off, x's L1 bypass on and off. Each names the parameters it changes; a move that changes the threads a
// row's chunk spreads over drops KD_CACHE, which row_complete then fits to the new chunk.
struct RowMove {
  std::string_view id;     // the idea's handle, stable
  std::string_view words;  // what it does, as the tree records it (with the parameters after)
  std::optional<Params> (*move)(const Params& params);  // nullopt: does not apply to `params`
};
const std::vector<RowMove>& row_moves();

// `params` (complete) moved by `move`, completed and valid for `shape` on `target`; nullopt when the
// move does not apply, leaves the parameters as they were or makes them invalid.
std::optional<Params> apply_row_move(const RowMove& move, const RowShape& shape, const Target& target,
                                     const Params& params);

}  // namespace kd::builtin
