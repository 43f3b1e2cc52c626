#include "cublaslt/algo.hpp"

#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace kd {
namespace {

// cublasLtMatmulStages_t (not contiguous).
constexpr std::pair<std::uint32_t, std::string_view> kStageNames[] = {
    {0, "auto"},   {1, "16x1"},   {2, "16x2"},   {3, "16x3"},   {4, "16x4"},   {5, "16x5"},    {6, "16x6"},
    {7, "32x1"},   {8, "32x2"},   {9, "32x3"},   {10, "32x4"},  {11, "32x5"},   {12, "32x6"},
    {13, "64x1"},  {14, "64x2"},  {15, "64x3"},  {16, "64x4"},  {17, "64x5"},   {18, "64x6"},
    {19, "128x1"}, {20, "128x2"}, {21, "128x3"}, {22, "128x4"}, {23, "128x5"},  {24, "128x6"},
    {25, "32x10"}, {26, "8x4"},   {27, "16x10"}, {28, "8x5"},   {31, "8x3"},    {32, "8xauto"},
    {33, "16xauto"}, {34, "32xauto"}, {35, "64xauto"}, {36, "128xauto"}, {37, "256xauto"},
    {38, "768xauto"}};

std::string tile_name(std::uint32_t id) {
  const std::string_view name = tile_shape_name(id);
  return name.empty() ? fmt::format("#{}", id) : std::string(name);
}

std::string stages_name(std::uint32_t id) {
  for (const auto& [value, name] : kStageNames)
    if (value == id) return std::string(name);
  return fmt::format("#{}", id);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <class T>
void get(const CublasLtLibrary& lt, const cublasLtMatmulAlgo_t& algo,
         cublasLtMatmulAlgoConfigAttributes_t attr, T& out, const char* name) {
  std::size_t written = 0;
  KD_LT_CHECK(lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &out, sizeof(out), &written), name);
}

}  // namespace

std::string algo_hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::optional<std::string> algo_bytes_from_hex(std::string_view hex) {
  if (hex.size() != 2 * kCublasLtAlgoBytes) return std::nullopt;
  std::string out(kCublasLtAlgoBytes, '\0');
  for (std::size_t i = 0; i < kCublasLtAlgoBytes; ++i) {
    const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

cublasLtMatmulAlgo_t to_matmul_algo(std::string_view bytes) {
  if (bytes.size() != kCublasLtAlgoBytes)
    throw Error(ErrorDomain::data, 0,
                fmt::format("a cuBLASLt algorithm is {} bytes, got {}", kCublasLtAlgoBytes, bytes.size()));
  cublasLtMatmulAlgo_t algo{};
  std::memcpy(&algo, bytes.data(), kCublasLtAlgoBytes);
  return algo;
}

std::string algo_bytes(const cublasLtMatmulAlgo_t& algo) {
  return std::string(reinterpret_cast<const char*>(&algo), kCublasLtAlgoBytes);
}

AlgoConfig read_algo_config(const CublasLtLibrary& lt, const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  get(lt, algo, CUBLASLT_ALGO_CONFIG_ID, c.id, "CUBLASLT_ALGO_CONFIG_ID");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_TILE_ID, c.tile, "CUBLASLT_ALGO_CONFIG_TILE_ID");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, c.stages, "CUBLASLT_ALGO_CONFIG_STAGES_ID");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.splitk, "CUBLASLT_ALGO_CONFIG_SPLITK_NUM");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c.reduction, "CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c.swizzle, "CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c.custom, "CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c.inner_shape, "CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID");
  get(lt, algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c.cluster_shape, "CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID");
  return c;
}

std::string_view reduction_scheme_name(std::uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output_type";
    default: return "unknown";
  }
}

std::string describe(const AlgoConfig& c) {
  std::string out = fmt::format("algo {} tile {} stages {}", c.id, tile_name(c.tile), stages_name(c.stages));
  if (c.splitk > 1) out += fmt::format(" split-K {} (reduce {})", c.splitk, reduction_scheme_name(c.reduction));
  if (c.swizzle != 0) out += fmt::format(" swizzle {}", c.swizzle);
  if (c.custom != 0) out += fmt::format(" custom {}", c.custom);
  if (c.inner_shape != 0) out += fmt::format(" inner {}", c.inner_shape);
  if (c.cluster_shape != 0) out += fmt::format(" cluster {}", c.cluster_shape);
  return out;
}

}  // namespace kd
