// Printing, hashing and the roofline numbers of a RowKey, and the OpKey helpers. Parsing is in
// key_parser.cpp.
#include "key/row_key.hpp"

#include <xxhash.h>

#include <array>
#include <cstddef>
#include <string>

#include "key/key_names.hpp"
#include "key/key_print.hpp"
#include "key/saturating.hpp"

namespace kd {
namespace {

using key_print::kLineReserve;
using key_print::LineWriter;

// What each op's line carries and its rough flops per element (row_key.hpp, flops). One row per
// RowOp, in declaration order.
struct RowOpTraits {
  RowOp op;
  bool weight;
  bool bias;
  int flops_per_element;
};
constexpr std::array<RowOpTraits, 3> kRowOpTraits{{
    {RowOp::rmsnorm, true, false, 3},
    {RowOp::layernorm, true, true, 5},
    {RowOp::softmax, false, false, 4},
}};
constexpr bool traits_in_declaration_order() {
  for (std::size_t i = 0; i < kRowOpTraits.size(); ++i) {
    if (static_cast<std::size_t>(kRowOpTraits[i].op) != i) return false;
  }
  return kRowOpTraits.size() == key_names::kRowOp.size();
}
static_assert(traits_in_declaration_order());

// An op outside the enum (a corrupt shape) carries nothing and counts no flops.
constexpr RowOpTraits kUnknownOp{RowOp::rmsnorm, false, false, 0};
const RowOpTraits& traits_of(RowOp op) noexcept {
  const auto i = static_cast<std::size_t>(op);
  return i < kRowOpTraits.size() ? kRowOpTraits[i] : kUnknownOp;
}

void write_shape(const RowShape& s, std::string& out) {
  LineWriter w(out);
  w.word(to_string(s.op));
  w.token("dtype", to_string(s.dtype));
  w.token("rows", s.rows);
  w.token("cols", s.cols);
  const RowOpTraits& t = traits_of(s.op);
  if (t.weight) w.flag("weight", s.weight);
  if (t.bias) w.flag("bias", s.bias);
}

}  // namespace

std::string_view to_string(RowOp v) { return key_names::name_of(key_names::kRowOp, v); }

bool takes_weight(RowOp op) noexcept { return traits_of(op).weight; }
bool takes_bias(RowOp op) noexcept { return traits_of(op).bias; }

std::string RowKey::shape_line() const {
  std::string out;
  out.reserve(kLineReserve);
  write_shape(*this, out);
  return out;
}

std::string RowKey::full_line() const {
  const DevicePart& d = key_print::printable_device(device);
  std::string out;
  out.reserve(kLineReserve);
  write_shape(*this, out);
  LineWriter(out).device_part(d);
  return out;
}

std::uint64_t RowKey::hash() const {
  const std::string line = device ? full_line() : shape_line();
  return XXH3_64bits(line.data(), line.size());
}

RowKey RowKey::with_device(const DevicePart& d) const {
  RowKey out = *this;
  out.device = d;
  return out;
}

std::int64_t min_bytes(const RowShape& shape) {
  using saturating::add;
  using saturating::mul;
  const RowOpTraits& t = traits_of(shape.op);
  const std::int64_t vectors = (t.weight && shape.weight ? 1 : 0) + (t.bias && shape.bias ? 1 : 0);
  // x read and y written: two rows * cols tensors; weight and bias: cols elements each.
  const std::int64_t elements = mul(add(mul(shape.rows, 2), vectors), shape.cols);
  return mul(elements, static_cast<std::int64_t>(dtype_bytes(shape.dtype)));
}

double flops(const RowShape& shape) {
  return static_cast<double>(shape.rows) * static_cast<double>(shape.cols) *
         traits_of(shape.op).flops_per_element;
}

std::string op_shape_line(const OpKey& key) {
  return std::visit([](const auto& k) { return k.shape_line(); }, key);
}

std::string op_full_line(const OpKey& key) {
  return std::visit([](const auto& k) { return k.full_line(); }, key);
}

std::uint64_t op_hash(const OpKey& key) {
  return std::visit([](const auto& k) { return k.hash(); }, key);
}

}  // namespace kd
