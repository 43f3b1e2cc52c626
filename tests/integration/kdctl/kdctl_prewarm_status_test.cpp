// kdctl prewarm and kdctl status against the real kdispatchd, on any machine: the daemon runs with
// `workers = "none"`, so it queues jobs but never searches, exactly as on a machine without a GPU.
// What is checked is what kdctl documents (README "Exit codes"): 0 done, 1 failed (no daemon),
// 2 usage (bad shape-list lines, named with their line numbers), 4 no GPU to search with.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include "ctl_client/ctl_client.hpp"
#include "cuda/driver.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "key/gemm_key.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using nlohmann::json;

const std::string kShapeA =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 "
    "batch=1 epilogue=none beta0=1";
const std::string kShapeB =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=1 "
    "epilogue=none beta0=0";
const std::string kShorthand = "linear dtype=bf16 tokens=16 in=4096 out=11008";

std::string canonical(const std::string& line) { return std::get<GemmKey>(parse_key(line)).shape_line(); }

class KdctlDaemon : public ::testing::Test {
protected:
  // A daemon that queues but never searches, whatever the machine has.
  void start_daemon(const std::string& toml = "workers = \"none\"\n") {
    daemon_ = std::make_unique<DaemonProcess>(tmp_.path(), std::vector<std::string>{}, toml);
  }
  KdctlRun kdctl(const std::vector<std::string>& args) { return run_kdctl(tmp_.path(), args); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    write_text(tmp_.path() / name, text);
    return tmp_.path() / name;
  }
  std::string socket() const { return daemon_ ? daemon_->socket().string() : (tmp_.path() / "none.sock").string(); }
  std::vector<std::string> queued_keys() {
    std::vector<std::string> keys;
    // Named: a range-for over status(...).top_jobs would iterate a destroyed temporary.
    const protocol::Status status = daemon::Client::status(daemon_->socket(), 100);
    for (const protocol::JobEntry& j : status.top_jobs.value())
      if (j.state == "queued") keys.push_back(j.key);
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  TempDir tmp_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(KdctlDaemon, StatusPrintsTheDaemonAndItsJson) {
  start_daemon();
  const KdctlRun text = kdctl({"status", "--socket", socket()});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("kdispatchd "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("pid " + std::to_string(daemon_->pid())), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("search: no search backend: workers = none"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("jobs: 0 queued"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPU policy: a search started by an application's miss takes at most 10% of its GPU's "
                          "time (search_duty_cycle), a prewarm 100% (prewarm_duty_cycle)"),
            std::string::npos)
      << text.out;

  const KdctlRun as_json = kdctl({"status", "--socket", socket(), "--json"});
  ASSERT_EQ(as_json.rc, 0) << as_json.err;
  const json j = json::parse(as_json.out);  // throws (fails the test) when not JSON
  EXPECT_EQ(j.at("pid"), daemon_->pid());
  EXPECT_EQ(j.at("cache_dir"), daemon_->cache_dir().string());
  EXPECT_FALSE(j.at("search_backend").at("available").get<bool>());
  EXPECT_EQ(j.at("queue_depth"), 0);
  EXPECT_EQ(j.at("client_totals").at("calls"), 0);
  EXPECT_DOUBLE_EQ(j.at("search_policy").at("search_duty_cycle").get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(j.at("search_policy").at("prewarm_duty_cycle").get<double>(), 1.0);
}

TEST_F(KdctlDaemon, StatusWithoutADaemonIsExitOneNamingTheSocket) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", "--socket", socket()}, {"status", "--socket", socket(), "--json"}}) {
    const KdctlRun r = kdctl(args);
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.err.find("daemon at " + socket() + " not reachable"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(KdctlDaemon, PrewarmQueuesEveryShapeOnceThenSaysTheDaemonCannotSearch) {
  start_daemon();
  const auto file = write("shapes.txt", "# decode shapes\n" + kShapeA + "\n" + kShapeB + "  # calls=3\n" +
                                            kShorthand + "\n\n" + kShapeA + "\n");
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket()});
  EXPECT_EQ(r.rc, 4) << r.out << r.err;  // README: 4 = needs a GPU and none is usable
  EXPECT_NE(r.out.find("queued 3 shapes on " + socket()), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the daemon cannot search: no search backend: workers = none"), std::string::npos) << r.err;

  std::vector<std::string> expected{canonical(kShapeA), canonical(kShapeB), canonical(kShorthand)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(queued_keys(), expected);  // the jobs stay queued for a daemon that can search
  // Prewarming again queues nothing new: one job per canonical key.
  EXPECT_EQ(kdctl({"prewarm", file.string(), "--socket", socket(), "--no-wait"}).rc, 0);
  EXPECT_EQ(queued_keys().size(), 3u);
}

TEST_F(KdctlDaemon, PrewarmNoWaitQueuesAndReturnsAtOnce) {
  start_daemon();
  const auto file = write("shapes.txt", kShapeB + "\n");
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket(), "--no-wait", "--proposer",
                            "builtin", "--rounds", "2"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("queued 1 shapes"), std::string::npos) << r.out;
  EXPECT_EQ(queued_keys(), std::vector<std::string>{canonical(kShapeB)});
}

// A job's proposer is the same comma list as the daemon's setting; a bad one is refused by name.
TEST_F(KdctlDaemon, PrewarmTakesAProposerListAndRefusesAnUnknownName) {
  start_daemon();
  const auto file = write("shapes.txt", kShapeB + "\n");
  const KdctlRun ok = kdctl({"prewarm", file.string(), "--socket", socket(), "--no-wait", "--proposer",
                             "builtin,cublaslt"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_EQ(queued_keys(), std::vector<std::string>{canonical(kShapeB)});
  const KdctlRun bad = kdctl({"prewarm", file.string(), "--socket", socket(), "--no-wait", "--proposer",
                              "builtin,gpt"});
  EXPECT_NE(bad.rc, 0) << bad.out;
  EXPECT_NE(bad.err.find("gpt"), std::string::npos) << bad.err;
}

TEST_F(KdctlDaemon, PrewarmOnAMachineWithoutAGpuSaysWhyWithExitFour) {
  HiddenGpus no_gpu;  // the daemon sees no GPU even on a GPU machine
  start_daemon("");  // the default `workers = "auto"`: no device, no backend
  const auto file = write("shapes.txt", kShapeA + "\n");
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket()});
  EXPECT_EQ(r.rc, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("the daemon cannot search: no search backend"), std::string::npos) << r.err;
}

TEST_F(KdctlDaemon, PrewarmRejectsMalformedLinesByLineNumberAndQueuesNothing) {
  start_daemon();
  const auto file = write("bad.txt", kShapeA + "\n" +                        // 1
                                         "gemm a=bf16 m=banana\n" +          // 2: not a key
                                         "# a comment\n" +                   // 3
                                         "linear dtype=bf16 tokens=16 in=4096\n" +  // 4: no out=
                                         kShapeB + " # calls=zero\n");       // 5: bad count
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket()});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  for (const int line : {2, 4, 5})
    EXPECT_NE(r.err.find(file.string() + ":" + std::to_string(line) + ": "), std::string::npos)
        << "line " << line << " not named:\n" << r.err;
  EXPECT_EQ(r.err.find(file.string() + ":1:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(file.string() + ":3:"), std::string::npos) << r.err;
  EXPECT_TRUE(queued_keys().empty());
}

// Issue 33: a shape list may hold row-operator lines beside GEMM lines; each is queued exact, and
// a malformed one is named by its line number as a GEMM line is.
TEST_F(KdctlDaemon, PrewarmQueuesRowOperatorLinesBesideGemmLines) {
  start_daemon();
  const std::string layernorm = "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1";
  const std::string softmax = "softmax dtype=bf16 rows=16 cols=32000";
  const auto file = write("shapes.txt", kShapeB + "\n" + layernorm + "  # calls=7\n# calls=2\n" + softmax + "\n" +
                                            "layernorm  dtype=f32 rows=4096 cols=1024 weight=1 bias=1\n");
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket(), "--no-wait"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("queued 3 shapes"), std::string::npos) << r.out;
  std::vector<std::string> expected{canonical(kShapeB), layernorm, softmax};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(queued_keys(), expected);

  const auto bad = write("bad.txt", layernorm + "\n" +
                                        "softmax dtype=f32 rows=4 cols=8 weight=1\n" +  // 2: softmax has no weight
                                        "rmsnorm dtype=f32 rows=4 cols=0 weight=1\n");  // 3: no columns
  const KdctlRun refused = kdctl({"prewarm", bad.string(), "--socket", socket()});
  EXPECT_EQ(refused.rc, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(bad.string() + ":2: "), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("softmax takes no weight or bias"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(bad.string() + ":3: "), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find(bad.string() + ":1:"), std::string::npos) << refused.err;
}

TEST_F(KdctlDaemon, PrewarmWithoutADaemonIsExitOneNamingTheSocket) {
  const auto file = write("shapes.txt", kShapeA + "\n");
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("daemon at " + socket() + " not reachable"), std::string::npos) << r.err;
}

TEST_F(KdctlDaemon, PrewarmOfAMissingOrEmptyFile) {
  const auto missing = (tmp_.path() / "missing.txt").string();
  const KdctlRun gone = kdctl({"prewarm", missing, "--socket", socket()});
  EXPECT_EQ(gone.rc, 1);
  EXPECT_NE(gone.err.find("cannot read " + missing), std::string::npos) << gone.err;

  const auto empty = write("empty.txt", "# nothing here\n\n");
  const KdctlRun none = kdctl({"prewarm", empty.string(), "--socket", socket()});
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("holds no shapes"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace kd::test
