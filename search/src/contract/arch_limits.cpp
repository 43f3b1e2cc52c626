#include "contract/arch_limits.hpp"

#include <array>

namespace kd::search {
namespace {

// cudaDevAttrMaxSharedMemoryPerBlockOptin per compute capability (CUDA C Programming Guide,
// "Technical Specifications per Compute Capability").
constexpr std::uint32_t KiB = 1024;
constexpr std::array<ArchLimits, 12> kLimits = {{
    {"sm_70", 96 * KiB, 0},
    {"sm_72", 96 * KiB, 0},
    {"sm_75", 64 * KiB, 0},
    {"sm_80", 163 * KiB, 1 * KiB},
    {"sm_86", 99 * KiB, 1 * KiB},
    {"sm_87", 163 * KiB, 1 * KiB},
    {"sm_89", 99 * KiB, 1 * KiB},
    {"sm_90", 227 * KiB, 1 * KiB},
    {"sm_100", 227 * KiB, 1 * KiB},
    {"sm_103", 227 * KiB, 1 * KiB},
    {"sm_120", 99 * KiB, 1 * KiB},
    {"sm_121", 99 * KiB, 1 * KiB},
}};

}  // namespace

std::optional<ArchLimits> arch_limits(std::string_view arch) {
  // "sm_90a" has sm_90's limits.
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) arch.remove_suffix(1);
  for (const ArchLimits& limits : kLimits) {
    if (limits.arch == arch) return limits;
  }
  return std::nullopt;
}

}  // namespace kd::search
