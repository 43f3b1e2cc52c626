// A row operator's call key (registry/call_key.hpp): its RowShape read back whole, distinct from
// every GEMM key and from other row shapes, equal bytes for equal shapes.
#include <gtest/gtest.h>

#include <vector>

#include "registry/call_key.hpp"

namespace kd {
namespace {

RowShape layernorm() {
  RowShape s;
  s.op = RowOp::layernorm;
  s.dtype = DType::bf16;
  s.rows = 4096;
  s.cols = 1024;
  s.weight = true;
  s.bias = true;
  return s;
}

TEST(RowCallKey, RoundTripsTheShapeAndKeepsTheContext) {
  const CallKey k = row_call_key(layernorm(), 0xC0);
  EXPECT_TRUE(is_row_call(k));
  EXPECT_EQ(row_shape_of(k), layernorm());
  EXPECT_EQ(k.context, 0xC0u);
  EXPECT_EQ(k, row_call_key(layernorm(), 0xC0));
  EXPECT_EQ(hash_call_key(k), hash_call_key(row_call_key(layernorm(), 0xC0)));
}

TEST(RowCallKey, DiffersFromGemmKeysAndOtherShapes) {
  const CallKey row = row_call_key(layernorm(), 0xC0);
  CallKey gemm;
  gemm.m = 1;
  gemm.n = row.n;
  gemm.k = row.k;
  gemm.context = 0xC0;
  EXPECT_FALSE(is_row_call(gemm));
  EXPECT_FALSE(row == gemm);
  std::vector<RowShape> others(5, layernorm());
  others[0].op = RowOp::rmsnorm;
  others[0].bias = false;
  others[1].dtype = DType::f16;
  others[2].bias = false;
  others[3].rows = 4095;
  others[4].cols = 1023;
  for (std::size_t i = 0; i < others.size(); ++i) EXPECT_FALSE(row == row_call_key(others[i], 0xC0)) << i;
  EXPECT_FALSE(row == row_call_key(layernorm(), 0xC1)) << "another context";
}

}  // namespace
}  // namespace kd
