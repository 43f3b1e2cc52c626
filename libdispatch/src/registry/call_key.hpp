// The hot-path key: a fixed-size binary image of a GEMM call plus the CUDA context it runs in.
//
// The shim and kd_gemm have the call's fields, not a key line; building a string per call would
// allocate. CallKey is a POD with no padding bytes, compared with memcmp and hashed with XXH3 over
// its bytes. It is converted to a GemmKey / full key line only on the background thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kd {

struct CallKey {
  std::uint64_t context = 0;  // CUcontext value the call's stream belongs to
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // 0 when batch == 1
  // kd::DType, ComputeType, PrecisionClass, Transpose, Epilogue values (key/gemm_key.hpp).
  std::uint8_t a = 0, b = 0, c = 0;
  std::uint8_t compute = 0, precision = 0;
  std::uint8_t ta = 0, tb = 0;
  std::uint8_t epilogue = 0;
  std::uint8_t beta_zero = 0;
  std::uint8_t reserved[7] = {};  // explicit padding: always zero, so memcmp and hashing are exact
};
static_assert(sizeof(CallKey) == 104, "CallKey must have no implicit padding");
static_assert(std::has_unique_object_representations_v<CallKey>);
static_assert(std::is_trivially_copyable_v<CallKey>);

inline bool operator==(const CallKey& x, const CallKey& y) noexcept {
  return std::memcmp(&x, &y, sizeof(CallKey)) == 0;
}

// XXH3-64 of the key's bytes. Never 0 (0 marks an empty hash tag). Inline: it is on every call's
// path, and with the size known XXH3 compiles to a handful of multiplies.
inline std::uint64_t hash_call_key(const CallKey& key) noexcept {
  const std::uint64_t h = XXH3_64bits(&key, sizeof(key));
  return h == 0 ? 1 : h;
}

}  // namespace kd
