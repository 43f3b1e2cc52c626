// The WorkerParent against real processes in the worker's self-test modes: no GPU needed.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>

#include "common/error.hpp"
#include "fake_worker.hpp"
#include "support/temp_dir.hpp"
#include "worker/worker_parent.hpp"

namespace kd::worker {
namespace {

using namespace std::chrono_literals;

struct FakeWorkers {
  test::TempDir dir;
  std::filesystem::path mode_file = dir.path() / "mode";
  void set(const char* mode) { std::ofstream(mode_file) << mode; }
};

eval::EvalRequest any_request() {
  eval::EvalRequest r;
  r.key_line = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 batch=1 "
               "epilogue=none beta0=1";
  r.cubin = "not a cubin";
  r.plan.launches.push_back({"kd_main", {1, 1, 1}, {32, 1, 1}, 0});
  return r;
}

// After a lost worker: the next evaluation starts a fresh one (the `restarts`-th), which answers.
void expect_replaced(WorkerParent& parent, FakeWorkers& w, int restarts) {
  w.set("echo");
  EXPECT_EQ(parent.evaluate(any_request(), 10s).rule, eval::Rule::not_faster);
  EXPECT_EQ(parent.restarts(), restarts);
}

TEST(WorkerParent, EvaluatesInOneWorkerAcrossCalls) {
  FakeWorkers w;
  w.set("echo");
  WorkerParent parent(test::fake_worker_spawn(w.mode_file));
  const eval::Verdict a = parent.evaluate(any_request(), 10s);
  EXPECT_EQ(a.rule, eval::Rule::not_faster) << a.detail;
  const pid_t pid = parent.pid();
  EXPECT_GT(pid, 0);
  EXPECT_EQ(parent.evaluate(any_request(), 10s).rule, eval::Rule::not_faster);
  EXPECT_EQ(parent.pid(), pid);
  EXPECT_EQ(parent.restarts(), 0);
}

TEST(WorkerParent, WatchdogKillsAHungWorkerAndTheNextCallGetsAFreshOne) {
  FakeWorkers w;
  w.set("hang");
  WorkerParent parent(test::fake_worker_spawn(w.mode_file));
  parent.ensure_started();
  const pid_t hung = parent.pid();
  const auto t0 = std::chrono::steady_clock::now();
  const eval::Verdict v = parent.evaluate(any_request(), 300ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(v.rule, eval::Rule::hang_timeout) << v.detail;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 10s);
  EXPECT_NE(v.detail.find("signal 9"), std::string::npos) << v.detail;
  EXPECT_EQ(parent.pid(), 0);
  EXPECT_EQ(::kill(hung, 0), -1) << "the hung worker must be gone (killed and reaped)";

  expect_replaced(parent, w, 1);
}

TEST(WorkerParent, AWorkerThatDiesIsACrashAndIsReplaced) {
  FakeWorkers w;
  w.set("crash");
  WorkerParent parent(test::fake_worker_spawn(w.mode_file));
  const eval::Verdict v = parent.evaluate(any_request(), 10s);
  EXPECT_EQ(v.rule, eval::Rule::crashed);
  EXPECT_NE(v.detail.find("signal 11"), std::string::npos) << v.detail;
  expect_replaced(parent, w, 1);
}

TEST(WorkerParent, ALostContextIsReportedThenTheWorkerIsReplaced) {
  FakeWorkers w;
  w.set("sticky");
  WorkerParent parent(test::fake_worker_spawn(w.mode_file));
  const eval::Verdict v = parent.evaluate(any_request(), 10s);
  EXPECT_EQ(v.rule, eval::Rule::crashed);
  EXPECT_NE(v.detail.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("exit status 70"), std::string::npos) << v.detail;
  EXPECT_EQ(parent.pid(), 0);
  expect_replaced(parent, w, 1);
}

TEST(WorkerParent, AWorkerThatCannotStartThrows) {
  WorkerSpawn s;
  s.argv = {"/nonexistent/kdispatch-worker"};
  WorkerParent parent(s);
  EXPECT_THROW(parent.evaluate(any_request(), 1s), Error);
}


// The parent's side of enumerate_cublaslt against the echo worker's two made-up algorithms.
TEST(WorkerParent, EnumeratesCublasLtAlgorithmsInTheSameWorker) {
  FakeWorkers w;
  w.set("echo");
  WorkerParent parent(test::fake_worker_spawn(w.mode_file));
  EXPECT_EQ(parent.evaluate(any_request(), 10s).rule, eval::Rule::not_faster);
  const pid_t pid = parent.pid();
  const EnumerationResult r = parent.enumerate_cublaslt({any_request().key_line, {}}, 10s);
  ASSERT_TRUE(std::holds_alternative<cublaslt::Enumeration>(r)) << std::get<std::string>(r);
  const auto& e = std::get<cublaslt::Enumeration>(r);
  ASSERT_EQ(e.algos.size(), 2u);
  EXPECT_EQ(e.algos[1].algo.bytes, std::string(kCublasLtAlgoBytes, '\x02'));
  EXPECT_EQ(e.algos[1].algo.workspace_bytes, 2u << 20);
  EXPECT_EQ(e.algos[0].origin, "heuristic #1");
  EXPECT_EQ(parent.pid(), pid) << "an enumeration must not cost a worker";
}

TEST(WorkerParent, AnEnumerationThatHangsOrLosesTheContextIsAnErrorAndTheWorkerIsReplaced) {
  FakeWorkers w;
  w.set("hang");
  WorkerParent parent(test::fake_worker_spawn(w.mode_file));
  const EnumerationResult hung = parent.enumerate_cublaslt({any_request().key_line, {}}, 300ms);
  ASSERT_TRUE(std::holds_alternative<std::string>(hung));
  EXPECT_NE(std::get<std::string>(hung).find("hang_timeout"), std::string::npos) << std::get<std::string>(hung);
  EXPECT_EQ(parent.pid(), 0);

  w.set("sticky");
  const EnumerationResult lost = parent.enumerate_cublaslt({any_request().key_line, {}}, 10s);
  ASSERT_TRUE(std::holds_alternative<std::string>(lost));
  EXPECT_NE(std::get<std::string>(lost).find("exit status 70"), std::string::npos) << std::get<std::string>(lost);
  EXPECT_EQ(parent.pid(), 0);

  w.set("echo");
  EXPECT_TRUE(std::holds_alternative<cublaslt::Enumeration>(parent.enumerate_cublaslt({any_request().key_line, {}}, 10s)));
  EXPECT_EQ(parent.restarts(), 2);
}

}  // namespace
}  // namespace kd::worker
