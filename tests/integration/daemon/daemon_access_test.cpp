// The real kdispatchd: its exit codes (common/exit_code.hpp), admission of socket peers by group
// (allowed_group: primary or supplementary, SO_PEERGROUPS) and what the HTTP endpoint tells every
// local user.
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include "ctl_client/ctl_client.hpp"
#include "common/error.hpp"
#include "daemon_process.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using daemon::Client;
using nlohmann::json;
using test::DaemonProcess;

TEST(DaemonExitCodes, UnknownFlagIsAUsageErrorAndHelpListsTheCodes) {
  const auto bogus = test::run_daemon_command({"--bogus"});
  EXPECT_EQ(bogus.exit_code, 2) << bogus.output;
  EXPECT_NE(bogus.output.find("--bogus"), std::string::npos) << bogus.output;

  const auto help = test::run_daemon_command({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("Exit codes:\n  0  success\n  1  "), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("  2  usage error"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--allowed-group"), std::string::npos) << help.output;
}

TEST(DaemonExitCodes, ABadConfigurationIsAUsageError) {
  test::TempDir dir;
  const auto file = dir.path() / "kd.toml";
  std::ofstream(file) << "socket_mode = \"0660\"\nallowed_group = \"no-such-group-kd\"\n";
  const auto r = test::run_daemon_command({"--config", file.string(), "--print-config"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no group named 'no-such-group-kd'"), std::string::npos) << r.output;
  const auto value = test::run_daemon_command({"--config", "/dev/null", "--budget-rounds", "many"});
  EXPECT_EQ(value.exit_code, 2) << value.output;
  EXPECT_NE(value.output.find("budget_rounds"), std::string::npos) << value.output;
}

// GET /status answers any local user: counts, but no paths and no keys.
TEST(DaemonHttp, StatusShowsCountsButNoPathsOrKeys) {
  test::HiddenGpus no_gpu;  // the job stays queued
  test::TempDir dir;
  DaemonProcess d(dir.path());
  const std::string key = test::test_key(7);
  Client c(d.socket());
  ASSERT_EQ(c.request({{"type", "miss"}, {"key", key}, {"ack", true}}).at("type"), "ok");
  const std::string socket_status = protocol::to_payload(Client::status(d.socket(), 5));
  ASSERT_NE(socket_status.find(d.cache_dir().string()), std::string::npos);  // socket clients see all

  const std::string text = test::http_get(d.metrics_port(), "/status");
  const json status = json::parse(text);
  EXPECT_EQ(status.at("queue_depth"), 1);
  EXPECT_EQ(status.at("jobs").at("queued"), 1);
  EXPECT_FALSE(status.at("search_backend").at("available").get<bool>());
  for (const std::string& secret : {d.cache_dir().string(), d.socket().string(), dir.path().string(),
                                    std::string("n=7 "), std::string("NVIDIA")})
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << text;
  for (const char* field : {"cache_dir", "socket", "running", "runners", "top_jobs"})
    EXPECT_FALSE(status.contains(field)) << field;
  const std::string metrics = test::http_get(d.metrics_port(), "/metrics");
  for (const std::string& secret : {d.cache_dir().string(), std::string("n=7 ")})
    EXPECT_EQ(metrics.find(secret), std::string::npos) << secret;
}

// A child process with the given credentials asks for the status; returns "status", "refused"
// (an error frame naming the uid) or what went wrong.
std::string status_as(const std::filesystem::path& socket, uid_t uid, gid_t gid,
                      std::vector<gid_t> groups) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    const auto answer = [&](const std::string& text) {
      (void)!::write(pipe_fds[1], text.data(), text.size());
      _exit(0);
    };
    if (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)
      answer("cannot take the identity");
    try {
      Client c(socket);
      try {
        c.send({{"type", "status"}});
      } catch (const Error&) {
        // a refusal may close the socket before the request is written; the error frame waits
      }
      const auto reply = c.receive(std::chrono::seconds(5));
      if (!reply) answer("no reply");
      if (reply->at("type") == "status") answer("status");
      const std::string message = reply->value("message", "");
      answer(message.find("uid " + std::to_string(uid) + " is not allowed") != std::string::npos
                 ? "refused"
                 : "error: " + message);
    } catch (const std::exception& e) {
      answer(std::string("cannot connect: ") + e.what());
    }
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, n);
  ::close(pipe_fds[0]);
  ::waitpid(child, nullptr, 0);
  return out;
}

TEST(DaemonPeers, MembersOfTheAllowedGroupAreAdmittedByPrimaryOrSupplementaryGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run clients under other uids and groups";
  test::TempDir dir;
  const auto reachable = [&](const char* name) {  // by every user, as the socket's directory
    const auto path = dir.path() / name;
    std::filesystem::create_directories(path);
    ::chmod(dir.path().c_str(), 0755);
    ::chmod(path.c_str(), 0755);
    return path;
  };
  // Mode 0666 lets every user connect, so what is tested is the daemon's own admission.
  DaemonProcess open(reachable("open"), {"--socket-mode", "0666", "--allowed-group", "4242"});
  EXPECT_EQ(status_as(open.socket(), 4444, 4343, {4242}), "status");  // supplementary
  EXPECT_EQ(status_as(open.socket(), 4444, 4242, {}), "status");      // primary
  EXPECT_EQ(status_as(open.socket(), 4444, 4343, {4343, 4244}), "refused");

  // The deployed shape: mode 0660, the socket file given to the group; outsiders cannot connect.
  DaemonProcess shared(reachable("shared"), {"--socket-mode", "0660", "--allowed-group", "4242"});
  struct stat st {};
  ASSERT_EQ(::stat(shared.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, 4242u);
  EXPECT_EQ(status_as(shared.socket(), 4444, 4343, {4242}), "status");
  EXPECT_EQ(status_as(shared.socket(), 4444, 4343, {4343}).rfind("cannot connect", 0), 0u);
  // The cache the daemon opened is the group's to read.
  ASSERT_EQ(::stat((shared.cache_dir() / "lock.mdb").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4242u);
  EXPECT_EQ(st.st_mode & 0070, 0060u);
}

}  // namespace
}  // namespace kd
