// The builtin families' CUDA sources, embedded at build time from search/src/builtin/kernels/.
#pragma once

#include <string_view>

namespace kd::builtin {

// The text of kernels/<file>, or an empty view when there is no such file.
std::string_view embedded_kernel(std::string_view file);

}  // namespace kd::builtin
