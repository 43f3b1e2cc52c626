// kdctl status: the daemon's status, with one line per search runner (GPU).
#include <cstdio>
#include <string>
#include <variant>

#include <fmt/format.h>
#include <vector>

#include "commands.hpp"
#include "ctl_client/ctl_client.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"

namespace kd::kdctl {
namespace {

// "bf16 4096x16x4096" for a GEMM key line (its type and m x n x k), "layernorm f32 4096x1024" for a
// row operator's (op, dtype, rows x cols); the line itself when it does not parse.
std::string short_key(const std::string& line) {
  const auto parsed = parse_op_key(line);
  const auto* op = std::get_if<OpKey>(&parsed);
  if (op == nullptr) return line;
  if (const auto* row = std::get_if<RowKey>(op))
    return fmt::format("{} {} {}x{}", to_string(row->op), to_string(row->dtype), row->rows, row->cols);
  const GemmKey& key = std::get<GemmKey>(*op);
  return fmt::format("{} {}x{}x{}", to_string(key.a), key.m, key.n, key.k);
}

// One line per runner of the status reply's `runners`: which GPU, what it does, what it did.
void print_runners(const std::vector<protocol::RunnerEntry>& runners) {
  for (const protocol::RunnerEntry& r : runners) {
    std::string doing = r.state;
    if (r.key) doing += " " + short_key(*r.key);
    if (r.progress) doing += " (" + *r.progress + ")";
    if (r.origin) doing += fmt::format(" [{}-started, {:.0f}% of the GPU]", *r.origin, 100 * r.duty_cycle.value_or(1.0));
    std::printf("  runner %llu on GPU %lld, %s (%s): %s; %llu jobs finished, %llu published, %llu workers lost; "
                "evaluations %.1f s, paused %.1f s for the GPU policy%s\n",
                static_cast<unsigned long long>(r.index), static_cast<long long>(r.ordinal), r.gpu.c_str(),
                r.arch.c_str(), doing.c_str(), static_cast<unsigned long long>(r.jobs_finished),
                static_cast<unsigned long long>(r.published), static_cast<unsigned long long>(r.workers_lost),
                static_cast<double>(r.evaluating_ms) / 1000, static_cast<double>(r.paused_ms) / 1000,
                r.worker_pid > 0 ? fmt::format(", worker pid {}", r.worker_pid).c_str() : "");
  }
}

int run_status(const DaemonArgs& a, bool as_json) {
  const std::filesystem::path socket = socket_of(a);
  protocol::Status status;
  try {
    status = daemon::Client::status(socket, 20);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl status: daemon at %s not reachable: %s\n", socket.c_str(), e.what());
    return kFailure;
  }
  if (as_json) {
    std::printf("%s\n", protocol::to_object(status).dump(2).c_str());
    return kOk;
  }
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  const protocol::JobCounts& jobs = status.jobs;
  std::printf("kdispatchd %s, pid %lld, up %lld s, cache %s, generation %llu\n", status.daemon.c_str(),
              static_cast<long long>(status.pid), static_cast<long long>(status.uptime_s), status.cache_dir.c_str(),
              u(status.generation));
  std::printf("search: %s\n", status.search_backend.message.c_str());
  if (const auto& p = status.search_policy)
    std::printf("GPU policy: a search started by an application's miss takes at most %.0f%% of its GPU's time "
                "(search_duty_cycle), a prewarm %.0f%% (prewarm_duty_cycle)\n",
                100 * p->search_duty_cycle, 100 * p->prewarm_duty_cycle);
  if (status.runners) print_runners(*status.runners);
  std::printf("jobs: %llu queued, %llu running, %llu done, %llu failed, %llu cancelled; %llu clients, %llu "
              "subscribers\n",
              u(jobs.queued), u(jobs.running), u(jobs.done), u(jobs.failed), u(jobs.cancelled), u(status.clients),
              u(status.subscribers));
  if (const auto& t = status.client_totals)
    std::printf("client calls: %llu hits, %llu misses, %llu fallbacks (%llu process(es) reporting; kdctl stats "
                "has the reasons)\n",
                u(t->hits), u(t->misses), u(t->fallbacks_total), u(status.clients_reporting));
  if (const auto& b = status.bounds)
    std::printf("bounds: records %llu of %llu bytes (%llu evicted), queued jobs at most %llu (%llu dropped), "
                "finished jobs kept %lld s (%llu purged)\n",
                u(b->cache_bytes), u(b->max_cache_bytes), u(b->records_evicted), u(b->max_queued_jobs),
                u(b->jobs_dropped), static_cast<long long>(b->job_retention_s), u(b->jobs_purged));
  if (const auto& r = status.remote) {  // issue 31: the fleet's tier
    const auto count = [&](const char* name) {
      const auto it = r->counters.counts.find(name);
      return u(it == r->counters.counts.end() ? 0 : it->second);
    };
    std::printf("remote tier: %s %s%s, trust %s, gate %s; %llu imported, %llu pushed, %llu held back, %llu lease "
                "wait(s) (kdctl remote status has more)\n",
                r->url.c_str(), r->connected ? "connected" : "not connected",
                r->connected ? "" : (": " + r->last_error).c_str(), r->trust.c_str(), r->gate.c_str(),
                count("imports"), count("pushes"), u(r->held_back), count("lease_waits"));
  }
  for (const protocol::JobEntry& j : status.top_jobs.value_or(std::vector<protocol::JobEntry>{}))
    std::printf("  %-9s %s%s%s\n", j.state.c_str(), j.key.c_str(), j.progress ? "  " : "",
                j.progress.value_or("").c_str());
  return kOk;
}

}  // namespace

void setup_status(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<DaemonArgs>();
  auto as_json = std::make_shared<bool>(false);
  add_daemon_flags(sub, *a);
  sub.add_flag("--json", *as_json, "Print the daemon's status object as JSON");
  sub.footer("Exit codes: 0 ok, 1 no daemon reachable on the socket, 2 usage.");
  sub.callback([a, as_json, &action] { action = [a, as_json] { return run_status(*a, *as_json); }; });
}


}  // namespace kd::kdctl
