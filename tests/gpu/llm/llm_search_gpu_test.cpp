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
#include "test_kernels.hpp"
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

// Issue 33: the same path for a row operator. Round 0 is a builtin row_reduce seed, which the model
// is shown; the model answers under the row prompts with a plain two-pass kernel (a block per row,
// "pdl" with the wait first: test_kernels.hpp's row_kernel) and a zero-writing one. The row gate
// must pass the first (it need not beat the framework's kernel: passed or not_faster) and reject the
// second; a winner is a kernel record of the row key's full line.
TEST(LlmSearchOnGpu, ScriptedModelRowKernelsRunThroughTheRowGate) {
  KD_REQUIRE_GPU();
  const DeviceInfo dev = query_device(0);
  const search::GpuTarget target = search::GpuTarget::from(dev);
  const RowKey key = std::get<RowKey>(std::get<OpKey>(parse_op_key(
                                          "layernorm dtype=bf16 rows=4096 cols=1024 weight=1 bias=1")))
                         .with_device({dev.arch, dev.name, dev.sms});

  builtin::BuiltinProposer builtin;
  const GemmKey no_gemm{};
  const search::SearchTree no_tree;
  std::vector<search::Proposal> seeds = builtin.seeds({no_gemm, target, no_tree, 0, 0, 0, 0, nullptr, &key});
  ASSERT_FALSE(seeds.empty());
  seeds.resize(1);

  llm::test::FakeLlmServer server;
  server.push({200, llm::test::openai_reply(R"(["a block of 256 threads per row, two passes over x in f32"])")});
  server.push({200, llm::test::openai_reply(
                        fenced(llm::test::row_kernel(RowOp::layernorm, DType::bf16, "kd_row", 8 * dev.sms)) +
                        fenced(llm::test::zero_row_kernel(DType::bf16)))});
  ::setenv("KD_TEST_LLM_KEY", "sk-test-not-a-real-key", 1);
  ::setenv("NO_PROXY", "127.0.0.1", 1);
  llm::LlmConfig c;
  c.base_url = server.base_url();
  c.model = "scripted";
  c.key = llm::KeyFromEnv{"KD_TEST_LLM_KEY"};
  llm::LlmSearchProposer llm(c, std::make_shared<llm::TokenBudget>(100000));

  std::vector<search::Proposer*> proposers{&llm};
  test::TempDir cache;
  search::WorkerBackend backend(worker::default_worker_spawn(0, cache.path()), std::chrono::seconds(120));
  search::CompileService compiler;
  search::SearchOptions opts;
  opts.budget.rounds = 1;
  opts.budget.ideas = 1;
  opts.budget.impls = 2;
  opts.budget.topk = 1;
  const search::SearchOutcome out = run_search(OpKey(key), target, proposers, compiler, &backend, opts, {}, seeds);

  for (const search::Node& n : out.tree.nodes())
    std::printf("node %d r%d %-8s %-14s %8.1f us (baseline %.1f us)  %s\n  %s\n", n.id, n.round, n.proposer.c_str(),
                n.verdict.c_str(), n.candidate_us, n.baseline_us, n.idea.c_str(), n.detail.c_str());
  ASSERT_EQ(out.tree.nodes().size(), 3u) << out.stop_reason;
  EXPECT_TRUE(out.tree.node(0).correct()) << "the row_reduce seed: " << out.tree.node(0).detail;
  EXPECT_EQ(out.tree.node(1).proposer, "llm");
  EXPECT_EQ(out.tree.node(1).compile_status, "ok") << out.tree.node(1).compile_log;
  EXPECT_TRUE(out.tree.node(1).correct()) << out.tree.node(1).verdict << ": " << out.tree.node(1).detail;
  EXPECT_FALSE(out.tree.node(2).correct()) << "the zero-writing row kernel passed the gate";

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].body.find("struct kd_row_args"), std::string::npos);
  EXPECT_NE(requests[1].body.find("KD_ROW_THREADS"), std::string::npos) << "the model is shown the row_reduce seed";
  EXPECT_EQ(requests[1].body.find("kd_gemm_args"), std::string::npos);
  if (out.winner) {
    const Record r = search::make_record(out, *out.winner, key.full_line(), {search::nvrtc_version(), 0, 0});
    EXPECT_EQ(r.key_line, key.full_line());
    EXPECT_EQ(r.kind, RecordKind::nvrtc_kernel);
    std::printf("published node %d: %.1f us vs the baseline's %.1f us\n", *out.winner,
                out.tree.node(*out.winner).candidate_us, out.tree.node(*out.winner).baseline_us);
  } else {
    std::printf("no winner (%s): the framework's kernel stays\n", out.stop_reason.c_str());
  }
}

}  // namespace
}  // namespace kd
