// The hot-path key: a call's GemmShape (key/gemm_shape.hpp, the one key form of a call) plus the
// CUDA context its stream belongs to.
//
// The shim and kd_gemm have the call's fields, not a key line; building a string per call would
// allocate. CallKey is a POD with no padding bytes, compared with memcmp and hashed with XXH3 over
// its bytes. A miss turns it into a full key line once, on the background thread
// (key/gemm_key.hpp, full_line).
//
// A row operator's call (issue 33: rmsnorm, layernorm, softmax; key/row_shape.hpp) travels the same
// registry, miss queue and loader in the same CallKey, so the GEMM hit path (key size, hash, table)
// is unchanged: its RowShape is written into the GemmShape fields below, marked by m ==
// kRowCallMark. No GEMM call key has m < 1 (the C API refuses those before any lookup), so the two
// never collide; every field not listed stays at its default, so equal row shapes give equal bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "key/gemm_shape.hpp"
#include "key/row_shape.hpp"

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

// m of a row operator's call key.
inline constexpr std::int64_t kRowCallMark = -1;

inline bool is_row_call(const CallKey& key) noexcept { return key.m == kRowCallMark; }

// The call key of a row operator: m = mark, n = rows, k = cols, a = dtype, lda = op, ldb = weight,
// ldc = bias.
inline CallKey row_call_key(const RowShape& shape, std::uint64_t context) noexcept {
  CallKey key;
  key.m = kRowCallMark;
  key.n = shape.rows;
  key.k = shape.cols;
  key.a = shape.dtype;
  key.lda = static_cast<std::int64_t>(shape.op);
  key.ldb = shape.weight ? 1 : 0;
  key.ldc = shape.bias ? 1 : 0;
  key.context = context;
  return key;
}

// The row shape a row_call_key holds. Requires is_row_call(key).
inline RowShape row_shape_of(const CallKey& key) noexcept {
  RowShape shape;
  shape.rows = key.n;
  shape.cols = key.k;
  shape.dtype = key.a;
  shape.op = static_cast<RowOp>(key.lda);
  shape.weight = key.ldb != 0;
  shape.bias = key.ldc != 0;
  return shape;
}

}  // namespace kd
