// A cuBLASLt candidate as the project stores and moves it: the raw bytes of a
// cublasLtMatmulAlgo_t, the workspace it needs, and the cuBLASLt version that made it
// (design.md: "A cuBLASLt candidate is not a kernel"). Bytes travel as hex in JSON (worker
// protocol, search trees) and raw in records.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cublaslt/library.hpp"

namespace kd {

inline constexpr std::size_t kCublasLtAlgoBytes = sizeof(cublasLtMatmulAlgo_t);
static_assert(kCublasLtAlgoBytes == 64, "cublasLtMatmulAlgo_t is 64 bytes (uint64_t data[8])");

// cuBLASLt picks algorithms for pointers aligned this much (the heuristic's default
// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES); records require it of a, b and c.
inline constexpr std::uint32_t kCublasLtAlignmentBytes = 256;

struct CublasLtAlgo {
  std::string bytes;                  // kCublasLtAlgoBytes raw bytes of cublasLtMatmulAlgo_t
  std::uint64_t workspace_bytes = 0;  // what cublasLtMatmulAlgoCheck says the algorithm needs
  int version = 0;                    // cublasLtGetVersion() of the library that made it
  bool operator==(const CublasLtAlgo&) const = default;
};

// Lower-case hex of `bytes`; the inverse is nullopt unless `hex` is exactly kCublasLtAlgoBytes
// bytes of hex digits.
std::string algo_hex(std::string_view bytes);
std::optional<std::string> algo_bytes_from_hex(std::string_view hex);

// Requires bytes.size() == kCublasLtAlgoBytes (throws kd::Error (data) otherwise).
cublasLtMatmulAlgo_t to_matmul_algo(std::string_view bytes);
std::string algo_bytes(const cublasLtMatmulAlgo_t& algo);

// The configuration attributes of an algorithm (CUBLASLT_ALGO_CONFIG_*), as read back from it.
struct AlgoConfig {
  std::int32_t id = 0;
  std::uint32_t tile = 0, stages = 0, reduction = 0, swizzle = 0, custom = 0;
  std::int32_t splitk = 1;
  std::uint16_t inner_shape = 0, cluster_shape = 0;
};
// Reads every attribute through `lt`; throws kd::Error (cuda) when cuBLASLt refuses one.
AlgoConfig read_algo_config(const CublasLtLibrary& lt, const cublasLtMatmulAlgo_t& algo);

// "algo 21 tile 128x64 stages 64x3 split-K 4 (reduce compute_type) swizzle 1 custom 2 cluster 3"
// (parts at their defaults are left out). What search trees show as a cuBLASLt node's idea.
std::string describe(const AlgoConfig& c);
std::string_view reduction_scheme_name(std::uint32_t scheme);
// The cublasLtMatmulTile_t shape of a tile id ("128x64"; "auto" for 0); empty for an id newer
// than the table (tile_names.cpp, from CUDA 13.1's cublasLt.h).
std::string_view tile_shape_name(std::uint32_t tile_id);

}  // namespace kd
