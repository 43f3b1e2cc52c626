// kdctl's daemon-facing subcommands against the real kdispatchd (issue 28): stop and cancel; a
// prewarm of 10,000 shapes in batches; import and evict into a cache a live daemon serves (the
// daemon is told, re-reads the generation and tells its subscribers; GEMM and row operators'
// records alike); and kill -9 of the daemon
// during prewarm and during import, 50 times each, losing nothing acknowledged and tearing no record.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string_view>
#include <memory>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "archive.hpp"
#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "key/gemm_key.hpp"
#include "store/cache_store.hpp"
#include "store/record.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

using nlohmann::json;
using daemon::Client;

const DevicePart kH100Part{"sm_90", "NVIDIA H100 80GB HBM3", 132};

// A canonical shape line, distinct for each (m, n).
std::string shape(int m, int n) {
  const std::string ms = std::to_string(m), ns = std::to_string(n);
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=" + ms + " n=" + ns + " k=4096 lda=4096 ldb=4096 ldc=" +
         ms + " batch=1 epilogue=none beta0=1";
}

std::string lines_of(const std::vector<std::string>& shapes) {
  std::string text;
  for (const auto& s : shapes) text += s + "\n";
  return text;
}

// An archive of `n` H100 records for shapes with m = first_m ... first_m + n - 1.
std::string archive_of(int first_m, int n) {
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i)
    records.push_back(serialize_record(test_record(full(bf16_shape(first_m + i), kH100), std::chrono::hours(1))));
  return kdctl::write_archive(kH100Part, 1700000000, records);
}

// The states the daemon reports for `keys` (the `jobs` request, 500 keys at a time).
std::vector<std::string> states_of(const std::filesystem::path& socket, const std::vector<std::string>& keys) {
  Client c(socket);
  std::vector<std::string> states;
  for (std::size_t i = 0; i < keys.size(); i += 500) {
    const auto end = keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + 500));
    const json r = c.request({{"type", "jobs"}, {"keys", std::vector<std::string>(keys.begin() + static_cast<std::ptrdiff_t>(i), end)}});
    for (const json& j : r.at("jobs")) states.push_back(j.at("state"));
  }
  return states;
}

// The last progress line "kdctl prewarm: queued X/N" of a prewarm's stderr: X (0 when none).
std::size_t last_queued(const std::string& err) {
  constexpr std::string_view kProgress = "kdctl prewarm: queued ";
  const auto at = err.rfind(kProgress);
  if (at == std::string::npos) return 0;
  return std::stoul(err.substr(at + kProgress.size()));
}

// Waits until `file` (a running kdctl's captured output) holds `text`, at most 20 s.
bool wait_for_text(const std::filesystem::path& file, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_text(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

class KdctlDaemonControl : public ::testing::Test {
protected:
  void start_daemon(const std::string& more_config = "") {
    daemon_ = std::make_unique<DaemonProcess>(tmp_.path(), std::vector<std::string>{},
                                              "workers = \"none\"\n" + more_config);
  }
  KdctlRun kdctl(const std::vector<std::string>& args) { return run_kdctl(tmp_.path(), args); }
  std::string socket() const { return daemon_ ? daemon_->socket().string() : (tmp_.path() / "none.sock").string(); }
  std::string cache() const { return (tmp_.path() / "cache").string(); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    write_text(tmp_.path() / name, text);
    return tmp_.path() / name;
  }

  TempDir tmp_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(KdctlDaemonControl, StopShutsTheDaemonDownAndWaitsForItsExit) {
  start_daemon();
  const pid_t pid = daemon_->pid();
  const KdctlRun r = kdctl({"stop", "--socket", socket()});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("kdispatchd (pid " + std::to_string(pid) + ") stopped"), std::string::npos) << r.out;
  // It has exited (a zombie until this parent reaps it), cleanly, and removed its socket.
  EXPECT_EQ(::kill(pid, 0), 0);
  const int status = daemon_->stop(SIGTERM, std::chrono::seconds(1));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(daemon_->log().find("stopped cleanly"), std::string::npos) << daemon_->log();
  EXPECT_FALSE(std::filesystem::exists(socket()));

  const KdctlRun again = kdctl({"stop", "--socket", socket()});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("no kdispatchd answers on " + socket() + "; nothing to stop"), std::string::npos)
      << again.err;
}

TEST_F(KdctlDaemonControl, CancelCancelsAQueuedJobOnce) {
  start_daemon();
  const std::string key = shape(4096, 16);
  ASSERT_EQ(kdctl({"prewarm", write("s.txt", key + "\n").string(), "--socket", socket(), "--no-wait"}).rc, 0);
  const KdctlRun r = kdctl({"cancel", key, "--socket", socket()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("cancelled " + key), std::string::npos) << r.out;
  EXPECT_EQ(states_of(daemon_->socket(), {key}), std::vector<std::string>{"cancelled"});

  const KdctlRun again = kdctl({"cancel", key, "--socket", socket()});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("no queued or running job"), std::string::npos) << again.err;
  const KdctlRun bad = kdctl({"cancel", "gemm a=bf16 m=banana", "--socket", socket()});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("column"), std::string::npos) << bad.err;
  daemon_.reset();
  const KdctlRun none = kdctl({"cancel", key, "--socket", socket()});
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("not reachable"), std::string::npos) << none.err;
}

