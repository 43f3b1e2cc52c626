// The compile service: takes candidate sources, applies the kernel contract's static checks,
// compiles with NVRTC for the exact arch in child processes (in parallel, bounded in time, cached
// by content hash), then checks the PTX and cubin against the plan. Every rejection is a value
// with a reason; see contract/candidate_checks.hpp for the checks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compile/compile_cache.hpp"
#include "compile/compile_child.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "contract/candidate_checks.hpp"
#include "contract/candidate_status.hpp"
#include "plan/launch_plan.hpp"

namespace kd::search {

struct CompileServiceOptions {
  unsigned threads = 0;  // compiles at once in compile_all(); 0: std::thread::hardware_concurrency()
  std::chrono::milliseconds time_limit{60'000};  // per compile; the child is killed after it
  std::optional<std::filesystem::path> cache_dir;  // persistent cache; none: memory only
  std::size_t memory_cache_entries = 512;
  SourceLimits source_limits;
};

struct CandidateBuild {
  CandidateStatus status = CandidateStatus::compiler_crash;
  std::string message;               // why, when status != ok; empty when ok
  std::string cubin;                 // when ok
  std::string ptx;                   // when ok
  std::string log;                   // NVRTC's log whenever NVRTC ran (kept for ok too)
  std::optional<LaunchPlan> plan;    // when the static checks passed
  std::chrono::microseconds compile_time{0};  // NVRTC time of the compile that made the output
  std::string cache_key;             // compile_cache_key(); empty when rejected before compiling
  CacheSource cache = CacheSource::none;  // where the NVRTC output came from
  bool ok() const noexcept { return status == CandidateStatus::ok; }
};

class CompileService {
public:
  // Warms NVRTC up in this process (see compile_in_child) and opens the cache directory.
  // Throws kd::Error when NVRTC does not work or the directory cannot be created.
  explicit CompileService(CompileServiceOptions options = {});
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  // Checks and compiles one candidate on the calling thread (the compile runs in a child
  // process). Concurrent calls for the same cache key share one compile. Throws kd::Error only
  // when the system cannot fork or pipe.
  CandidateBuild compile(const CompileRequest& request);

  // compile() for every request, on up to options.threads threads; results in request order.
  // Rethrows the first kd::Error after all threads finish.
  std::vector<CandidateBuild> compile_all(std::span<const CompileRequest> requests);

  // NVRTC runs started so far (cache hits and static rejections start none).
  std::uint64_t compiles_started() const noexcept { return compiles_started_.load(); }

private:
  using SharedResult = std::shared_future<std::shared_ptr<const ChildCompileResult>>;

  std::shared_ptr<const ChildCompileResult> run_compile(const CompileRequest& request,
                                                        const std::string& key, CacheSource& source);

  CompileServiceOptions options_;
  CompileCache cache_;
  std::atomic<std::uint64_t> compiles_started_{0};
  std::mutex in_flight_mutex_;
  std::unordered_map<std::string, SharedResult> in_flight_;
};

}  // namespace kd::search
