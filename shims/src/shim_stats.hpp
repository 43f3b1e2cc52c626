// The shim's counters (KD_STATS=1 prints them to stderr at exit, in a process that called an
// interposed GEMM entry point). Lock-free; never throw.
//
// Every top-level intercepted call ends as exactly one of: a hit, a miss (keyable, the lookup
// found nothing usable: a kd_fallback_reason that kd_fallback_reason_is_miss calls a miss) or a
// fallback (a launch-stage reason, or an Unsupported call that was not looked up). Nested calls (the reentrancy guard), KD_DISABLE
// pass-throughs and calls whose real function could not be found are counted apart.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "kdispatch/kdispatch.h"
#include "translation.hpp"

namespace kd::shim {

enum class EntryPoint : std::uint8_t {
  sgemm = 0,
  sgemm_64 = 1,
  gemm_ex = 2,
  gemm_ex_64 = 3,
  sgemm_strided = 4,
  sgemm_strided_64 = 5,
  gemm_strided_ex = 6,
  gemm_strided_ex_64 = 7,
  lt_matmul = 8,
};
inline constexpr std::size_t kEntryPointCount = 9;
// The exported symbol's name.
std::string_view to_string(EntryPoint e) noexcept;

struct StatsSnapshot {
  std::uint64_t hits = 0, misses = 0, fallbacks = 0;
  std::uint64_t nested = 0, pass_through = 0, real_missing = 0;
  std::array<std::uint64_t, kEntryPointCount> calls{};         // top-level, per entry point
  std::array<std::uint64_t, kEntryPointCount> nested_calls{};  // forwarded by the guard
  std::array<std::uint64_t, KD_FALLBACK_REASON_COUNT> by_reason{};
  std::array<std::uint64_t, kUnsupportedCount> by_unsupported{};
};

void count_call(EntryPoint e) noexcept;
void count_nested(EntryPoint e) noexcept;
void count_pass_through() noexcept;
void count_real_missing() noexcept;
void count_hit() noexcept;
void count_fallback(kd_fallback_reason reason) noexcept;  // a miss when kd_fallback_reason_is_miss
void count_unsupported(Unsupported reason) noexcept;

StatsSnapshot stats_snapshot() noexcept;
// Whether any interposed GEMM entry point was called (dispatched, nested, passed through or without
// its real function). KD_STATS=1 prints nothing at exit when none was.
bool intercepted_any(const StatsSnapshot& s) noexcept;
// The KD_STATS report: lines starting "kdispatch_cublas: ". Throws only std::bad_alloc.
std::string format_stats(const StatsSnapshot& s);

}  // namespace kd::shim
