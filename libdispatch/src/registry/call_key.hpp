// The hot-path key: a call's GemmShape (key/gemm_shape.hpp, the one key form of a call) plus the
// CUDA context its stream belongs to.
//
// The shim and kd_gemm have the call's fields, not a key line; building a string per call would
// allocate. CallKey is a POD with no padding bytes, compared with memcmp and hashed with XXH3 over
// its bytes. A miss turns it into a full key line once, on the background thread
// (key/gemm_key.hpp, full_line).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "key/gemm_shape.hpp"

namespace kd {

struct CallKey : GemmShape {
  std::uint64_t context = 0;  // CUcontext value the call's stream belongs to
};
static_assert(sizeof(CallKey) == sizeof(GemmShape) + 8, "CallKey must have no implicit padding");
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
