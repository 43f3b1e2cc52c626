// The spelling of every enum value in a key line: one table per enum, shared by the printer
// (to_string) and the parser, so the two cannot disagree. Internal to key/.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_names.hpp"
#include "key/gemm_key.hpp"
#include "key/row_shape.hpp"

namespace kd::key_names {

using kd::Named;
using kd::value_of;

// Each table lists the enum's values in declaration order, so a value's underlying integer indexes
// its row (checked at compile time below).
inline constexpr std::array<Named<DType>, 3> kDType{{
    {DType::f16, "f16"}, {DType::bf16, "bf16"}, {DType::f32, "f32"}}};
inline constexpr std::array<Named<ComputeType>, 2> kComputeType{{
    {ComputeType::f16, "f16"}, {ComputeType::f32, "f32"}}};
inline constexpr std::array<Named<Transpose>, 2> kTranspose{{
    {Transpose::N, "N"}, {Transpose::T, "T"}}};
inline constexpr std::array<Named<Epilogue>, 2> kEpilogue{{
    {Epilogue::none, "none"}, {Epilogue::bias, "bias"}}};
inline constexpr std::array<Named<PrecisionClass>, 3> kPrecision{{
    {PrecisionClass::f32, "f32"}, {PrecisionClass::tf32, "tf32"}, {PrecisionClass::f16, "f16"}}};
// A row operator's name is its line's op word.
inline constexpr std::array<Named<RowOp>, 3> kRowOp{{
    {RowOp::rmsnorm, "rmsnorm"}, {RowOp::layernorm, "layernorm"}, {RowOp::softmax, "softmax"}}};

template <class E, std::size_t N>
constexpr bool rows_in_declaration_order(const std::array<Named<E>, N>& table) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  }
  return true;
}
static_assert(rows_in_declaration_order(kDType));
static_assert(rows_in_declaration_order(kComputeType));
static_assert(rows_in_declaration_order(kTranspose));
static_assert(rows_in_declaration_order(kEpilogue));
static_assert(rows_in_declaration_order(kPrecision));
static_assert(rows_in_declaration_order(kRowOp));

template <class E, std::size_t N>
constexpr std::string_view name_of(const std::array<Named<E>, N>& table, E value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? table[i].name : std::string_view("?");
}

// "N or T", "f16, bf16 or f32": the accepted spellings, for error messages.
template <class E, std::size_t N>
std::string alternatives(const std::array<Named<E>, N>& table) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += (i + 1 == N) ? " or " : ", ";
    out += table[i].name;
  }
  return out;
}

}  // namespace kd::key_names
