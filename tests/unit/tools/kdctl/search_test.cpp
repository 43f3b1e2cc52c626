// kdctl search's proposer selection and its dry run with the cublaslt proposer, which needs no
// compile and no GPU: it must say that cuBLASLt enumeration needs a GPU rather than fail obscurely.
// The llm proposer takes its settings as kdispatchd does (KD_LLM_* variables, overridden by flags),
// checked against the scripted LLM server (unit/search/llm/fake_llm_server.hpp).
#include <gtest/gtest.h>

#include "fake_llm_server.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

constexpr const char* kKey =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1";

TEST(KdctlSearch, CublasLtDryRunSaysEnumerationNeedsAGpu) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"search", "--key", kKey, "--proposer", "cublaslt", "--dry-run"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("cublaslt enumeration needs a GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("needs_gpu"), std::string::npos) << "the tree records the fate:\n" << r.out;
}

TEST(KdctlSearch, UnknownOrRepeatedProposerIsAUsageError) {
  TempDir dir;
  KdctlRun r = run_kdctl(dir.path(), {"search", "--key", kKey, "--proposer", "builtin,cublas", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown proposer 'cublas'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cublaslt"), std::string::npos) << "the message lists the known proposers: " << r.err;
  r = run_kdctl(dir.path(), {"search", "--key", kKey, "--proposer", "cublaslt,cublaslt", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
}

// --family: an unknown name, an empty one, or a list without the builtin proposer is a usage error
// that names the fix.
TEST(KdctlSearch, FamilyFlagNamesTheProblem) {
  TempDir dir;
  KdctlRun r = run_kdctl(dir.path(), {"search", "--key", kKey, "--family", "wg_tma_f16", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("builtin family 'wg_tma_f16' is unknown"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wg_tma_f16s"), std::string::npos) << "the message lists the families: " << r.err;
  r = run_kdctl(dir.path(), {"search", "--key", kKey, "--family", "wg_tiled,", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("empty family name"), std::string::npos) << r.err;
  r = run_kdctl(dir.path(), {"search", "--key", kKey, "--family", "wg_tiled", "--proposer", "cublaslt", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("add builtin to --proposer"), std::string::npos) << r.err;
}

// --family wg_tma_f16s on a batched attention shape its rules decline: a dry run of round 0 proposes
// and compiles that family's seeds alone.
TEST(KdctlSearch, FamilyFlagSeedsADeclinedFamily) {
  TempDir dir;
  const KdctlRun r = run_kdctl(
      dir.path(), {"search", "--family", "wg_tma_f16s", "--rounds", "0", "--dry-run", "--key",
                   "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=512 n=512 k=64 lda=64 ldb=64 ldc=512 batch=32 "
                   "stride_a=32768 stride_b=32768 stride_c=262144 epilogue=none beta0=1"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("wg_tma_f16s"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wg_tiled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("proposals compiled"), std::string::npos) << r.out;
}

// Only builtin seeds this key (simt_tiled), so a dry run compiles few candidates.
constexpr const char* kSmallF32Key =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 "
    "epilogue=none beta0=1";

// An empty kdispatchd configuration file, so that no file on the machine takes part.
std::string empty_config(const TempDir& dir) {
  write_text(dir.path() / "kdispatchd.toml", "");
  return (dir.path() / "kdispatchd.toml").string();
}

TEST(KdctlSearch, LlmProposerTakesKdispatchdsEnvironment) {
  TempDir dir;
  llm::test::FakeLlmServer server;
  server.push({200, llm::test::openai_reply(R"(["stage B through shared memory"])")});
  server.push({200, llm::test::openai_reply("no code today")});
  const KdctlRun r = run_kdctl(dir.path(),
                               {"search", "--key", kSmallF32Key, "--proposer", "builtin,llm", "--dry-run", "--rounds",
                                "1", "--ideas", "1", "--impls", "1"},
                               {"KD_LLM_MODEL=model-from-env", "KD_LLM_URL=" + server.base_url(),
                                "KD_LLM_KEY_ENV=KD_TEST_LLM_KEY", "KD_TEST_LLM_KEY=sk-from-env", "KD_CONFIG=" + empty_config(dir)});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto requests = server.requests();
  ASSERT_FALSE(requests.empty()) << "kdctl search reached the server named by KD_LLM_URL\n" << r.out << r.err;
  EXPECT_EQ(requests[0].json().value("model", ""), "model-from-env");
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer sk-from-env") << "the key named by KD_LLM_KEY_ENV";
}

TEST(KdctlSearch, LlmFlagsOverrideTheEnvironmentAndAMissingModelNamesTheFix) {
  TempDir dir;
  KdctlRun r = run_kdctl(dir.path(), {"search", "--key", kSmallF32Key, "--proposer", "llm", "--dry-run"},
                         {"KD_LLM_MODEL=", "KD_CONFIG=" + empty_config(dir)});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("KD_LLM_MODEL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--llm-model"), std::string::npos) << r.err;

  r = run_kdctl(dir.path(), {"search", "--key", kSmallF32Key, "--proposer", "llm", "--dry-run"},
                {"KD_LLM_MODEL=m", "KD_LLM_API=grpc", "KD_CONFIG=" + empty_config(dir)});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("KD_LLM_API"), std::string::npos) << "the message names where the value came from: " << r.err;

  // The flag wins over the variable: the llm proposer alone writes no seeds, so it sends nothing
  // and the dry run succeeds once the flag fixes the API.
  r = run_kdctl(dir.path(),
                {"search", "--key", kSmallF32Key, "--proposer", "llm", "--dry-run", "--llm-api", "anthropic"},
                {"KD_LLM_MODEL=m", "KD_LLM_API=grpc", "KD_CONFIG=" + empty_config(dir)});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

// Issue 29: a range key runs the range search. f32 17..32 on the default target (sm_90, no GPU here)
// is served by wg_tiled's 32-column tiles; one candidate keeps the dry run to one compile.
TEST(KdctlSearch, ARangeKeyRunsTheRangeSearchOverTheConfigurationsThatServeEveryN) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"search", "--key", "linear dtype=f32 tokens=17..32 in=4096 out=4096",
                                            "--dry-run", "--rounds", "0", "--max-candidates", "1"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("n=17..32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a range of n: searched at n=32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("r0 #0   wg_tiled"), std::string::npos) << "the first seed is wgmma's:\n" << r.out;
  EXPECT_NE(r.out.find("dry run: 1 candidates that serve every n of 17..32 compiled; the range gate did not run"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("winner"), std::string::npos) << r.out;
}

TEST(KdctlSearch, AnExactKeyIsNotSearchedAsARange) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"search", "--key", "linear dtype=f32 tokens=32 in=4096 out=4096",
                                            "--dry-run", "--rounds", "0", "--max-candidates", "1"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("a range of n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("candidates that serve every n"), std::string::npos) << r.out;
}

// Issue 33: a row operator's search names its baseline as the framework's kernel, never cuBLAS; a
// malformed row line is a usage error naming the token.
TEST(KdctlSearch, ARowKeysDryRunNamesTheFrameworksKernel) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"search", "--key", "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1",
                                            "--dry-run", "--rounds", "0", "--max-candidates", "1"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("r0 #0   row_reduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept the framework's kernel: no correct candidate"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cuBLAS"), std::string::npos) << r.out;

  const KdctlRun bad = run_kdctl(dir.path(), {"search", "--key", "softmax dtype=f32 rows=4 cols=8 bias=1", "--dry-run"});
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("kdctl search: bad --key: column"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("softmax takes no weight or bias"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace kd::test
