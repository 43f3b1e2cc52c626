// The daemon's book of client counters: differences between cumulative reports, instances that
// reuse a pid, counters that go down, final reports, zeroing, the bounds, and persistence.
#include <gtest/gtest.h>

#include "stats/client_stats.hpp"

namespace kd::daemon {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000;

protocol::ClientStats report(std::string instance, std::uint64_t hits, std::uint64_t no_entry,
                             std::int64_t pid = 100) {
  protocol::ClientStats r;
  r.pid = pid;
  r.program = "server";
  r.instance = std::move(instance);
  r.hits = hits;
  r.misses = no_entry;
  if (no_entry > 0) r.fallbacks["no_entry"] = no_entry;
  return r;
}

TEST(ClientStatsBook, CumulativeReportsCountTheirDifference) {
  ClientStatsBook book(kT0);
  EXPECT_EQ(book.record(report("a", 10, 2), 1, kT0), ClientStatsBook::Outcome::counted);
  EXPECT_EQ(book.record(report("a", 10, 2), 1, kT0 + 1), ClientStatsBook::Outcome::counted);  // repeated
  EXPECT_EQ(book.record(report("a", 15, 3), 1, kT0 + 2), ClientStatsBook::Outcome::counted);
  const CallCounters t = book.totals();
  EXPECT_EQ(t.hits, 15u);
  EXPECT_EQ(t.misses, 3u);
  EXPECT_EQ(t.fallbacks.at("no_entry"), 3u);
  EXPECT_EQ(t.fallbacks_total(), 3u);
  EXPECT_EQ(t.wire().calls, 18u);
  EXPECT_EQ(book.live(), 1u);
  const protocol::ClientsReport r = book.report();
  EXPECT_EQ(r.processes_seen, 1u);
  ASSERT_EQ(r.live.size(), 1u);
  EXPECT_EQ(r.live[0].counters.hits, 15u);
  EXPECT_EQ(r.live[0].program, "server");
}

TEST(ClientStatsBook, ANewProcessWithTheSamePidCountsFromZeroAndExitedOnesStay) {
  ClientStatsBook book(kT0);
  book.record(report("first", 7, 1, 42), 1, kT0);
  book.disconnected("first", 1, kT0 + 10);
  EXPECT_EQ(book.live(), 0u);
  book.record(report("second", 3, 0, 42), 2, kT0 + 20);  // the kernel reused pid 42
  EXPECT_EQ(book.totals().hits, 10u);
  EXPECT_EQ(book.report().processes_seen, 2u);
  EXPECT_EQ(book.live(), 1u);
}

TEST(ClientStatsBook, AReconnectingInstanceCountsNothingTwice) {
  ClientStatsBook book(kT0);
  book.record(report("a", 5, 0), 1, kT0);
  book.disconnected("a", 1, kT0 + 1);
  book.record(report("a", 6, 0), 2, kT0 + 2);  // re-sent after reconnecting, one more hit
  EXPECT_EQ(book.totals().hits, 6u);
  book.disconnected("a", 1, kT0 + 3);  // the old connection's late close does not unbind the new one
  EXPECT_EQ(book.live(), 1u);
}

TEST(ClientStatsBook, CountersThatGoDownAreRejected) {
  ClientStatsBook book(kT0);
  book.record(report("a", 5, 4), 1, kT0);
  EXPECT_EQ(book.record(report("a", 4, 4), 1, kT0), ClientStatsBook::Outcome::counters_went_down);
  EXPECT_EQ(book.record(report("a", 6, 0), 1, kT0), ClientStatsBook::Outcome::counters_went_down);
  EXPECT_EQ(book.totals().hits, 5u);
  EXPECT_EQ(book.totals().fallbacks.at("no_entry"), 4u);
}

TEST(ClientStatsBook, AFinalReportCountsAndForgetsTheInstance) {
  ClientStatsBook book(kT0);
  book.record(report("a", 5, 0), 1, kT0);
  auto last = report("a", 8, 1);
  last.final = true;
  book.record(last, 1, kT0 + 1);
  EXPECT_EQ(book.totals().hits, 8u);
  EXPECT_EQ(book.live(), 0u);
  EXPECT_EQ(book.serialize().first.find("\"a\""), std::string::npos);  // no baseline kept
}

TEST(ClientStatsBook, ZeroStartsTheTotalsOverButKeepsBaselines) {
  ClientStatsBook book(kT0);
  book.record(report("a", 5, 1), 1, kT0);
  book.zero(kT0 + 100);
  EXPECT_EQ(book.totals(), CallCounters{});
  EXPECT_EQ(book.report().since_unix_ms, kT0 + 100);
  book.record(report("a", 7, 1), 1, kT0 + 200);
  EXPECT_EQ(book.totals().hits, 2u);  // only what happened after the zero
  EXPECT_EQ(book.totals().misses, 0u);
}

TEST(ClientStatsBook, TotalsNameABoundedNumberOfReasons) {
  ClientStatsBook book(kT0);
  for (std::size_t i = 0; i < ClientStatsBook::kMaxTotalReasons + 10; ++i) {
    protocol::ClientStats r = report("i" + std::to_string(i), 0, 0);
    r.fallbacks["reason_" + std::to_string(i)] = 1;
    r.final = true;
    book.record(r, i + 1, kT0);
  }
  const CallCounters t = book.totals();
  EXPECT_EQ(t.fallbacks.size(), ClientStatsBook::kMaxTotalReasons + 1);
  EXPECT_EQ(t.fallbacks.at("other"), 10u);
  EXPECT_EQ(t.fallbacks_total(), ClientStatsBook::kMaxTotalReasons + 10);
}

TEST(ClientStatsBook, TheLiveListShowsTheBusiestProcessesUpToTheLimit) {
  ClientStatsBook book(kT0);
  const std::size_t n = ClientStatsBook::kMaxLiveListed + 5;
  for (std::size_t i = 0; i < n; ++i)
    book.record(report("p" + std::to_string(i), i, 0, static_cast<std::int64_t>(i)), i + 1, kT0);
  const protocol::ClientsReport r = book.report();
  EXPECT_EQ(r.processes_live, n);
  ASSERT_EQ(r.live.size(), ClientStatsBook::kMaxLiveListed);
  EXPECT_EQ(r.live[0].pid, 5);  // the five quietest are left out; the rest by pid
  EXPECT_EQ(r.live.back().pid, static_cast<std::int64_t>(n - 1));
}

TEST(ClientStatsBook, DisconnectedInstancesAreKeptForALimitedTimeAndNumber) {
  ClientStatsBook book(kT0);
  for (std::size_t i = 0; i < ClientStatsBook::kMaxGone + 5; ++i) {
    book.record(report("g" + std::to_string(i), 1, 0), i + 1, kT0);
    book.disconnected("g" + std::to_string(i), i + 1, kT0 + static_cast<std::int64_t>(i));
  }
  // The oldest five were dropped: their re-sent reports count again, the newest ones do not.
  book.record(report("g0", 1, 0), 9000, kT0 + 10'000);
  book.record(report("g1000", 1, 0), 9001, kT0 + 10'000);
  EXPECT_EQ(book.totals().hits, ClientStatsBook::kMaxGone + 5 + 1);

  const std::int64_t after_retention =
      kT0 + std::chrono::duration_cast<std::chrono::milliseconds>(ClientStatsBook::kGoneRetention).count() + 20'000;
  book.disconnected("g0", 9000, after_retention);
  EXPECT_EQ(book.serialize().first.find("\"g5\""), std::string::npos) << "expired instance kept";
}

TEST(ClientStatsBook, PersistsTotalsAndBaselines) {
  ClientStatsBook book(kT0);
  book.record(report("a", 5, 2), 1, kT0);
  book.record(report("b", 1, 0), 2, kT0);
  EXPECT_TRUE(book.dirty());
  const auto [text, change] = book.serialize();
  book.saved(change);
  EXPECT_FALSE(book.dirty());

  ClientStatsBook restarted(kT0 + 1000);
  ASSERT_FALSE(restarted.restore(text, kT0 + 1000).has_value());
  EXPECT_FALSE(restarted.dirty());
  EXPECT_EQ(restarted.totals(), book.totals());
  EXPECT_EQ(restarted.live(), 0u);  // nobody is connected to the new daemon yet
  EXPECT_EQ(restarted.report().since_unix_ms, kT0);
  restarted.record(report("a", 6, 2), 7, kT0 + 2000);  // a re-sends its cumulative counters
  EXPECT_EQ(restarted.totals().hits, 7u);
  EXPECT_EQ(restarted.totals().misses, 2u);
}

TEST(ClientStatsBook, UnreadablePersistedStateIsReportedAndIgnored) {
  ClientStatsBook book(kT0);
  book.record(report("a", 5, 0), 1, kT0);
  for (const char* bad : {"not json", "[]", R"({"format":2})",
                          R"({"format":1,"since_unix_ms":1,"processes_seen":1,"totals":{"hits":-1}})",
                          R"({"format":1,"since_unix_ms":1,"processes_seen":1,)"
                          R"("totals":{"hits":1,"misses":0,"loads":0,"swaps":0,"fallbacks":{}},"instances":[{"pid":1}]})"}) {
    const auto problem = book.restore(bad, kT0);
    EXPECT_TRUE(problem.has_value()) << bad;
    EXPECT_EQ(book.totals().hits, 5u) << bad;
  }
}

}  // namespace
}  // namespace kd::daemon
