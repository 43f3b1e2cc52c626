// Why a call did not run a tuned kernel: one table, numbered like the C API's kd_fallback_reason
// (capi.cpp static_asserts that the numbers agree). Numbers are never reused.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kd {

enum class FallbackReason : std::uint8_t {
  no_entry = 0,           // the cache has no record for this call
  not_loaded = 1,         // first seen or being loaded by the background thread
  capturing = 2,          // the stream is capturing a graph and the entry cannot launch now
  misaligned = 3,         // a, b, c or bias is not aligned as the record requires
  unsupported = 4,        // a call kdispatch does not key (types, options, arguments)
  cache_unavailable = 5,  // no cache directory, unreadable, or LMDB error
  launch_failed = 6,      // cuLaunchKernel returned an error
  corrupted = 7,          // the record failed its checksum or did not parse
  foreign_record = 8,     // record for another GPU, schema, driver or cuBLAS major
  load_failed = 9,        // module load, function lookup or workspace allocation failed
  foreign_context = 10,   // the stream's context is not its device's primary context
  workspace_busy = 11,    // the entry's workspace belongs to another stream
  no_gpu = 12,            // no CUDA driver or device
  too_many_threads = 13,  // more threads than the registry's reader slots
  not_initialized = 14,   // kd_init has not been called
  workspace_too_small = 15,  // capturing, and the caller's lent workspace cannot hold the record's
  vendor_chosen = 16,        // a vendor verdict record: searched, and the vendor call stayed fastest
};
inline constexpr std::size_t kFallbackReasonCount = 17;

struct FallbackReasonInfo {
  FallbackReason reason;
  std::string_view name;
  // Lookup-stage reasons are also counted as misses; launch-stage ones only as fallbacks.
  bool is_miss;
};

inline constexpr std::array<FallbackReasonInfo, kFallbackReasonCount> kFallbackReasons{{
    {FallbackReason::no_entry, "no_entry", true},
    {FallbackReason::not_loaded, "not_loaded", true},
    {FallbackReason::capturing, "capturing", true},
    {FallbackReason::misaligned, "misaligned", false},
    {FallbackReason::unsupported, "unsupported", true},
    {FallbackReason::cache_unavailable, "cache_unavailable", true},
    {FallbackReason::launch_failed, "launch_failed", false},
    {FallbackReason::corrupted, "corrupted", true},
    {FallbackReason::foreign_record, "foreign_record", true},
    {FallbackReason::load_failed, "load_failed", true},
    {FallbackReason::foreign_context, "foreign_context", true},
    {FallbackReason::workspace_busy, "workspace_busy", false},
    {FallbackReason::no_gpu, "no_gpu", true},
    {FallbackReason::too_many_threads, "too_many_threads", true},
    {FallbackReason::not_initialized, "not_initialized", true},
    {FallbackReason::workspace_too_small, "workspace_too_small", false},
    {FallbackReason::vendor_chosen, "vendor_chosen", false},
}};

constexpr std::string_view to_string(FallbackReason r) noexcept {
  return kFallbackReasons[static_cast<std::size_t>(r)].name;
}

}  // namespace kd

namespace kd::detail {
constexpr bool fallback_table_in_order() {
  for (std::size_t i = 0; i < kFallbackReasonCount; ++i)
    if (static_cast<std::size_t>(kFallbackReasons[i].reason) != i) return false;
  return true;
}
static_assert(fallback_table_in_order(), "kFallbackReasons must list reasons in enum order");
}  // namespace kd::detail
