// client_stats on the real kdispatchd: hello_ok announces it; reports are aggregated per live
// process and in totals (exited processes included), exposed in stats, status and /metrics;
// malformed reports drop the client and are counted; totals survive a restart without counting a
// re-sent report twice; zero_stats starts them over.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "common/error.hpp"
#include "daemon_process.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using daemon::Client;
using nlohmann::json;
using test::DaemonProcess;

json report(const std::string& instance, std::uint64_t hits, std::uint64_t no_entry, int pid = 4242) {
  return {{"type", "client_stats"}, {"pid", pid},   {"program", "model-server"}, {"instance", instance},
          {"hits", hits},           {"misses", no_entry}, {"fallbacks", {{"no_entry", no_entry}, {"misaligned", 1}}},
          {"loads", 2},             {"swaps", 1}};
}

json clients_of(const std::filesystem::path& socket) { return Client::stats(socket).clients.value(); }

// Reports are fire-and-forget: a status request on the same connection answers after they were
// handled (replies come in request order, and the io thread handles frames in order).
void sync(Client& c) { ASSERT_EQ(c.request({{"type", "status"}}).at("type"), "status"); }

using test::eventually;

TEST(DaemonClientStats, AggregatesLiveAndExitedProcesses) {
  test::TempDir dir;
  DaemonProcess d(dir.path());
  {
    Client probe(d.socket());
    const json hello = probe.request({{"type", "hello"}, {"pid", 1}, {"client", "test"}});
    ASSERT_EQ(hello.at("features"), json::array({"client_stats", "usage"}));
  }
  auto a = std::make_unique<Client>(d.socket());
  Client b(d.socket());
  a->send(report("aaaa", 10, 3));
  a->send(report("aaaa", 12, 4));  // cumulative: +2 hits, +1 no_entry
  b.send(report("bbbb", 5, 0, 77));
  sync(*a);
  sync(b);

  json c = clients_of(d.socket());
  EXPECT_EQ(c.at("processes_live"), 2);
  EXPECT_EQ(c.at("processes_seen"), 2);
  EXPECT_EQ(c.at("totals").at("hits"), 17);
  EXPECT_EQ(c.at("totals").at("misses"), 4);
  EXPECT_EQ(c.at("totals").at("fallbacks").at("no_entry"), 4);
  EXPECT_EQ(c.at("totals").at("fallbacks").at("misaligned"), 2);
  EXPECT_EQ(c.at("totals").at("calls"), 17 + 4 + 2);
  EXPECT_EQ(c.at("totals").at("loads"), 4);
  ASSERT_EQ(c.at("live").size(), 2u);
  EXPECT_EQ(c.at("live")[0].at("pid"), 77);  // sorted by pid
  EXPECT_EQ(c.at("live")[1].at("hits"), 12);
  EXPECT_EQ(c.at("live")[1].at("program"), "model-server");

  a.reset();  // the process exits without a final report: its counts stay in the totals
  ASSERT_TRUE(eventually([&] { return clients_of(d.socket()).at("processes_live") == 1; }));
  c = clients_of(d.socket());
  EXPECT_EQ(c.at("totals").at("hits"), 17);

  const protocol::Status status = Client::status(d.socket());
  EXPECT_EQ(status.clients_reporting, 1u);
  EXPECT_EQ(status.client_totals.value().hits, 17u);
  const std::string metrics = test::http_get(d.metrics_port(), "/metrics");
  EXPECT_NE(metrics.find("kdispatch_app_hits_total 17\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kdispatch_app_misses_total 4\n"), std::string::npos);
  EXPECT_NE(metrics.find("kdispatch_app_fallbacks_total{reason=\"no_entry\"} 4\n"), std::string::npos);
  EXPECT_NE(metrics.find("kdispatch_app_processes_reporting 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("kdispatch_client_stats_received_total 3\n"), std::string::npos);
}

TEST(DaemonClientStats, MalformedReportsDropTheClientAndAreCounted) {
  test::TempDir dir;
  DaemonProcess d(dir.path());
  // A well-formed report with one field replaced (a null value removes the field).
  const auto with = [](const char* field, json value) {
    json m = report("i", 1, 0);
    if (value.is_null()) m.erase(field);
    else m[field] = std::move(value);
    return m;
  };
  const std::vector<json> bad = {
      with("fallbacks", nullptr),
      with("pid", -1),
      with("hits", "many"),
      with("instance", "../../etc"),
      with("program", std::string(300, 'p')),
      with("program", "a\nb"),
      with("fallbacks", {{"NO ENTRY", 1}}),
      with("fallbacks", {{"no_entry", -5}}),
      with("fallbacks", json::array()),
  };
  for (const json& m : bad) {
    Client c(d.socket());
    c.send(m);
    const auto reply = c.receive(std::chrono::seconds(5));
    ASSERT_TRUE(reply.has_value()) << m.dump();
    EXPECT_EQ(reply->at("type"), "error") << m.dump();
    EXPECT_FALSE(c.receive(std::chrono::seconds(5)).has_value()) << "not closed after " << m.dump();
  }
  {
    // One connection reports for one instance.
    Client c(d.socket());
    c.send(report("first", 1, 0));
    c.send(report("second", 1, 0));
    const auto reply = c.receive(std::chrono::seconds(5));
    ASSERT_TRUE(reply.has_value());
    EXPECT_NE(reply->at("message").get<std::string>().find("'first'"), std::string::npos) << *reply;
  }
  {
    // Counters that go down are ignored and counted, not fatal.
    Client c(d.socket());
    c.send(report("down", 10, 0));
    c.send(report("down", 9, 0));
    sync(c);
  }
  const protocol::Stats s = Client::stats(d.socket());
  EXPECT_EQ(s.counters.at("protocol_errors"), bad.size() + 1);
  EXPECT_EQ(s.counters.at("client_stats_rejected"), 1u);
  EXPECT_EQ(s.clients.value().totals.hits, 1u + 10);  // "first" and "down" only
  EXPECT_TRUE(d.running());
}

TEST(DaemonClientStats, TotalsSurviveARestartAndZeroStartsThemOver) {
  test::TempDir dir;
  auto d = std::make_unique<DaemonProcess>(dir.path());
  {
    Client c(d->socket());
    c.send(report("long-lived", 10, 2));
    sync(c);
    Client e(d->socket());
    json last = report("short-lived", 3, 0);
    last["final"] = true;  // an exiting process: nothing of it is kept but its counts
    e.send(last);
    sync(e);
  }
  ASSERT_TRUE(WIFEXITED(d->stop(SIGTERM)));
  d = std::make_unique<DaemonProcess>(dir.path());
  json c = clients_of(d->socket());
  EXPECT_EQ(c.at("totals").at("hits"), 13);
  EXPECT_EQ(c.at("processes_live"), 0);
  {
    // The long-lived process reconnects and re-sends its cumulative counters: one new hit.
    Client again(d->socket());
    again.send(report("long-lived", 11, 2));
    sync(again);
    EXPECT_EQ(clients_of(d->socket()).at("totals").at("hits"), 14);

    const json zeroed = Client(d->socket()).request({{"type", "zero_stats"}});
    EXPECT_EQ(zeroed.at("type"), "ok");
    EXPECT_EQ(zeroed.at("zeroed"), true);
    again.send(report("long-lived", 15, 2));
    sync(again);
    c = clients_of(d->socket());
    EXPECT_EQ(c.at("totals").at("hits"), 4);  // what happened after the zero
    EXPECT_EQ(c.at("totals").at("misses"), 0);
  }
  // The zero was committed: a kill -9 right after it does not bring the old totals back.
  d->stop(SIGKILL);
  d = std::make_unique<DaemonProcess>(dir.path());
  const auto hits = clients_of(d->socket()).at("totals").at("hits").get<std::uint64_t>();
  EXPECT_TRUE(hits == 0 || hits == 4) << hits << " (0: the zero's commit; 4: a periodic save after it)";
}

}  // namespace
}  // namespace kd
