// Capturing a stream's work into an executable CUDA graph, and launching it: the serving-regime
// timing (eval/serving_regime.hpp) replays R back-to-back calls this way, as servers replay their
// decode steps.
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace kd::eval {

struct GraphExecDeleter {
  void operator()(CUgraphExec_st* g) const noexcept;
};
using GraphExec = std::unique_ptr<CUgraphExec_st, GraphExecDeleter>;

// Captures what `enqueue` queues on `stream` (thread-local capture mode) and instantiates it.
// `enqueue` returns nullopt, or the text of a launch it could not queue; that text is returned and
// the capture is discarded. A capture or instantiation the driver refuses is returned as its error
// text too ("capture: CUDA_ERROR_..."), since a candidate's launch can invalidate a capture. Never
// leaves the stream capturing.
std::variant<GraphExec, std::string> capture_graph(CUstream stream,
                                                   const std::function<std::optional<std::string>()>& enqueue);

// Queues one replay of `graph` on `stream`; throws kd::Error on a driver error.
void launch_graph(const GraphExec& graph, CUstream stream);

}  // namespace kd::eval
