// The registry's key of a test call: m x 16 x 4096 in `context`, A and B with leading dimension
// 4096 and C with m (an nn.Linear with m outputs, 16 tokens); the types, transposes and epilogue
// are CallKey's defaults until a test sets them. m tells keys apart.
#pragma once

#include <cstdint>

#include "registry/call_key.hpp"

namespace kd::test {

inline CallKey linear_call_key(std::int64_t m, std::uint64_t context) {
  CallKey k;
  k.context = context;
  k.m = m;
  k.n = 16;
  k.k = 4096;
  k.lda = k.ldb = 4096;
  k.ldc = m;
  return k;
}

}  // namespace kd::test
