// Per-architecture limits that a launch plan and a cubin are checked against before any GPU sees them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kd::search {

struct ArchLimits {
  std::string_view arch;                   // "sm_90"
  std::uint32_t max_shared_per_block_bytes; // static + dynamic, with the opt-in attribute
  // Shared memory the cubin's `.nv.shared.<kernel>` section counts on top of the kernel's own
  // (the system-reserved 1 KiB per block on sm_80 and later), subtracted before checking.
  std::uint32_t cubin_reserved_shared_bytes;
};

// The limits for an exact arch ("sm_90"), or nullopt for an arch this table does not know (the
// shared-memory check is then skipped; the GPU rejects the launch instead).
std::optional<ArchLimits> arch_limits(std::string_view arch);

}  // namespace kd::search