// 10,000 shapes (1.25 MB of key lines, more than one frame) queue completely, in batches with
// progress on stderr; then prewarm says the daemon cannot search (exit 4), as documented.
TEST_F(KdctlDaemonControl, PrewarmOfTenThousandShapesQueuesThemAll) {
  start_daemon();
  std::vector<std::string> shapes;
  for (int i = 0; i < 10000; ++i) shapes.push_back(shape(64 + i, 1 + i % 7));
  const auto file = write("big.txt", lines_of(shapes));
  ASSERT_GT(std::filesystem::file_size(file), std::size_t{1} << 20);
  const KdctlRun r = kdctl({"prewarm", file.string(), "--socket", socket()});
  EXPECT_EQ(r.rc, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("queued 1000/10000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("queued 10000/10000"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("queued 10000 shapes on " + socket()), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the daemon cannot search"), std::string::npos) << r.err;
  EXPECT_EQ(Client::status(daemon_->socket()).jobs.queued, 10000u);
  const auto states = states_of(daemon_->socket(), shapes);
  EXPECT_EQ(std::count(states.begin(), states.end(), "queued"), 10000);
}

// A prewarm beyond max_queued_jobs (i28d's bound): the daemon refuses shapes of lower priority
// than every queued job, and a shape of higher priority takes the place of the lowest queued one.
// kdctl counts what the daemon's replies queued, then looks up the shapes' jobs (the jobs request,
// by key): shapes without one are said to be not queued, and it exits 1.
TEST_F(KdctlDaemonControl, PrewarmBeyondTheQueueBoundSaysWhichShapesHaveNoJob) {
  start_daemon("max_queued_jobs = 5\n");
  std::vector<std::string> large, small, larger;
  for (int i = 0; i < 5; ++i) large.push_back(shape(4096 + 64 * i, 16));
  for (int i = 0; i < 7; ++i) small.push_back(shape(64 + 64 * i, 16));
  for (int i = 0; i < 2; ++i) larger.push_back(shape(8192 + 64 * i, 16));
  const auto prewarm = [&](const std::string& name, const std::vector<std::string>& shapes) {
    return kdctl({"prewarm", write(name, lines_of(shapes)).string(), "--socket", socket(), "--no-wait", "--batch", "4"});
  };
  const KdctlRun full = prewarm("large.txt", large);
  ASSERT_EQ(full.rc, 0) << full.out << full.err;

  const KdctlRun refused = prewarm("small.txt", small);
  EXPECT_EQ(refused.rc, 1) << refused.out << refused.err;
  EXPECT_NE(refused.out.find("queued 0 of 7 shapes on " + socket()), std::string::npos) << refused.out;
  EXPECT_NE(refused.err.find("max_queued_jobs = 5 jobs, none of lower priority"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("7 shape(s) have no job"), std::string::npos) << refused.err;
  EXPECT_EQ(states_of(daemon_->socket(), small), std::vector<std::string>(7, "unknown"));

  // The two larger shapes are acknowledged as queued and displace the two smallest of `large`.
  std::vector<std::string> both = large;
  both.insert(both.end(), larger.begin(), larger.end());
  const KdctlRun displaced = prewarm("both.txt", both);
  EXPECT_EQ(displaced.rc, 1) << displaced.out << displaced.err;
  EXPECT_NE(displaced.out.find("queued 7 shapes on " + socket()), std::string::npos) << displaced.out;
  EXPECT_NE(displaced.err.find("2 shape(s) have no job"), std::string::npos) << displaced.err;
  EXPECT_EQ(states_of(daemon_->socket(), both),
            (std::vector<std::string>{"unknown", "unknown", "queued", "queued", "queued", "queued", "queued"}));
  EXPECT_EQ(Client::status(daemon_->socket()).bounds.value().jobs_dropped, 9u);
}

// kdctl import into the live daemon's cache: the daemon is told, status and stats agree on the new
// generation, and a subscribed process receives `published` with it. Evict likewise.
TEST_F(KdctlDaemonControl, ImportAndEvictIntoALiveCacheTellTheDaemonAndItsSubscribers) {
  start_daemon();
  Client subscriber(daemon_->socket());
  const json sub = subscriber.request({{"type", "subscribe"}});
  ASSERT_EQ(sub.at("type"), "ok");
  const std::uint64_t g0 = sub.at("generation");

  const auto archive = write("h100.kda", archive_of(1024, 5));
  const KdctlRun r = kdctl({"import", archive.string(), "--cache-dir", cache(), "--socket", socket()});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("5 imported, 0 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kdispatchd (pid " + std::to_string(daemon_->pid()) + ") serves this cache: told it; generation " +
                       std::to_string(g0 + 5) + " published to 1 subscriber(s)"),
            std::string::npos)
      << r.out;
  const auto notice = subscriber.receive(std::chrono::seconds(5));
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->at("type"), "published");
  EXPECT_EQ(notice->at("generation"), g0 + 5);
  EXPECT_EQ(notice->at("key"), full(bf16_shape(1024), kH100));
  EXPECT_EQ(Client::status(daemon_->socket()).generation, g0 + 5);
  EXPECT_EQ(Client::stats(daemon_->socket()).generation, g0 + 5);

  const KdctlRun e = kdctl({"evict", "--cache-dir", cache(), "--socket", socket(), "--key-pattern", "*m=1024 *"});
  ASSERT_EQ(e.rc, 0) << e.out << e.err;
  EXPECT_NE(e.out.find("1 of 5 record(s) evicted"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("told it; generation " + std::to_string(g0 + 6)), std::string::npos) << e.out;
  EXPECT_EQ(Client::status(daemon_->socket()).generation, g0 + 6);
  bool seen = false;
  while (auto n = subscriber.receive(std::chrono::seconds(5))) {
    if (n->at("generation") == g0 + 6) {
      seen = true;
      break;
    }
  }
  EXPECT_TRUE(seen);

  // Without a daemon, the write is direct and stderr says so.
  daemon_.reset();
  const KdctlRun alone = kdctl({"import", write("more.kda", archive_of(2048, 2)).string(), "--cache-dir", cache(),
                                "--socket", socket()});
  ASSERT_EQ(alone.rc, 0) << alone.err;
  EXPECT_NE(alone.err.find("kdctl import: no kdispatchd answers on " + socket() + ": the cache was written directly"),
            std::string::npos)
      << "said on stderr: " << alone.err;
}

