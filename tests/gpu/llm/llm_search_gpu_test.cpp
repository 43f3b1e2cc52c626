#include <gtest/gtest.h>

#include <cstdlib>

#include "builtin/builtin_proposer.hpp"
#include "builtin/family.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "driver/search_driver.hpp"
#include "driver/winner_record.hpp"
#include "driver/worker_backend.hpp"
#include "fake_llm_server.hpp"
#include "llm/search_adapter.hpp"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"
#include "worker/worker_parent.hpp"

namespace kd {
namespace {

// A kernel that honours the contract's form but computes nothing useful: the gate must reject it.
constexpr const char* kWrongKernel = R"(#include <kdispatch/gemm.cuh>
// kdispatch:plan {"launches":[{"entry":"kd_zero","grid":[256,1,1],"block":[256,1,1],"smem":0}],"workspace":0}
extern "C" __global__ void kd_zero(kd_gemm_args a) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.m * a.n; i += gridDim.x * (long long)blockDim.x)
    static_cast<float*>(a.c)[(i % a.m) + (i / a.m) * a.ldc] = 0.f;
}
)";

std::string fenced(const std::string& s) { return "```cuda\n" + s + "\n```\n"; }

TEST(LlmSearchOnGpu, ScriptedModelKernelsRunThroughTheGateAndTheBestIsPublished) {
  KD_REQUIRE_GPU();
  const DeviceInfo dev = query_device(0);
  const search::GpuTarget target = search::GpuTarget::from(dev);
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1"))
                          .with_device({dev.arch, dev.name, dev.sms});

  // The model's good kernel: a skinny_bulk (3xTF32) configuration no builtin seed uses.
  const builtin::Family* bulk = builtin::find_family("skinny_bulk");
  const builtin::Params p = bulk->complete(key, target, {{"KD_ROWS", 32}, {"KD_KC", 256}, {"KD_WARPS", 8}, {"KD_CTAS_PER_SM", 1}});
  ASSERT_TRUE(bulk->valid(key, target, p));
  const std::string good = builtin::render(*bulk, key, target, p);

  llm::test::FakeLlmServer server;
  server.push({200, llm::test::openai_reply(R"(["stream A through a bulk-copy ring and use 3xTF32 tensor cores"])")});
  server.push({200, llm::test::openai_reply(fenced(good) + fenced(kWrongKernel))});
  ::setenv("KD_TEST_LLM_KEY", "sk-test-not-a-real-key", 1);
  ::setenv("NO_PROXY", "127.0.0.1", 1);
  llm::LlmConfig c;
  c.base_url = server.base_url();
  c.model = "scripted";
  c.key = llm::KeyFromEnv{"KD_TEST_LLM_KEY"};
  llm::LlmSearchProposer llm(c, std::make_shared<llm::TokenBudget>(100000));

  // Round 0 is one slow, correct seed (simt_tiled); round 1 is the model's.
  const builtin::Family* simt = builtin::find_family("simt_tiled");
  const builtin::Params sp{{"KD_BM", 64}, {"KD_BN", 16}, {"KD_BK", 32}, {"KD_TM", 4}, {"KD_TN", 1}};
  std::vector<search::Proposal> seeds{{"builtin", "simt_tiled", "seed", builtin::describe(sp),
                                       builtin::render(*simt, key, target, sp), -1, {}, {}}};
  std::vector<search::Proposer*> proposers{&llm};
  test::TempDir cache;
  search::WorkerBackend backend(worker::default_worker_spawn(0, cache.path()), std::chrono::seconds(60));
  search::CompileService compiler;
  search::SearchOptions opts;
  opts.budget.rounds = 1;
  opts.budget.ideas = 1;
  opts.budget.impls = 2;
  opts.budget.topk = 1;
  const search::SearchOutcome out = run_search(key, target, proposers, compiler, &backend, opts, {}, seeds);

  for (const search::Node& n : out.tree.nodes())
    std::printf("node %d r%d %-8s %-14s %8.1f us (cuBLAS %.1f us)  %s\n", n.id, n.round, n.proposer.c_str(),
                n.verdict.c_str(), n.candidate_us, n.baseline_us, n.idea.c_str());
  ASSERT_EQ(out.tree.nodes().size(), 3u);
  EXPECT_EQ(out.tree.node(1).proposer, "llm");
  EXPECT_EQ(out.tree.node(1).verdict, "passed") << out.tree.node(1).detail;
  EXPECT_FALSE(out.tree.node(2).correct()) << "the zero-writing kernel passed the gate";
  ASSERT_TRUE(out.winner.has_value());
  EXPECT_EQ(*out.winner, 1);

  CacheWriter writer(cache.path());
  writer.put_raw("trees", out.tree.search_id(), out.tree.to_json().dump());
  writer.commit_record(search::make_record(out, *out.winner, key.full_line(), {search::nvrtc_version(), 0, 0}));
  EXPECT_EQ(server.requests().size(), 2u);
  const std::string stored = *writer.get_raw("trees", out.tree.search_id());
  EXPECT_EQ(stored.find("sk-test-not-a-real-key"), std::string::npos);
  std::printf("published the llm kernel: %.1f us vs cuBLAS %.1f us (x%.2f); rejected: %s (%s)\n",
              out.tree.node(1).candidate_us, out.tree.node(1).baseline_us,
              out.tree.node(1).baseline_us / out.tree.node(1).candidate_us, out.tree.node(2).verdict.c_str(),
              out.tree.node(2).detail.c_str());
}

}  // namespace
}  // namespace kd
