// Signals of the real kdispatchd: SIGHUP reloads what may change while running and never stops the
// daemon (issue 28); SIGTERM is a clean stop.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using daemon::Client;
using nlohmann::json;
using test::DaemonProcess;

using test::eventually;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DaemonSignals, SighupReloadsTheReloadableKeysAndKeepsServing) {
  test::TempDir dir;
  DaemonProcess d(dir.path(), {}, "max_clients = 1024\nworkers = \"none\"\n");
  Client first(d.socket());
  ASSERT_EQ(first.request({{"type", "miss"}, {"key", test::test_key(1)}, {"ack", true}}).at("type"), "ok");

  // max_clients is reloadable; socket_mode is not (the socket is bound already).
  std::ofstream(dir.path() / "kdispatchd.toml") << "max_clients = 2\nworkers = \"none\"\nsocket_mode = \"0660\"\n"
                                                   "budget_rounds = 3\nsearch_duty_cycle = 0.3\n";
  ::kill(d.pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] { return d.log().find("SIGHUP: configuration reloaded") != std::string::npos; }))
      << d.log();
  ASSERT_TRUE(d.running()) << d.log();
  const std::string log = d.log();
  EXPECT_NE(log.find("max_clients = '2'"), std::string::npos) << log;
  EXPECT_NE(log.find("budget_rounds = '3'"), std::string::npos) << log;
  EXPECT_NE(log.find("applied only at a restart: socket_mode"), std::string::npos) << log;

  // The first connection stays; a second is served; a third is over the new limit.
  Client second(d.socket());
  EXPECT_EQ(second.request({{"type", "status"}}).at("type"), "status");
  Client third(d.socket());
  const auto refused = third.receive(std::chrono::seconds(5));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->at("type"), "error");
  EXPECT_NE(refused->at("message").get<std::string>().find("max_clients = 2"), std::string::npos);
  const auto reloaded = first.request({{"type", "status"}});
  EXPECT_EQ(reloaded.at("jobs").at("queued"), 1);
  EXPECT_DOUBLE_EQ(reloaded.at("search_policy").at("search_duty_cycle").get<double>(), 0.3) << "the GPU policy reloaded";

  // A configuration that does not load is logged and ignored.
  std::ofstream(dir.path() / "kdispatchd.toml") << "max_clients = \"many\"\n";
  ::kill(d.pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] { return d.log().find("the configuration was not reloaded") != std::string::npos; }))
      << d.log();
  EXPECT_NE(d.log().find("max_clients"), std::string::npos);
  EXPECT_EQ(first.request({{"type", "status"}}).at("type"), "status");

  // Many hangups in a row change nothing either.
  const std::size_t before = count_of(d.log(), "SIGHUP:");
  for (int i = 0; i < 20; ++i) ::kill(d.pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] { return count_of(d.log(), "SIGHUP:") > before; }));
  EXPECT_TRUE(d.running());
  EXPECT_EQ(first.request({{"type", "status"}}).at("type"), "status");

  const int status = d.stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << d.log();
  EXPECT_FALSE(std::filesystem::exists(d.socket()));
}

}  // namespace
}  // namespace kd
