// The kernels under tests/gpu/eval/kernels/, embedded at build time: name (file stem) -> source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kd::test {

struct TestKernel {
  std::string_view name;
  std::string_view source;
};

const std::vector<TestKernel>& test_kernels();
std::string_view test_kernel(std::string_view name);  // throws std::runtime_error when unknown

}  // namespace kd::test
