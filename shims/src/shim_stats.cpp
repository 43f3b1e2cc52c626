#include "shim_stats.hpp"

#include <atomic>
#include <cstdio>
#include <string_view>
#include <utility>

#include "real_library.hpp"
#include "shim_config.hpp"

namespace kd::shim {
namespace {

using Counter = std::atomic<std::uint64_t>;

struct Counters {
  Counter hits, misses, fallbacks, nested, pass_through, real_missing;
  std::array<Counter, kEntryPointCount> calls;
  std::array<Counter, kEntryPointCount> nested_calls;
  std::array<Counter, KD_FALLBACK_REASON_COUNT> by_reason;
  std::array<Counter, kUnsupportedCount> by_unsupported;
};
// Zero-initialized static storage: usable before any constructor and after every destructor.
Counters g_counters;

void bump(Counter& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }

constexpr std::array<std::string_view, kEntryPointCount> kEntryPointNames{
    "cublasSgemm_v2",          "cublasSgemm_v2_64",
    "cublasGemmEx",            "cublasGemmEx_64",
    "cublasSgemmStridedBatched", "cublasSgemmStridedBatched_64",
    "cublasGemmStridedBatchedEx", "cublasGemmStridedBatchedEx_64",
    "cublasLtMatmul"};

template <std::size_t N>
std::array<std::uint64_t, N> load_all(const std::array<Counter, N>& in) noexcept {
  std::array<std::uint64_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = in[i].load(std::memory_order_relaxed);
  return out;
}

void append_u64(std::string& out, std::uint64_t v) { out += std::to_string(v); }

// " name=count" for each non-zero count; nothing when all are zero.
template <std::size_t N, class NameOf>
void append_nonzero(std::string& out, const std::array<std::uint64_t, N>& counts, NameOf name_of) {
  for (std::size_t i = 0; i < N; ++i) {
    if (counts[i] == 0) continue;
    out += ' ';
    out += name_of(i);
    out += '=';
    append_u64(out, counts[i]);
  }
}

__attribute__((destructor)) void print_stats_at_exit() noexcept {
  if (shim_config().stats != StatsReport::at_exit) return;
  try {
    const StatsSnapshot s = stats_snapshot();
    // KD_STATS=1 is often exported to a whole process tree (a shell, a launcher, the compilers it
    // runs): only the processes that used cuBLAS report.
    if (!intercepted_any(s)) return;
    const std::string text = format_stats(s);
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  } catch (...) {
    std::fputs("kdispatch_cublas: stats unavailable (out of memory)\n", stderr);
  }
}

}  // namespace

std::string_view to_string(EntryPoint e) noexcept {
  return kEntryPointNames[static_cast<std::size_t>(e)];
}

void count_call(EntryPoint e) noexcept { bump(g_counters.calls[static_cast<std::size_t>(e)]); }
void count_nested(EntryPoint e) noexcept {
  bump(g_counters.nested);
  bump(g_counters.nested_calls[static_cast<std::size_t>(e)]);
}
void count_pass_through() noexcept { bump(g_counters.pass_through); }
void count_real_missing() noexcept { bump(g_counters.real_missing); }
void count_hit() noexcept { bump(g_counters.hits); }

void count_fallback(kd_fallback_reason reason) noexcept {
  const auto i = static_cast<std::size_t>(reason);
  if (i >= KD_FALLBACK_REASON_COUNT) return;
  bump(kd_fallback_reason_is_miss(reason) != 0 ? g_counters.misses : g_counters.fallbacks);
  bump(g_counters.by_reason[i]);
}

void count_unsupported(Unsupported reason) noexcept {
  const auto i = static_cast<std::size_t>(reason);
  if (i >= kUnsupportedCount) return;
  bump(g_counters.fallbacks);
  bump(g_counters.by_unsupported[i]);
}

StatsSnapshot stats_snapshot() noexcept {
  StatsSnapshot s;
  s.hits = g_counters.hits.load(std::memory_order_relaxed);
  s.misses = g_counters.misses.load(std::memory_order_relaxed);
  s.fallbacks = g_counters.fallbacks.load(std::memory_order_relaxed);
  s.nested = g_counters.nested.load(std::memory_order_relaxed);
  s.pass_through = g_counters.pass_through.load(std::memory_order_relaxed);
  s.real_missing = g_counters.real_missing.load(std::memory_order_relaxed);
  s.calls = load_all(g_counters.calls);
  s.nested_calls = load_all(g_counters.nested_calls);
  s.by_reason = load_all(g_counters.by_reason);
  s.by_unsupported = load_all(g_counters.by_unsupported);
  return s;
}

bool intercepted_any(const StatsSnapshot& s) noexcept {
  std::uint64_t n = s.nested + s.pass_through + s.real_missing;
  for (const std::uint64_t c : s.calls) n += c;
  return n > 0;
}

std::string format_stats(const StatsSnapshot& s) {
  const std::string prefix = "kdispatch_cublas:";
  std::string out = prefix;
  const std::pair<std::string_view, std::uint64_t> totals[] = {
      {"hits", s.hits},     {"misses", s.misses},             {"fallbacks", s.fallbacks},
      {"nested", s.nested}, {"pass_through", s.pass_through}, {"real_missing", s.real_missing}};
  for (const auto& [name, value] : totals) {
    out += ' ';
    out += name;
    out += '=';
    append_u64(out, value);
  }
  out += '\n';

  out += prefix;
  for (const RealLibraryInfo& lib : kRealLibraries) {
    out += ' ';
    out += lib.soname;
    out += '=';
    out += to_string(resolved_by(lib.library));
  }
  out += '\n';

  const auto entry_name = [](std::size_t i) { return kEntryPointNames[i]; };
  out += prefix + " calls";
  append_nonzero(out, s.calls, entry_name);
  out += '\n';
  out += prefix + " nested";
  append_nonzero(out, s.nested_calls, entry_name);
  out += '\n';
  out += prefix + " reasons";
  append_nonzero(out, s.by_reason,
                 [](std::size_t i) { return kd_fallback_reason_name(static_cast<int>(i)); });
  append_nonzero(out, s.by_unsupported, [](std::size_t i) {
    return std::string("unsupported.") + std::string(to_string(static_cast<Unsupported>(i)));
  });
  out += '\n';
  return out;
}

}  // namespace kd::shim
