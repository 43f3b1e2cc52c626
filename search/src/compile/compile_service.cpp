#include "compile/compile_service.hpp"

#include <algorithm>
#include <exception>
#include <thread>

namespace kd::search {
namespace {

// The first line of an NVRTC log that names an error, for the one-line rejection message.
std::string first_error_line(const std::string& log) {
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t end = std::min(log.find('\n', start), log.size());
    const std::string_view line(log.data() + start, end - start);
    if (line.find("error") != std::string_view::npos) return std::string(line);
    start = end + 1;
  }
  return log.substr(0, log.find('\n'));
}

CandidateBuild rejected(Rejection rejection) {
  CandidateBuild build;
  build.status = rejection.status;
  build.message = std::move(rejection.message);
  return build;
}

}  // namespace

CompileService::CompileService(CompileServiceOptions options)
    : options_(std::move(options)), cache_(options_.cache_dir, options_.memory_cache_entries) {
  if (options_.threads == 0) options_.threads = std::max(1u, std::thread::hardware_concurrency());
  warm_up_nvrtc();
}

std::shared_ptr<const ChildCompileResult> CompileService::run_compile(const CompileRequest& request,
                                                                      const std::string& key,
                                                                      CacheSource& source) {
  if (std::optional<CachedOutput> cached = cache_.find(key)) {
    source = cached->source;
    auto result = std::make_shared<ChildCompileResult>();
    result->outcome = ChildOutcome::finished;
    result->output = *cached->output;
    return result;
  }
  std::promise<std::shared_ptr<const ChildCompileResult>> promise;
  {
    std::unique_lock lock(in_flight_mutex_);
    if (const auto it = in_flight_.find(key); it != in_flight_.end()) {
      SharedResult shared = it->second;
      lock.unlock();
      source = CacheSource::memory;
      return shared.get();
    }
    in_flight_.emplace(key, promise.get_future().share());
  }
  // Whatever happens, the waiters get an answer and the key leaves the in-flight table.
  std::shared_ptr<const ChildCompileResult> result;
  try {
    compiles_started_.fetch_add(1);
    result = std::make_shared<const ChildCompileResult>(compile_in_child(request, options_.time_limit));
    if (result->outcome == ChildOutcome::finished) {
      cache_.store(key, std::make_shared<const CompileOutput>(result->output));
    }
    promise.set_value(result);
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(in_flight_mutex_);
    in_flight_.erase(key);
    throw;
  }
  std::lock_guard lock(in_flight_mutex_);
  in_flight_.erase(key);
  source = CacheSource::none;
  return result;
}

CandidateBuild CompileService::compile(const CompileRequest& request) {
  std::variant<LaunchPlan, Rejection> checked = check_source(request.source, options_.source_limits);
  if (auto* rejection = std::get_if<Rejection>(&checked)) return rejected(std::move(*rejection));

  CandidateBuild build;
  build.plan = std::get<LaunchPlan>(std::move(checked));
  build.cache_key = compile_cache_key(request);
  const std::shared_ptr<const ChildCompileResult> result = run_compile(request, build.cache_key, build.cache);

  switch (result->outcome) {
    case ChildOutcome::timed_out:
      build.status = CandidateStatus::compile_timeout;
      build.message = result->failure;
      return build;
    case ChildOutcome::crashed:
      build.status = CandidateStatus::compiler_crash;
      build.message = result->failure;
      return build;
    case ChildOutcome::finished:
      break;
  }
  const CompileOutput& out = result->output;
  build.log = out.log;
  build.compile_time = out.compile_time;
  if (out.status == CompileStatus::compile_error) {
    build.status = CandidateStatus::compile_error;
    build.message = first_error_line(out.log);
    return build;
  }
  if (std::optional<Rejection> rejection = check_compiled(*build.plan, out.ptx, out.cubin, request.arch, request.args_bytes)) {
    build.status = rejection->status;
    build.message = std::move(rejection->message);
    return build;
  }
  build.status = CandidateStatus::ok;
  build.cubin = out.cubin;
  build.ptx = out.ptx;
  return build;
}

std::vector<CandidateBuild> CompileService::compile_all(std::span<const CompileRequest> requests) {
  std::vector<CandidateBuild> builds(requests.size());
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  const auto work = [&] {
    for (std::size_t i = next.fetch_add(1); i < requests.size(); i = next.fetch_add(1)) {
      try {
        builds[i] = compile(requests[i]);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };
  const std::size_t thread_count = std::min<std::size_t>(options_.threads, requests.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t t = 1; t < thread_count; ++t) threads.emplace_back(work);
    work();
  }
  if (first_error) std::rethrow_exception(first_error);
  return builds;
}

}  // namespace kd::search