// Issue 33: row operators' records imported into and evicted from a live daemon's cache: the
// daemon is told their row lines, and a subscriber receives `published` naming them.
TEST_F(KdctlDaemonControl, ImportAndEvictOfRowRecordsTellTheDaemonTheirRowLines) {
  start_daemon();
  Client subscriber(daemon_->socket());
  const json sub = subscriber.request({{"type", "subscribe"}});
  ASSERT_EQ(sub.at("type"), "ok");
  const std::uint64_t g0 = sub.at("generation");

  const std::string layernorm = full(kLayernorm, kH100), softmax = full(kSoftmax, kH100);
  const auto archive = write("rows.kda", kdctl::write_archive(
                                             kH100Part, 1700000000,
                                             {serialize_record(row_test_record(layernorm, std::chrono::hours(1))),
                                              serialize_record(row_verdict_record(softmax, std::chrono::hours(1)))}));
  const KdctlRun r = kdctl({"import", archive.string(), "--cache-dir", cache(), "--socket", socket()});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 imported, 0 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("told it; generation " + std::to_string(g0 + 2)), std::string::npos) << r.out;
  std::vector<std::string> published;
  while (published.size() < 2) {
    const auto n = subscriber.receive(std::chrono::seconds(5));
    if (!n) break;
    if (n->at("type") == "published") published.push_back(n->at("key").get<std::string>());
  }
  std::sort(published.begin(), published.end());
  EXPECT_EQ(published, (std::vector<std::string>{layernorm, softmax}));

  const KdctlRun stats = kdctl({"stats", "--json", "--cache-dir", cache(), "--socket", socket()});
  ASSERT_EQ(stats.rc, 0) << stats.err;
  const json c = json::parse(stats.out).at("cache");
  EXPECT_EQ(c.at("damaged_records"), 0);
  EXPECT_EQ(c.at("per_op").at("layernorm").at("records"), 1);
  EXPECT_EQ(c.at("per_op").at("softmax").at("records"), 1);

  const KdctlRun e = kdctl({"evict", "--cache-dir", cache(), "--socket", socket(), "--key-pattern", "layernorm *"});
  ASSERT_EQ(e.rc, 0) << e.out << e.err;
  EXPECT_NE(e.out.find("1 of 2 record(s) evicted"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("told it; generation " + std::to_string(g0 + 3)), std::string::npos) << e.out;
  std::string evicted;
  while (auto n = subscriber.receive(std::chrono::seconds(5))) {
    if (n->at("generation") == g0 + 3) {
      evicted = n->value("key", "");
      break;
    }
  }
  EXPECT_EQ(evicted, layernorm);
}

