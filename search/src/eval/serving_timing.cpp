#include "eval/serving_timing.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "eval/device_memory.hpp"
#include "eval/timing_stats.hpp"

namespace kd::eval {

ServingTimer::ServingTimer(GemmProblem& problem, VendorBaseline& vendor, const EvalKernels& kernels,
                           CUstream stream, int s, const ServingShape& shape, const kd_gemm_args& args)
    : problem_(problem), vendor_(vendor), kernels_(kernels), stream_(stream), set_(s), shape_(shape), args_(args) {
  problem_.make_weight_copies(s, shape);
  for (Event& e : ev_) e = make_event();
}

kd_gemm_args ServingTimer::call_args(int call) const {
  kd_gemm_args a = args_;
  const auto w = reinterpret_cast<const void*>(problem_.weight_copy(call % shape_.copies));
  (shape_.weight == WeightOperand::a ? a.a : a.b) = w;
  return a;
}

GemmOperands ServingTimer::vendor_operands(int call) const {
  const OperandSet& o = problem_.set(set_);
  GemmOperands ops{o.a.body(), o.b.body(), problem_.vendor_output(),
                   problem_.key().epilogue == Epilogue::bias ? o.bias.body() : 0};
  (shape_.weight == WeightOperand::a ? ops.a : ops.b) = problem_.weight_copy(call % shape_.copies);
  return ops;
}

std::optional<std::string> ServingTimer::capture(const GateCandidate& candidate) {
  auto cand = capture_graph(stream_, [&]() -> std::optional<std::string> {
    for (int i = 0; i < shape_.calls; ++i)
      if (auto refused = candidate.launch(call_args(i), stream_)) return refused;
    return std::nullopt;
  });
  if (auto* why = std::get_if<std::string>(&cand)) return "in a CUDA graph: " + *why;
  candidate_graph_ = std::move(std::get<GraphExec>(cand));

  const OperandSet& o = problem_.set(set_);
  auto vend = capture_graph(stream_, [&]() -> std::optional<std::string> {
    for (int i = 0; i < shape_.calls; ++i) vendor_.run(vendor_operands(i), o.alpha, o.beta);
    return std::nullopt;
  });
  if (auto* why = std::get_if<std::string>(&vend))
    throw Error(ErrorDomain::cuda, 0, "the vendor call cannot be captured in a CUDA graph: " + *why);
  vendor_graph_ = std::move(std::get<GraphExec>(vend));

  // The inputs a call reads: its weight copy and the other operand, each from its first element.
  const GemmKey& k = problem_.key();
  const std::uint64_t other = shape_.weight == WeightOperand::a ? span_bytes(matrix_b(k, 0)) : span_bytes(matrix_a(k, 0));
  const CUdeviceptr other_ptr = shape_.weight == WeightOperand::a ? o.b.body() : o.a.body();
  auto reads = capture_graph(stream_, [&]() -> std::optional<std::string> {
    for (int i = 0; i < shape_.calls; ++i) {
      kernels_.stream_read(stream_, problem_.weight_copy(i % shape_.copies), round_up(shape_.weight_bytes, 16),
                           other_ptr, round_up(other, 16), problem_.stream_sink());
    }
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
