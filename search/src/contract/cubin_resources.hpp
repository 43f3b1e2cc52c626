// What a cubin (an ELF image from NVRTC) says about its kernels without loading it on a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kd::search {

// Static shared memory per kernel, from the sizes of the cubin's `.nv.shared.<kernel>` sections
// (as the cubin counts it: on sm_80 and later this includes the 1 KiB the system reserves per
// block). A kernel without static shared memory has no entry. Returns nullopt when `cubin` is not
// a well-formed 64-bit ELF image.
std::optional<std::map<std::string, std::uint64_t>> cubin_static_shared_bytes(std::string_view cubin);

}  // namespace kd::search
