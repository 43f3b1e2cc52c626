// Headers the project hands to NVRTC by name (generated from libdispatch/include at build time).
#pragma once

#include <span>
#include <string_view>

namespace kd::search {

struct EmbeddedHeader {
  std::string_view include_name;  // as written in #include <...>, e.g. "kdispatch/gemm.cuh"
  std::string_view contents;
};

std::span<const EmbeddedHeader> embedded_headers();

}  // namespace kd::search
