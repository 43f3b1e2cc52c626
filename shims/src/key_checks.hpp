// The checks every translated call passes before it is looked up, shared by the cuBLAS and
// cuBLASLt translations.
#pragma once

#include <optional>

#include "gemm_call.hpp"

namespace kd::shim {

// nullopt when `key` (types, sizes, leading dimensions, strides; batch-1 strides already zeroed)
// is one kdispatch keys; otherwise why not. Mirrors what kd::parse_key accepts, so every key the
// shim looks up or records parses back (tested).
std::optional<Unsupported> check_key(const GemmKey& key) noexcept;

}  // namespace kd::shim
