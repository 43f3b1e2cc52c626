// kdctl stats: what the cache holds (records per GPU and per operator, sizes, trees, jobs by
// state), the client
// applications' call counters (hits, misses, fallbacks by reason, loads, swaps; totals and each
// live process) that kdispatchd collects, and the daemon's own counters.
// kdctl stats --zero: kdispatchd starts the client counter totals over.
#include <time.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ctl_client/ctl_client.hpp"
#include "protocol/messages.hpp"

#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "table.hpp"

namespace kd::kdctl {
namespace {

struct StatsArgs {
  std::string cache_dir;
  std::string socket;  // empty: the default socket path
  bool json = false;
  bool zero = false;
};

struct RecordCount {
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
  std::map<std::string, RecordCount> per_gpu;  // "gpu (arch, sms SMs)" -> counts
  std::map<std::string, RecordCount> per_op;   // the key's first token: "gemm", "layernorm", ... -> counts
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
    const auto parts = split_op_key(r.key_line);  // any operator's key (issue 33)
    if (!std::holds_alternative<Record>(r.record) || !parts) {
      ++s.damaged;
      continue;
    }
    const DevicePart& d = parts->device;
    for (RecordCount* g : {&s.per_gpu[fmt::format("{} ({}, {} SMs)", d.gpu, d.arch, d.sms)], &s.per_op[parts->op]}) {
      ++g->records;
      g->bytes += r.stored_bytes;
    }
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
  const auto counts = [](const std::map<std::string, RecordCount>& by) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, g] : by) j[name] = {{"records", g.records}, {"bytes", g.bytes}};
    return j;
  };
  return {{"cache",
           {{"dir", s.dir}, {"generation", s.generation}, {"data_file_bytes", s.data_file_bytes},
            {"records", s.records}, {"record_bytes", s.record_bytes}, {"damaged_records", s.damaged},
            {"per_gpu", counts(s.per_gpu)}, {"per_op", counts(s.per_op)}, {"trees", s.trees}, {"jobs", s.jobs},
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
  Table ops({{"OPERATOR"}, {"RECORDS", Align::right}, {"BYTES", Align::right}});
  for (const auto& [name, g] : s.per_op) ops.add({name, std::to_string(g.records), format_bytes(g.bytes)});
  std::printf("\n%s", ops.render().c_str());
}

// What kdispatchd says, when it serves this cache: its stats reply, else why not.
struct DaemonView {
  std::optional<protocol::Stats> stats;
  std::string unreachable;  // when !stats: the socket and the failure
};

DaemonView query_daemon(const std::filesystem::path& socket) {
  try {
    return {daemon::Client::stats(socket), {}};
  } catch (const std::exception& e) {
    return {std::nullopt, fmt::format("no kdispatchd running on {} ({})", socket.string(), e.what())};
  }
}

// The daemon's client counters, or nullptr with why there are none in `why`.
const protocol::ClientsReport* clients_of(const DaemonView& d, std::string& why) {
  if (!d.stats) {
    why = d.unreachable;
    return nullptr;
  }
  if (!d.stats->clients) {
    why = "this kdispatchd does not collect client counters (it predates client_stats)";
    return nullptr;
  }
  return &*d.stats->clients;
}

// The client counters object for --json: the daemon's `clients` plus "available": true, or
// "available": false with the reason.
nlohmann::json clients_json(const DaemonView& d) {
  std::string why;
  const protocol::ClientsReport* c = clients_of(d, why);
  if (c == nullptr) return {{"available", false}, {"reason", why}};
  nlohmann::json j = *c;
  j["available"] = true;
  return j;
}

std::string local_time(std::int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  char text[64] = "?";
  if (::localtime_r(&t, &tm) != nullptr) std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %Z", &tm);
  return text;
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "-" : fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

void print_clients(const DaemonView& d) {
  std::string why;
  const protocol::ClientsReport* c = clients_of(d, why);
  if (c == nullptr) {
    std::printf("\nclient counters: unavailable: %s\n  (kdispatchd collects hits, misses and fallbacks "
                "from applications; KD_STATS=1 prints one process's own at exit)\n",
                why.c_str());
    return;
  }
  const protocol::ClientCounters& t = c->totals;
  std::printf("\nclient counters (reported to kdispatchd by %llu process(es) since %s; %llu reporting now)\n",
              static_cast<unsigned long long>(c->processes_seen), local_time(c->since_unix_ms).c_str(),
              static_cast<unsigned long long>(c->processes_live));
  std::printf("  calls %llu: hits %llu (%s), fallbacks %llu (misses %llu)\n",
              static_cast<unsigned long long>(t.calls), static_cast<unsigned long long>(t.hits),
              percent(t.hits, t.calls).c_str(), static_cast<unsigned long long>(t.fallbacks_total),
              static_cast<unsigned long long>(t.misses));
  std::printf("  loads %llu, swaps %llu\n", static_cast<unsigned long long>(t.loads),
              static_cast<unsigned long long>(t.swaps));
  if (!t.fallbacks.empty()) {
    Table reasons({{"FALLBACK REASON"}, {"CALLS", Align::right}, {"OF CALLS", Align::right}});
    for (const auto& [reason, n] : t.fallbacks) reasons.add({reason, std::to_string(n), percent(n, t.calls)});
    std::printf("\n%s", reasons.render().c_str());
  }
  if (c->live.empty()) return;
  Table table({{"PID", Align::right}, {"PROGRAM"}, {"CALLS", Align::right}, {"HITS", Align::right},
               {"MISSES", Align::right}, {"FALLBACKS", Align::right}, {"LOADS", Align::right},
               {"SWAPS", Align::right}});
  for (const protocol::LiveClient& p : c->live)
    table.add({std::to_string(p.pid), p.program, std::to_string(p.counters.calls), std::to_string(p.counters.hits),
               std::to_string(p.counters.misses), std::to_string(p.counters.fallbacks_total),
               std::to_string(p.counters.loads), std::to_string(p.counters.swaps)});
  std::printf("\n%s", table.render().c_str());
  if (c->live_omitted > 0)
    std::printf("  (%llu more live process(es) not listed: the list shows those with the most calls)\n",
                static_cast<unsigned long long>(c->live_omitted));
}

std::filesystem::path socket_of(const StatsArgs& a, const std::filesystem::path& cache_dir) {
  return a.socket.empty() ? protocol::daemon_socket_path(cache_dir) : std::filesystem::path(a.socket);
}

// kdctl stats --zero: the daemon starts its client counter totals over (and commits that).
int run_zero(const StatsArgs& a) {
  const std::filesystem::path socket = socket_of(a, resolve_cache_dir(a.cache_dir));
  daemon::Answer<protocol::StatsZeroed> answer;
  try {
    daemon::Client client(socket);
    answer = client.call(protocol::ZeroStats{});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl stats: cannot zero the client counters: no kdispatchd running on %s (%s)\n",
                 socket.c_str(), e.what());
    return kFailure;
  }
  const auto* zeroed = std::get_if<protocol::StatsZeroed>(&answer);
  if (zeroed == nullptr || !zeroed->zeroed) {
    std::fprintf(stderr, "kdctl stats: kdispatchd did not zero the client counters: %s\n",
                 zeroed == nullptr ? std::get<protocol::ErrorMessage>(answer).message.c_str() : "it said it did not");
    return kFailure;
  }
  std::printf("client counters zeroed\n");
  return kOk;
}

int run_stats(const StatsArgs& a) {
  if (a.zero) return run_zero(a);
  const std::filesystem::path dir = resolve_cache_dir(a.cache_dir);
  const CacheSnapshot cache(dir);
  const CacheStats s = collect(cache);
  const DaemonView d = query_daemon(socket_of(a, dir));
  if (a.json) {
    nlohmann::json j = to_json(s);
    j["clients"] = clients_json(d);
    j["daemon"] = d.stats ? protocol::to_object(*d.stats) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  print(s);
  print_clients(d);
  if (d.stats) {
    std::printf("\ndaemon counters:\n");
    for (const auto& [name, n] : d.stats->counters)
      std::printf("  %-32s %llu\n", name.c_str(), static_cast<unsigned long long>(n));
  }
  return kOk;
}

}  // namespace

void setup_stats(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_stats);
  add_cache_dir_flag(sub, a->cache_dir);
  add_socket_flag(sub, a->socket);
  sub.add_flag("--json", a->json, "Print JSON");
  sub.add_flag("-z,--zero", a->zero, "Zero the client counter totals kept by kdispatchd (needs the daemon)");
  sub.footer("Records are counted per GPU model and per operator (gemm, and the row operators rmsnorm, layernorm,\n"
             "softmax). Client counters come from kdispatchd; without a running daemon they are reported as unavailable.\n"
             "Exit codes: 0 ok (also without a daemon), 1 no cache or unreadable cache, or --zero without a "
             "daemon, 2 usage.\n");
}

}  // namespace kd::kdctl
