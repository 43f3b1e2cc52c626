// kdctl stats: what the cache holds (records per GPU, sizes, trees, jobs by state).
// The daemon's client counters (hits, misses, fallbacks) are not part of this file yet: they need
// the daemon client's stats request wired in as a second section.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/client.hpp"
#include "protocol/messages.hpp"

#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "kdctl.hpp"
#include "table.hpp"

namespace kd::kdctl {
namespace {

struct StatsArgs {
  std::string cache_dir;
  bool json = false;
};

struct GpuCount {
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
};

struct CacheStats {
  std::string dir;
  std::uint64_t generation = 0;
  std::uint64_t data_file_bytes = 0;
  std::uint64_t records = 0;
  std::uint64_t record_bytes = 0;
  std::uint64_t damaged = 0;
  std::map<std::string, GpuCount> per_gpu;  // "arch gpu sms" -> counts
  std::uint64_t trees = 0;
  std::uint64_t jobs = 0;
  std::map<std::string, std::uint64_t> jobs_by_state;  // the job's "state" field; "unreadable"
};

CacheStats collect(const CacheSnapshot& cache) {
  CacheStats s;
  s.dir = cache.dir().string();
  s.generation = cache.generation();
  s.data_file_bytes = cache.data_file_bytes();
  for (const StoredRecord& r : cache.records()) {
    ++s.records;
    s.record_bytes += r.stored_bytes;
    const auto parts = split_key(r.key_line);
    if (!std::holds_alternative<Record>(r.record) || !parts) {
      ++s.damaged;
      continue;
    }
    const DevicePart& d = *parts->key.device;
    GpuCount& g = s.per_gpu[fmt::format("{} ({}, {} SMs)", d.gpu, d.arch, d.sms)];
    ++g.records;
    g.bytes += r.stored_bytes;
  }
  cache.for_each_raw("trees", [&](std::string_view, std::string_view) { ++s.trees; });
  cache.for_each_raw("jobs", [&](std::string_view, std::string_view value) {
    ++s.jobs;
    const auto j = nlohmann::json::parse(value, nullptr, false);
    const bool named = !j.is_discarded() && j.is_object() && j.contains("state") && j["state"].is_string();
    ++s.jobs_by_state[named ? j["state"].get<std::string>() : "unreadable"];
  });
  return s;
}

nlohmann::json to_json(const CacheStats& s) {
  nlohmann::json gpus = nlohmann::json::object();
  for (const auto& [name, g] : s.per_gpu) gpus[name] = {{"records", g.records}, {"bytes", g.bytes}};
  return {{"cache",
           {{"dir", s.dir}, {"generation", s.generation}, {"data_file_bytes", s.data_file_bytes},
            {"records", s.records}, {"record_bytes", s.record_bytes}, {"damaged_records", s.damaged},
            {"per_gpu", gpus}, {"trees", s.trees}, {"jobs", s.jobs},
            {"jobs_by_state", s.jobs_by_state}}}};
}

void print(const CacheStats& s) {
  std::printf("cache %s (generation %llu)\n", s.dir.c_str(),
              static_cast<unsigned long long>(s.generation));
  std::printf("  data.mdb %s; %llu record(s), %s serialized; %llu damaged\n",
              format_bytes(s.data_file_bytes).c_str(), static_cast<unsigned long long>(s.records),
              format_bytes(s.record_bytes).c_str(), static_cast<unsigned long long>(s.damaged));
  std::printf("  %llu search tree(s), %llu job(s)\n", static_cast<unsigned long long>(s.trees),
              static_cast<unsigned long long>(s.jobs));
  for (const auto& [state, n] : s.jobs_by_state) {
    std::printf("    %s: %llu\n", state.c_str(), static_cast<unsigned long long>(n));
  }
  if (s.per_gpu.empty()) return;
  Table table({{"GPU"}, {"RECORDS", Align::right}, {"BYTES", Align::right}});
  for (const auto& [name, g] : s.per_gpu) {
    table.add({name, std::to_string(g.records), format_bytes(g.bytes)});
  }
  std::printf("\n%s", table.render().c_str());
}

// The daemon's counters (client misses and hits reported to it, candidates, winners), when a
// daemon serves this cache; nullopt otherwise.
std::optional<nlohmann::json> daemon_stats(const std::filesystem::path& cache_dir) {
  try {
    return daemon::Client::stats(protocol::daemon_socket_path(cache_dir));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int run_stats(const StatsArgs& a) {
  const std::filesystem::path dir = resolve_cache_dir(a.cache_dir);
  const CacheSnapshot cache(dir);
  const CacheStats s = collect(cache);
  const auto d = daemon_stats(dir);
  if (a.json) {
    nlohmann::json j = to_json(s);
    j["daemon"] = d ? *d : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print(s);
    if (d) {
      std::printf("\ndaemon counters:\n");
      const auto counters = d->find("counters");
      if (counters != d->end() && counters->is_object())
        for (auto it = counters->begin(); it != counters->end(); ++it)
          std::printf("  %-32s %s\n", it.key().c_str(), it.value().dump().c_str());
    } else {
      std::printf("\ndaemon: not reachable on %s (client counters live there; KD_STATS=1 prints a "
                  "process's own at exit)\n", protocol::daemon_socket_path(dir).c_str());
    }
  }
  return kOk;
}

}  // namespace

void setup_stats(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<StatsArgs>();
  sub.add_option("--cache-dir", a->cache_dir, "Cache directory (default: KD_CACHE_DIR, else ~/.cache/kdispatch)");
  sub.add_flag("--json", a->json, "Print JSON");
  sub.footer("Exit codes: 0 ok, 1 no cache or unreadable cache, 2 usage.\n");
  sub.callback([a, &action] { action = [a] { return run_stats(*a); }; });
}

}  // namespace kd::kdctl
