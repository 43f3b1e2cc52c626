// The builtin families' CUDA sources, embedded at build time from search/src/builtin/kernels/.
#pragma once

#include <string_view>

namespace kd::builtin {

// The text of kernels/<file> (a .cu or .cuh) as written, or an empty view when there is no such file.
std::string_view embedded_kernel_file(std::string_view file);

// The text of kernels/<file> with every line `#include "NAME"` whose NAME is another embedded file
// replaced by that file's own (expanded) text: what NVRTC compiles and the cache stores, one
// self-contained translation unit. nvcc (the kernel lab) resolves the same lines from the folder.
// Empty when there is no such file; the view lives as long as the program.
std::string_view embedded_kernel(std::string_view file);

}  // namespace kd::builtin
