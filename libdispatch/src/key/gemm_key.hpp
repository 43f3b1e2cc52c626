// Keys: what identifies a tuned kernel. See ../shared/design.md, "The key".
//
// The canonical text is one line of `key=value` tokens in a fixed order:
//
//   gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096
//        batch=1 epilogue=none beta0=1
//
// followed, for strided batches (batch > 1), by `stride_a= stride_b= stride_c=` directly after
// `batch=`; then `precision=` only when it differs from the compute type's default (a TF32 math
// mode on an f32 call: `precision=tf32`); then, in a full key, the device part
// `arch=sm_90 gpu="NVIDIA H100 80GB HBM3" sms=132`. The line without the device part is the
// shape-list format (kdctl prewarm reads it, the shim records it, kdctl ls prints it).
// `beta0=1` means the call's beta is zero, so C is not read.
//
// GEMMs use the cuBLAS column-major convention exactly as the call was intercepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "key/gemm_rules.hpp"
#include "key/gemm_shape.hpp"

namespace kd {

std::string_view to_string(DType v);
std::string_view to_string(ComputeType v);
std::string_view to_string(Transpose v);
std::string_view to_string(Epilogue v);
std::string_view to_string(PrecisionClass v);
std::size_t dtype_bytes(DType v);

// The GPU a record is for. Equal device parts mean the same GPU model.
struct DevicePart {
  std::string arch;  // "sm_90"
  std::string gpu;   // "NVIDIA H100 80GB HBM3"
  int sms = 0;
  bool operator==(const DevicePart&) const = default;
};

// A shape (key/gemm_shape.hpp) with, in a full key, the GPU it is for. A key may stand for a range
// of token counts (`n=LO..HI`, issue 29): then `n` is LO and `n_hi` is HI (> LO); for an exact key
// n_hi is 0. A call is always exact (GemmShape, CallKey); ranges live in shape lists, jobs and
// records (ARCHITECTURE.md, "A record may serve a range of n"). Code that needs one shape (the
// evaluator, kdctl validate) refuses a range key: slicing it to its GemmShape would keep n = LO.
struct GemmKey : GemmShape {
  std::int64_t n_hi = 0;             // 0: exact; else the range's last n (> n)
  std::optional<DevicePart> device;  // absent in a shape-list line

  bool operator==(const GemmKey&) const = default;

  bool is_range() const noexcept { return n_hi != 0; }
  // The last n the key stands for: n_hi for a range, n for an exact key.
  std::int64_t n_last() const noexcept { return n_hi != 0 ? n_hi : n; }
  // Whether the key stands for token count `count` (its n, or a value of its range).
  bool covers(std::int64_t count) const noexcept { return count >= n && count <= n_last(); }
  // This key with exact n = `count` (the range dropped); the caller keeps count within covers().
  GemmKey at_n(std::int64_t count) const;
  // This key standing for [lo, hi] (exact when lo == hi).
  GemmKey with_n_range(std::int64_t lo, std::int64_t hi) const;

