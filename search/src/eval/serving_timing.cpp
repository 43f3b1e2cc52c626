#include "eval/serving_timing.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "eval/device_memory.hpp"
#include "eval/timing_stats.hpp"

namespace kd::eval {

ServingTimer::ServingTimer(GateProblem& problem, CUstream stream, int s, const ServingShape& shape)
    : problem_(problem), stream_(stream), set_(s), shape_(shape) {
  problem_.make_serving_copies(s, shape);
  for (Event& e : ev_) e = make_event();
}

std::optional<std::string> ServingTimer::capture(const GateCandidate& candidate) {
  auto cand = capture_graph(stream_, [&]() -> std::optional<std::string> {
    for (int i = 0; i < shape_.calls; ++i)
      if (auto refused = candidate.launch(problem_.serving_args(set_, i), stream_)) return refused;
    return std::nullopt;
  });
  if (auto* why = std::get_if<std::string>(&cand)) return "in a CUDA graph: " + *why;
  candidate_graph_ = std::move(std::get<GraphExec>(cand));

  auto base = capture_graph(stream_, [&]() -> std::optional<std::string> {
    for (int i = 0; i < shape_.calls; ++i) problem_.serving_baseline(set_, i);
    return std::nullopt;
  });
  if (auto* why = std::get_if<std::string>(&base))
    throw Error(ErrorDomain::cuda, 0, "the baseline call cannot be captured in a CUDA graph: " + *why);
  vendor_graph_ = std::move(std::get<GraphExec>(base));

  auto reads = capture_graph(stream_, [&]() -> std::optional<std::string> {
    for (int i = 0; i < shape_.calls; ++i) problem_.serving_stream_read(set_, i);
    return std::nullopt;
  });
  if (auto* why = std::get_if<std::string>(&reads))
    throw Error(ErrorDomain::cuda, 0, "the streaming read cannot be captured in a CUDA graph: " + *why);
  stream_graph_ = std::move(std::get<GraphExec>(reads));
  return std::nullopt;
}

void ServingTimer::replay_candidate() { launch_graph(candidate_graph_, stream_); }

ServingTimes ServingTimer::measure(int warmup, int min_replays, int max_replays, std::chrono::milliseconds budget) {
  const auto timed = [&](const GraphExec& g, const Event& start, const Event& end) {
    record(start, stream_);
    launch_graph(g, stream_);
    record(end, stream_);
  };
  for (int i = 0; i < warmup; ++i) {
    launch_graph(candidate_graph_, stream_);
    launch_graph(vendor_graph_, stream_);
    launch_graph(stream_graph_, stream_);
  }
  std::vector<double> cand, vend, reads;
  const double calls = shape_.calls;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (i >= min_replays && (i >= max_replays || std::chrono::steady_clock::now() - start >= budget)) break;
    // Alternate which side runs first, as the isolated timing does.
    const bool cand_first = i % 2 == 0;
    timed(cand_first ? candidate_graph_ : vendor_graph_, ev_[0], ev_[1]);
    timed(cand_first ? vendor_graph_ : candidate_graph_, ev_[2], ev_[3]);
    const double first = elapsed_us(ev_[0], ev_[1]) / calls, second = elapsed_us(ev_[2], ev_[3]) / calls;
    cand.push_back(cand_first ? first : second);
    vend.push_back(cand_first ? second : first);
    if (i % 4 == 0) {
      timed(stream_graph_, ev_[0], ev_[1]);
      reads.push_back(elapsed_us(ev_[0], ev_[1]) / calls);
    }
  }
  return {summarize(std::move(cand)), summarize(std::move(vend)), summarize(std::move(reads)).median_us};
}

}  // namespace kd::eval
