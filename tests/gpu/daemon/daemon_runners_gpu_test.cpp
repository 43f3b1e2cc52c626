// Two search runners on one GPU (workers = "0,0", issue 31 item 4 / issue 32 on a one-GPU machine):
// the real kdispatchd prewarms a few small shapes with both runners, `status` and `kdctl status`
// show each runner, and a worker killed with SIGKILL in the middle of a search leaves the other
// runner searching while its own search goes on with a fresh worker; every shape settles.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "support/eventually.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string f32_shape(int m, int n, int k) {
  return "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=" + std::to_string(m) + " n=" + std::to_string(n) +
         " k=" + std::to_string(k) + " lda=" + std::to_string(m) + " ldb=" + std::to_string(k) +
         " ldc=" + std::to_string(m) + " batch=1 epilogue=none beta0=1";
}

json status_of(const DaemonProcess& d) { return daemon::Client::status(d.socket(), 0); }

json runner(const json& status, std::size_t i) { return status.at("runners").at(i); }

TEST(DaemonRunnersOnGpu, TwoRunnersOnOneGpuShareAPrewarmAndSurviveAKilledWorker) {
  KD_REQUIRE_GPU();
  TempDir dir;
  DaemonProcess daemon(dir.path(), {}, "workers = \"0,0\"\nbudget_rounds = 2\nbudget_candidates = 12\n");
  json status = status_of(daemon);
  ASSERT_EQ(status.at("runners").size(), 2u) << status.dump(2);
  EXPECT_EQ(runner(status, 0).at("ordinal"), 0);
  EXPECT_EQ(runner(status, 1).at("ordinal"), 0);
  EXPECT_EQ(runner(status, 0).at("gpu"), runner(status, 1).at("gpu"));

  std::vector<std::string> shapes;
  for (const int m : {256, 384, 512, 640, 768, 896}) shapes.push_back(f32_shape(m, 256, 384));
  std::string text;
  for (const auto& s : shapes) text += s + "\n";
  write_text(dir.path() / "shapes.txt", text);
  TempDir scratch;
  const KdctlRun queued = run_kdctl(scratch.path(), {"prewarm", (dir.path() / "shapes.txt").string(), "--no-wait",
                                                     "--socket", daemon.socket().string()});
  ASSERT_EQ(queued.rc, 0) << queued.out << queued.err;

  // Both runners search at once; then runner 1's worker is killed in the middle of its search.
  ASSERT_TRUE(eventually(
      [&] {
        status = status_of(daemon);
        return runner(status, 0).at("state") == "searching" && runner(status, 1).at("state") == "searching" &&
               runner(status, 1).at("worker_pid").get<int>() > 0;
      },
      300s))
      << status.dump(2) << daemon.log();
  const KdctlRun printed = run_kdctl(scratch.path(), {"status", "--socket", daemon.socket().string()});
  EXPECT_EQ(printed.rc, 0) << printed.err;
  EXPECT_NE(printed.out.find("runner 0 on GPU 0"), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("runner 1 on GPU 0"), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("searching f32"), std::string::npos) << printed.out;

  std::this_thread::sleep_for(1s);  // into an evaluation, most likely
  const int victim = runner(status_of(daemon), 1).at("worker_pid").get<int>();
  ASSERT_GT(victim, 0);
  const std::uint64_t other_before = runner(status_of(daemon), 0).at("jobs_finished").get<std::uint64_t>();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  // The other runner goes on finishing jobs, the killed runner gets a fresh worker, every shape settles.
  ASSERT_TRUE(eventually(
      [&] {
        status = status_of(daemon);
        return runner(status, 0).at("jobs_finished").get<std::uint64_t>() > other_before &&
               runner(status, 1).at("workers_lost").get<std::uint64_t>() >= 1;
      },
      300s))
      << status.dump(2) << daemon.log();
  ASSERT_TRUE(eventually(
      [&] {
        status = status_of(daemon);
        const json& jobs = status.at("jobs");
        return jobs.at("queued") == 0 && jobs.at("running") == 0;
      },
      600s))
      << status.dump(2) << daemon.log();
  EXPECT_EQ(status.at("jobs").at("done").get<std::uint64_t>(), shapes.size()) << status.dump(2);
  EXPECT_GE(runner(status, 0).at("jobs_finished").get<std::uint64_t>(), 1u);
  EXPECT_GE(runner(status, 1).at("jobs_finished").get<std::uint64_t>(), 1u);
  EXPECT_EQ(runner(status, 0).at("jobs_finished").get<std::uint64_t>() +
                runner(status, 1).at("jobs_finished").get<std::uint64_t>(),
            shapes.size());
  const int fresh = runner(status, 1).at("worker_pid").get<int>();
  EXPECT_NE(fresh, victim) << "runner 1 runs a fresh worker";
}

}  // namespace
}  // namespace kd::test