  // The shape-list line (no device part) and the full key line (with it). Printing does not
  // validate shapes: a key parse_key accepted prints to a line it parses back to the same key.
  // full_line() throws kd::Error (usage) without a device part, or when the part could not be
  // read back (arch not sm_<digits>[suffix], gpu name empty or holding '"' or a control char).
  std::string shape_line() const;
  std::string full_line() const;
  // 64-bit xxHash (XXH3_64bits, seed 0) of full_line(), or of shape_line() when there is no
  // device part. Stable across builds and hosts. Throws as full_line() does.
  std::uint64_t hash() const;
  GemmKey with_device(const DevicePart& d) const;
};

// The shape-list line of a shape, and the full key line of a shape on a device: what
// GemmKey::shape_line() and full_line() print (exact n). full_line throws as GemmKey::full_line()
// does.
std::string shape_line(const GemmShape& shape);
std::string full_line(const GemmShape& shape, const DevicePart& device);

// Where the `n=` token's value starts and ends in a canonical key line (as printed: `... m=M n=N
// k=...`), or nullopt when the line has no ` n=` token. Lines that share everything but n agree
// outside [begin, end), which is how the cache finds the range records covering a call
// (store/cache_store.hpp, lookup_covering).
struct NTokenSpan {
  std::size_t begin = 0;  // first character of the value
  std::size_t end = 0;    // one past its last
};
std::optional<NTokenSpan> n_token_span(std::string_view canonical_line);

// A parse error names the bad token and its 1-based column in the line (bytes from the start of
// the line as given, leading blanks included). A token missing at the end is reported at the
// column just after the last non-blank character.
struct KeyError {
  std::string message;  // "column N: ...", e.g. "column 36: token 'ta=X': expected N or T"
  std::size_t column = 0;
};

// The longest key line parse_key accepts, in bytes. Records and jobs are stored in LMDB under
// their canonical line, and LMDB's largest key is 511 bytes; the daemon's job index stores a job
// under its line behind a state byte and an 8-byte order (daemon/src/queue/job_store.hpp), so a
// line of more than 511 - 9 = 502 bytes could not be queued, and a job that cannot be committed
// would fail the group commit it shares with other clients' changes. A canonical line is never
// longer than the line it was parsed from (the shorthand expands to at most ~220 bytes), so every
// accepted line can be stored. Real keys are ~200 bytes.
inline constexpr std::size_t kMaxKeyLineBytes = 502;

// Parses a canonical line, with or without the device part, or the shorthand
//   linear dtype=bf16 tokens=16 in=4096 out=4096 [bias=0|1] [batch=1]
// `n=` (and the shorthand's `tokens=`) may be a range `LO..HI` with 1 <= LO < HI: the key stands
// for every n in it (GemmKey::n_hi). A range with an end missing (`n=..64`, `n=33..`), an inverted
// one (`n=64..33`) and one of a single value (`n=8..8`: write `n=8`) are errors, and the leading
// dimensions must hold for every n of it (ldb >= HI when tb=T).
// which expands to the gemm nn.Linear issues through cuBLAS (ta=T tb=N m=out n=tokens k=in,
// lda=ldb=in, ldc=out, compute f32, epilogue bias when bias=1, beta0=1).
// Leading/trailing blanks are ignored; a `#` comment line or a blank line is an error here (shape
// list readers skip them before calling). Checks values: dims > 0, ld >= the minimum the
// transposes need, batch >= 1, strides (>= 0) present iff batch > 1, known dtypes and combinations
// (a == b; c == a, or c = f32 with f16/bf16 inputs; compute f16 only with a = b = c = f16),
// precision= only f32|tf32 with compute f32 and f16 with compute f16, a device part as a whole.
// Integers are plain decimal (no sign, no leading zero), at most INT64_MAX (sms: INT_MAX).
// A line longer than kMaxKeyLineBytes is rejected before it is read, at column
// kMaxKeyLineBytes + 1 ("the line is N bytes, longer than the 502-byte limit of a key line").
// Tokens may be separated by any run of blanks. Accepted but not canonical, so printed differently:
// extra blanks, and a precision= equal to the compute type's default. The shorthand takes only
// batch=1 (nn.Linear folds leading dims into tokens) and no precision or device part.
// Never throws (beyond std::bad_alloc).
std::variant<GemmKey, KeyError> parse_key(std::string_view line);

// Bytes the GEMM must move at least (A, B read once; C written once, read too when !beta_zero;
// bias of m elements of C's type read; all per batch entry) and the flops (2*m*n*k*batch): the
// two numbers of the roofline. min_bytes saturates at INT64_MAX instead of overflowing.
std::int64_t min_bytes(const GemmShape& key);
double flops(const GemmShape& key);

}  // namespace kd
