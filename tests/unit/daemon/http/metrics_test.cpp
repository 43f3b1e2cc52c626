// The daemon's counters and their Prometheus text exposition (http/metrics.hpp): every counter of
// the table once, label values escaped, the gauges and the client applications' counters, and text
// that a Prometheus scraper accepts (each family's HELP and TYPE once, before its samples).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "http/metrics.hpp"

namespace kd::daemon {
namespace {

constexpr auto kCounterCount = static_cast<std::size_t>(Counter::count_);

// name{labels} -> value, and the families in the order their TYPE lines come.
struct Exposition {
  std::map<std::string, std::string> samples;
  std::map<std::string, std::string> types;
  std::vector<std::string> errors;  // lines a scraper would reject
};

std::string family_of(const std::string& sample_name) {
  return sample_name.substr(0, sample_name.find('{'));
}

Exposition parse(const std::string& text) {
  Exposition e;
  std::set<std::string> helped;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      if (!helped.insert(name).second) e.errors.push_back("HELP twice: " + line);
    } else if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      if (type != "counter" && type != "gauge") e.errors.push_back("type: " + line);
      if (!e.types.emplace(name, type).second) e.errors.push_back("TYPE twice: " + line);
    } else {
      const auto space = line.rfind(' ');
      if (space == std::string::npos) {
        e.errors.push_back("no value: " + line);
        continue;
      }
      const std::string name = line.substr(0, space);
      if (!e.types.contains(family_of(name))) e.errors.push_back("sample before its TYPE: " + line);
      if (!e.samples.emplace(name, line.substr(space + 1)).second) e.errors.push_back("twice: " + line);
    }
  }
  return e;
}

std::string render(const Metrics& m, const Gauges& g = {}, const ClientCounters& c = {}) {
  return prometheus_text(m, g, c);
}

TEST(MetricsText, EveryCounterOfTheTableIsOneCounterFamilyWithItsValue) {
  Metrics m;
  std::set<std::string> names;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    const auto c = static_cast<Counter>(i);
    m.add(c, 100 + i);
    const std::string name(counter_name(c));
    EXPECT_FALSE(name.empty()) << "counter " << i;
    EXPECT_TRUE(names.insert(name).second) << "counter name used twice: " << name;
  }
  m.add(Counter::frames_received);  // add() accumulates

  const Exposition e = parse(render(m));
  EXPECT_TRUE(e.errors.empty()) << e.errors.front();
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    const auto c = static_cast<Counter>(i);
    const std::string family = "kdispatch_" + std::string(counter_name(c)) + "_total";
    EXPECT_EQ(e.types.at(family), "counter") << family;
    const std::uint64_t expected = 100 + i + (c == Counter::frames_received ? 1 : 0);
    EXPECT_EQ(e.samples.at(family), std::to_string(expected)) << family;
    EXPECT_EQ(m.get(c), expected);
  }
}

TEST(MetricsText, RejectedCandidatesAreCountedByReasonWithEscapedLabels) {
  Metrics m;
  m.add_rejected("wrong_result");
  m.add_rejected("wrong_result", 2);
  m.add_rejected("odd \"reason\"\\with\nnewline");
  EXPECT_EQ(m.rejected().at("wrong_result"), 3u);

  const Exposition e = parse(render(m));
  EXPECT_TRUE(e.errors.empty()) << e.errors.front();
  EXPECT_EQ(e.types.at("kdispatch_candidates_rejected_total"), "counter");
  EXPECT_EQ(e.samples.at(R"(kdispatch_candidates_rejected_total{reason="wrong_result"})"), "3");
  EXPECT_EQ(e.samples.at(R"(kdispatch_candidates_rejected_total{reason="odd \"reason\"\\with\nnewline"})"), "1");
}

TEST(MetricsText, GaugesReportTheQueueClientsCacheAndBounds) {
  Gauges g;
  for (std::size_t s = 0; s < kJobStateCount; ++s) g.jobs.by_state[s] = 10 * (s + 1);
  g.clients_connected = 7;
  g.subscribers = 3;
  g.generation = 42;
  g.search_backend = true;
  g.bounds.records_evicted = 5;
  g.bounds.jobs_purged = 6;
  g.bounds.jobs_dropped = 8;
  g.cache_bytes = 1 << 20;

  const Exposition e = parse(render(Metrics{}, g));
  EXPECT_TRUE(e.errors.empty()) << e.errors.front();
  EXPECT_EQ(e.samples.at("kdispatch_queue_depth"),
            std::to_string(g.jobs.of(JobState::queued)));
  for (std::size_t s = 0; s < kJobStateCount; ++s) {
    const std::string sample =
        "kdispatch_jobs{state=\"" + std::string(to_string(static_cast<JobState>(s))) + "\"}";
    EXPECT_EQ(e.samples.at(sample), std::to_string(10 * (s + 1))) << sample;
  }
  EXPECT_EQ(e.types.at("kdispatch_jobs"), "gauge");
  EXPECT_EQ(e.samples.at("kdispatch_clients_connected"), "7");
  EXPECT_EQ(e.samples.at("kdispatch_subscribers"), "3");
  EXPECT_EQ(e.samples.at("kdispatch_cache_generation"), "42");
  EXPECT_EQ(e.samples.at("kdispatch_search_backend_available"), "1");
  EXPECT_EQ(e.samples.at("kdispatch_cache_bytes"), "1048576");
  EXPECT_EQ(e.samples.at("kdispatch_records_evicted_total"), "5");
  EXPECT_EQ(e.samples.at("kdispatch_jobs_purged_total"), "6");
  EXPECT_EQ(e.samples.at("kdispatch_jobs_dropped_total"), "8");
  EXPECT_EQ(e.types.at("kdispatch_records_evicted_total"), "counter");

  g.search_backend = false;
  EXPECT_EQ(parse(render(Metrics{}, g)).samples.at("kdispatch_search_backend_available"), "0");
}

TEST(MetricsText, ClientApplicationsCountersAndFallbacksByReason) {
  ClientCounters c;
  c.totals.hits = 11;
  c.totals.misses = 12;
  c.totals.loads = 13;
  c.totals.swaps = 14;
  c.totals.fallbacks = {{"no_record", 4}, {"a\"b", 1}};
  c.processes_live = 2;

  const Exposition e = parse(render(Metrics{}, Gauges{}, c));
  EXPECT_TRUE(e.errors.empty()) << e.errors.front();
  EXPECT_EQ(e.samples.at("kdispatch_app_hits_total"), "11");
  EXPECT_EQ(e.samples.at("kdispatch_app_misses_total"), "12");
  EXPECT_EQ(e.samples.at("kdispatch_app_loads_total"), "13");
  EXPECT_EQ(e.samples.at("kdispatch_app_swaps_total"), "14");
  EXPECT_EQ(e.samples.at(R"(kdispatch_app_fallbacks_total{reason="no_record"})"), "4");
  EXPECT_EQ(e.samples.at(R"(kdispatch_app_fallbacks_total{reason="a\"b"})"), "1");
  EXPECT_EQ(e.samples.at("kdispatch_app_processes_reporting"), "2");
  EXPECT_EQ(e.types.at("kdispatch_app_processes_reporting"), "gauge");
}

}  // namespace
}  // namespace kd::daemon
