#include "cublaslt_gpu_common.hpp"

#include <cstdio>

#include "cublaslt_proposer/cublaslt_proposer.hpp"
#include "cuda/device.hpp"
#include "driver/worker_backend.hpp"
#include "worker/worker_parent.hpp"

namespace kd::test {

std::vector<GemmKey> cublaslt_test_keys() {
  const DeviceInfo dev = query_device(0);
  std::vector<GemmKey> keys;
  for (const char* line :
       {"gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
        "epilogue=none beta0=1",
        "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
        "epilogue=none beta0=1"})
    keys.push_back(std::get<GemmKey>(parse_key(line)).with_device({dev.arch, dev.name, dev.sms}));
  return keys;
}

search::SearchOutcome cublaslt_search(const GemmKey& key, const std::string& cache_dir, eval::Timing timing) {
  const DeviceInfo dev = query_device(0);
  const search::GpuTarget target = search::GpuTarget::from(dev);
  search::WorkerBackend backend(worker::default_worker_spawn(0, cache_dir), std::chrono::seconds(120));
  cublaslt::CublasLtProposer proposer;
  std::vector<search::Proposer*> proposers{&proposer};
  search::CompileService compiler;
  search::SearchOptions opts;
  opts.budget.rounds = 0;
  opts.eval.timing = timing;
  std::printf("cublaslt search on %s: %s\n", dev.name.c_str(), key.shape_line().c_str());
  const search::SearchObserver print = [](const search::SearchEvent& e) {
    if (e.kind != search::SearchEvent::Kind::candidate_done || e.node == nullptr) return;
    const search::Node& n = *e.node;
    std::printf("  node %2d %-22s %8.2f us (cuBLAS %8.2f us)  %s\n", n.id, n.verdict.c_str(), n.candidate_us,
                n.baseline_us, n.idea.c_str());
    if (!n.correct()) std::printf("           %s\n", n.detail.substr(0, 200).c_str());
    std::fflush(stdout);
  };
  search::SearchOutcome out = run_search(key, target, proposers, compiler, &backend, opts, print);
  int correct = 0, splitk = 0;
  for (const search::Node& n : out.tree.nodes()) {
    if (n.correct()) ++correct;
    if (n.idea.find("split-K") != std::string::npos) ++splitk;
  }
  std::printf("  %zu candidates (%d split-K variants), %d correct; stopped: %s\n", out.tree.nodes().size(), splitk,
              correct, out.stop_reason.c_str());
  if (const auto best = out.tree.best()) {
    const search::Node& b = out.tree.node(*best);
    std::printf("  best: node %d %.2f us vs cuBLAS %.2f us (x%.2f)%s: %s\n", b.id, b.candidate_us, b.baseline_us,
                b.candidate_us > 0 ? b.baseline_us / b.candidate_us : 0.0, out.winner ? ", published-grade" : "",
                b.idea.c_str());
  }
  std::fflush(stdout);
  return out;
}

}  // namespace kd::test
