#include "eval/cuda_graph.hpp"

#include "common/error.hpp"
#include "cuda/driver.hpp"

namespace kd::eval {

void GraphExecDeleter::operator()(CUgraphExec_st* g) const noexcept {
  if (g != nullptr) cu().cuGraphExecDestroy(g);
}

std::variant<GraphExec, std::string> capture_graph(CUstream stream,
                                                   const std::function<std::optional<std::string>()>& enqueue) {
  const CudaDriver& d = cu();
  KD_CU_CHECK(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin graph capture");
  std::optional<std::string> refused;
  try {
    refused = enqueue();
  } catch (...) {
    CUgraph discarded = nullptr;
    d.cuStreamEndCapture(stream, &discarded);
    if (discarded != nullptr) d.cuGraphDestroy(discarded);
    throw;
  }
  CUgraph graph = nullptr;
  const CUresult ended = d.cuStreamEndCapture(stream, &graph);
  const auto destroy = [&] {
    if (graph != nullptr) d.cuGraphDestroy(graph);
  };
  if (refused) {
    destroy();
    return *refused;
  }
  if (ended != CUDA_SUCCESS) {
    destroy();
    return "capture: " + cuda_error_name(ended);
  }
  CUgraphExec exec = nullptr;
  const CUresult made = d.cuGraphInstantiate(&exec, graph, 0);
  destroy();
  if (made != CUDA_SUCCESS) return "graph instantiation: " + cuda_error_name(made);
  return GraphExec(exec);
}

void launch_graph(const GraphExec& graph, CUstream stream) {
  KD_CU_CHECK(cu().cuGraphLaunch(graph.get(), stream), "graph launch");
}

}  // namespace kd::eval