// A write the daemon was not told about (a kdctl that could not reach it) still reaches the
// subscribers: the daemon reads the generation back every 2 s.
TEST_F(KdctlDaemonControl, AnUntoldWriteIsNoticedWithinSeconds) {
  start_daemon();
  Client subscriber(daemon_->socket());
  const std::uint64_t g0 = subscriber.request({{"type", "subscribe"}}).at("generation");
  const KdctlRun r = kdctl({"import", write("a.kda", archive_of(512, 3)).string(), "--cache-dir", cache(), "--socket",
                            (tmp_.path() / "elsewhere.sock").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto notice = subscriber.receive(std::chrono::seconds(10));
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->at("type"), "published");
  EXPECT_EQ(notice->at("generation"), g0 + 3);
  EXPECT_EQ(Client::status(daemon_->socket()).generation, g0 + 3);
}

// kill -9 of the daemon at a random moment of a prewarm (after its first acknowledged batch), 50
// times: every batch the prewarm saw acknowledged is queued after the restart, and the queue
// reopens whole (no torn record).
TEST_F(KdctlDaemonControl, KillNineDuringPrewarmLosesNoAcknowledgedShape) {
  constexpr int kRounds = 50, kShapes = 36;
  std::mt19937 rng(28);
  std::vector<std::string> acknowledged;
  std::size_t interrupted = 0;
  for (int round = 0; round < kRounds; ++round) {
    start_daemon();
    // Every acknowledged shape of earlier rounds survived the kill.
    if (!acknowledged.empty()) {
      const auto states = states_of(daemon_->socket(), acknowledged);
      ASSERT_EQ(std::count(states.begin(), states.end(), "queued"), static_cast<long>(acknowledged.size()))
          << "round " << round;
    }
    std::vector<std::string> shapes;
    for (int i = 0; i < kShapes; ++i) shapes.push_back(shape(128 + i, 1000 + round));
    std::sort(shapes.begin(), shapes.end());  // the order kdctl sends them in (equal counts)
    TempDir scratch;
    const auto file = scratch.path() / "shapes.txt";
    write_text(file, lines_of(shapes));
    KdctlRun run;
    std::thread prewarm([&] {
      run = run_kdctl(scratch.path(), {"prewarm", file.string(), "--socket", socket(), "--no-wait", "--batch", "3"});
    });
    // The kill lands after a random batch was acknowledged, whatever the machine's speed.
    const std::string after = "queued " + std::to_string(3 * (1 + rng() % (kShapes / 3 - 2))) + "/";
    wait_for_text(scratch.path() / "kdctl.stderr", after);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    ::kill(daemon_->pid(), SIGKILL);
    prewarm.join();
    daemon_.reset();
    const std::size_t queued = run.rc == 0 ? shapes.size() : last_queued(run.err);
    if (run.rc != 0 && queued > 0) ++interrupted;
    if (run.rc != 0) {
      ASSERT_EQ(run.rc, 1) << run.err;
      // Killed while batches were sent, or after the last one, while kdctl asked for the jobs.
      EXPECT_TRUE(run.err.find("not reachable") != std::string::npos ||
                  run.err.find("lost the daemon after queuing") != std::string::npos)
          << run.err;
    }
    acknowledged.insert(acknowledged.end(), shapes.begin(), shapes.begin() + static_cast<std::ptrdiff_t>(queued));
  }
  start_daemon();
  const auto states = states_of(daemon_->socket(), acknowledged);
  EXPECT_EQ(std::count(states.begin(), states.end(), "queued"), static_cast<long>(acknowledged.size()));
  EXPECT_EQ(daemon_->log().find("unreadable"), std::string::npos) << daemon_->log();
  EXPECT_GE(interrupted, 10u) << "too few kills landed inside a prewarm: the test proves little";
  std::printf("prewarms interrupted: %zu of %d; shapes acknowledged: %zu\n", interrupted, kRounds, acknowledged.size());
}

// kill -9 of the daemon at a random moment of an import into its cache (while the import writes,
// and the daemon commits acknowledged misses), 50 times: every record the import reported is
// stored whole, and the restarted daemon reports the cache's generation.
TEST_F(KdctlDaemonControl, KillNineDuringImportTearsNoRecord) {
  constexpr int kRounds = 50, kRecords = 10;  // each record is a transaction of its own
  std::mt19937 rng(2828);
  std::vector<std::string> imported;
  std::size_t untold = 0;  // imports whose daemon was killed before it was told
  for (int round = 0; round < kRounds; ++round) {
    start_daemon();
    // Keep the daemon writing (acknowledged misses) while it is killed.
    std::atomic<bool> stop{false};
    std::thread busy([&] {
      try {
        Client c(daemon_->socket());
        for (int i = 0; !stop; ++i)
          c.request({{"type", "miss"}, {"key", test_key(1 + i % 50)}, {"ack", true}}, std::chrono::seconds(5));
      } catch (const std::exception&) {
      }
    });
    TempDir scratch;
    const int first_m = 100000 + round * kRecords;
    const auto archive = scratch.path() / "a.kda";
    write_text(archive, archive_of(first_m, kRecords));
    KdctlRun run;
    std::thread import([&] {
      run = run_kdctl(scratch.path(), {"import", archive.string(), "--cache-dir", cache(), "--socket", socket()});
    });
    wait_for_text(scratch.path() / "kdctl.stdout", "archive ");
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    ::kill(daemon_->pid(), SIGKILL);
    import.join();
    stop = true;
    busy.join();
    daemon_.reset();
    ASSERT_EQ(run.rc, 0) << run.out << run.err;
    ASSERT_NE(run.out.find(std::to_string(kRecords) + " imported, 0 rejected"), std::string::npos) << run.out;
    if (run.out.find("told it") == std::string::npos) ++untold;
    for (int i = 0; i < kRecords; ++i) imported.push_back(full(bf16_shape(first_m + i), kH100));
  }
  EXPECT_GE(untold, 10u) << "too few kills landed inside an import: the test proves little";
  std::printf("imports that outlived their daemon: %zu of %d\n", untold, kRounds);
  start_daemon();
  const std::uint64_t daemon_generation = Client::status(daemon_->socket()).generation;
  daemon_.reset();
  const CacheWriter cache_writer(cache());
  EXPECT_EQ(daemon_generation, cache_writer.generation());
  for (const auto& key : imported) {
    const auto bytes = cache_writer.get_raw("records", key);
    ASSERT_TRUE(bytes.has_value()) << key;
    const auto record = deserialize_record(*bytes);
    ASSERT_TRUE(std::holds_alternative<Record>(record)) << key;
    EXPECT_EQ(std::get<Record>(record).key_line, key);
  }
}

}  // namespace
}  // namespace kd::test
