// Row-operator keys (issue 33): the key line of a RowShape (key/row_shape.hpp), and the one parser
// of every op's line (OpKey: a GEMM or a row-operator key).
//
// The canonical text is one line of `key=value` tokens in a fixed order, one blank between them:
//
//   rmsnorm dtype=bf16 rows=16 cols=4096 weight=1
//   layernorm dtype=f32 rows=16 cols=4194304 weight=1 bias=1
//   softmax dtype=f32 rows=4096 cols=65536
//
// rmsnorm carries `weight=` only, layernorm both `weight=` and `bias=`, softmax neither; each token
// an op carries is always printed (0 or 1). A full key then adds the device part exactly as a GEMM
// key does (key/gemm_key.hpp): ` arch=sm_90 gpu="NVIDIA H100 80GB HBM3" sms=132`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "key/gemm_key.hpp"
#include "key/row_shape.hpp"

namespace kd {

std::string_view to_string(RowOp v);  // "rmsnorm", "layernorm", "softmax"

// Whether an op's line carries `weight=` (rmsnorm, layernorm) and `bias=` (layernorm). A shape
// keeps the flags an op does not carry false (as parse_op_key does): they are not printed, so a
// set one would not survive a print and parse, and == against the parsed key would fail.
bool takes_weight(RowOp op) noexcept;
bool takes_bias(RowOp op) noexcept;

// The largest tensor (rows * cols * dtype_bytes) a row-operator key may describe: 2^40 bytes
// (1 TiB), far beyond any GPU's memory, so that byte counts of a key's tensors never overflow.
inline constexpr std::int64_t kMaxRowTensorBytes = std::int64_t{1} << 40;

// A row shape with, in a full key, the GPU it is for. Same contracts as GemmKey's.
struct RowKey : RowShape {
  std::optional<DevicePart> device;  // absent in a shape-list line

  bool operator==(const RowKey&) const = default;

  // The shape-list line (no device part) and the full key line (with it). Printing does not
  // validate shapes: a key parse_op_key accepted prints to a line it parses back to the same key.
  // full_line() throws kd::Error (usage) without a device part, or when the part could not be
  // read back (arch not sm_<digits>[suffix], gpu name empty or holding '"' or a control char).
  std::string shape_line() const;
  std::string full_line() const;
  // 64-bit xxHash (XXH3_64bits, seed 0) of full_line(), or of shape_line() when there is no
  // device part. Stable across builds and hosts. Throws as full_line() does.
  std::uint64_t hash() const;
  RowKey with_device(const DevicePart& d) const;
  RowShape shape() const { return *this; }
};

// Bytes the operator must move at least: x read once and y written once (rows * cols elements
// each), weight and bias read once (cols elements each, where the line carries them as 1), all in
// dtype. Saturates at INT64_MAX instead of overflowing.
std::int64_t min_bytes(const RowShape& shape);
// A rough count of the arithmetic, for the roofline only: rows * cols * (rmsnorm 3: x*x, the sum,
// the scale; layernorm 5: the sum for the mean, x - mean, its square, the sum for the variance,
// the scale; softmax 4: the max, x - max, exp, the sum), an exp counting as one, per-row work
// (rsqrt, 1/sum) and the products by weight, bias or 1/sum not counted. Row operators are memory
// bound: min_bytes decides their roofline.
double flops(const RowShape& shape);

// Any operator's key.
using OpKey = std::variant<GemmKey, RowKey>;

// Parses any op's line: a GEMM line as parse_key (key/gemm_key.hpp) reads it (canonical gemm or
// the linear shorthand, to the same GemmKey), or a row-operator line in its canonical form above,
// with or without the device part. Same rules as parse_key: at most kMaxKeyLineBytes, integers
// plain decimal without leading zeros, tokens in order (a duplicate or a token out of order is
// named), blank runs between tokens accepted, a `#` comment line or an empty line an error, every
// error "column N: ..." (mostly "column N: token 'X': reason"). A row-operator line must also have
// rows >= 1, cols >= 1 and rows * cols * dtype_bytes(dtype) <= kMaxRowTensorBytes; a `weight=` or
// `bias=` its op does not carry is refused by name ("softmax takes no weight or bias"). An unknown
// op word: "unknown op (expected gemm, linear, rmsnorm, layernorm or softmax)".
// Never throws (beyond std::bad_alloc).
std::variant<OpKey, KeyError> parse_op_key(std::string_view line);

// shape_line(), full_line() and hash() of whichever key `key` holds; full_line and hash throw as
// the key's own do.
std::string op_shape_line(const OpKey& key);
std::string op_full_line(const OpKey& key);
std::uint64_t op_hash(const OpKey& key);

}  // namespace kd
