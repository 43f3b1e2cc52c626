// Printing, hashing and the roofline numbers of a GemmKey. Parsing is in key_parser.cpp.
#include "key/gemm_key.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <string>

#include "common/error.hpp"
#include "key/key_names.hpp"
#include "key/key_print.hpp"
#include "key/line_rules.hpp"
#include "key/saturating.hpp"

namespace kd {

std::string_view to_string(DType v) { return key_names::name_of(key_names::kDType, v); }
std::string_view to_string(ComputeType v) { return key_names::name_of(key_names::kComputeType, v); }
std::string_view to_string(Transpose v) { return key_names::name_of(key_names::kTranspose, v); }
std::string_view to_string(Epilogue v) { return key_names::name_of(key_names::kEpilogue, v); }
std::string_view to_string(PrecisionClass v) {
  return key_names::name_of(key_names::kPrecision, v);
}

std::size_t dtype_bytes(DType v) {
  static constexpr std::array<std::size_t, 3> kBytes{2, 2, 4};  // f16, bf16, f32
  return kBytes.at(static_cast<std::size_t>(v));
}

// Every op's full line ends with the device part: its printing rules stay here, beside DevicePart.
namespace key_print {

void check_printable(const DevicePart& d) {
  if (const auto why = line_rules::arch_problem(d.arch)) {
    throw Error(ErrorDomain::usage, 0,
                "key device part: arch '" + d.arch + "': " + std::string(*why));
  }
  if (const auto why = line_rules::gpu_name_problem(d.gpu)) {
    throw Error(ErrorDomain::usage, 0,
                "key device part: gpu '" + d.gpu + "': " + std::string(*why));
  }
}

const DevicePart& printable_device(const std::optional<DevicePart>& device) {
  if (!device) throw Error(ErrorDomain::usage, 0, "full_line() of a key without a device part");
  check_printable(*device);
  return *device;
}

}  // namespace key_print

namespace {

using key_print::LineWriter;
using key_print::kLineReserve;

// `n_hi` != 0 prints n as the range `n=LO..HI` (GemmKey::n_hi).
void write_shape(const GemmShape& k, std::int64_t n_hi, std::string& out) {
  LineWriter w(out);
  w.word("gemm");
  w.token("a", to_string(k.a));
  w.token("b", to_string(k.b));
  w.token("c", to_string(k.c));
  w.token("compute", to_string(k.compute));
  w.token("ta", to_string(k.ta));
  w.token("tb", to_string(k.tb));
  w.token("m", k.m);
  if (n_hi != 0) {
    w.token("n", fmt::format("{}..{}", k.n, n_hi));
  } else {
    w.token("n", k.n);
  }
  w.token("k", k.k);
  w.token("lda", k.lda);
  w.token("ldb", k.ldb);
  w.token("ldc", k.ldc);
  w.token("batch", k.batch);
  if (k.batch > 1) {
    w.token("stride_a", k.stride_a);
    w.token("stride_b", k.stride_b);
    w.token("stride_c", k.stride_c);
  }
  w.token("epilogue", to_string(k.epilogue));
  w.flag("beta0", k.beta_zero);
  if (k.precision != default_precision(k.compute)) w.token("precision", to_string(k.precision));
}

std::int64_t bytes_of(DType t) { return static_cast<std::int64_t>(dtype_bytes(t)); }

}  // namespace

std::string shape_line(const GemmShape& shape) {
  std::string out;
  out.reserve(kLineReserve);
  write_shape(shape, 0, out);
  return out;
}

std::string full_line(const GemmShape& shape, const DevicePart& device) {
  key_print::check_printable(device);
  std::string out;
  out.reserve(kLineReserve);
  write_shape(shape, 0, out);
  LineWriter(out).device_part(device);
  return out;
}

std::string GemmKey::shape_line() const {
  std::string out;
  out.reserve(kLineReserve);
  write_shape(*this, n_hi, out);
  return out;
}

std::string GemmKey::full_line() const {
  const DevicePart& d = key_print::printable_device(device);
  std::string out;
  out.reserve(kLineReserve);
  write_shape(*this, n_hi, out);
  LineWriter(out).device_part(d);
  return out;
}

GemmKey GemmKey::at_n(std::int64_t count) const {
  GemmKey out = *this;
  out.n = count;
  out.n_hi = 0;
  return out;
}

GemmKey GemmKey::with_n_range(std::int64_t lo, std::int64_t hi) const {
  GemmKey out = *this;
  out.n = lo;
  out.n_hi = hi > lo ? hi : 0;
  return out;
}

std::optional<NTokenSpan> n_token_span(std::string_view line) {
  constexpr std::string_view kToken = " n=";
  const std::size_t at = line.find(kToken);
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t begin = at + kToken.size();
  std::size_t end = line.find(' ', begin);
  if (end == std::string_view::npos) end = line.size();
  return NTokenSpan{begin, end};
}

std::uint64_t GemmKey::hash() const {
  const std::string line = device ? full_line() : shape_line();
  return XXH3_64bits(line.data(), line.size());
}

GemmKey GemmKey::with_device(const DevicePart& d) const {
  GemmKey out = *this;
  out.device = d;
  return out;
}

std::int64_t min_bytes(const GemmShape& key) {
  using saturating::add;
  using saturating::mul;
  const std::int64_t a = mul(mul(key.m, key.k), bytes_of(key.a));
  const std::int64_t b = mul(mul(key.k, key.n), bytes_of(key.b));
  const std::int64_t c_passes = key.beta_zero ? 1 : 2;  // written; also read when beta != 0
  const std::int64_t c = mul(mul(mul(key.m, key.n), bytes_of(key.c)), c_passes);
  // The bias vector has one element per row of C, in C's type (cuBLASLt's default bias type).
  const std::int64_t bias = key.epilogue == Epilogue::bias ? mul(key.m, bytes_of(key.c)) : 0;
  return mul(add(add(a, b), add(c, bias)), key.batch);
}

double flops(const GemmShape& key) {
  return 2.0 * static_cast<double>(key.m) * static_cast<double>(key.n) *
         static_cast<double>(key.k) * static_cast<double>(key.batch);
}

}  // namespace kd
