// kdctl status: the daemon's status, with one line per search runner (GPU).
#include <cstdio>
#include <string>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ctl_client/ctl_client.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"

namespace kd::kdctl {
namespace {

using nlohmann::json;

// "bf16 4096x16x4096" for a key line (its type and m x n x k); the line itself when it does not parse.
std::string short_key(const std::string& line) {
  const auto parsed = parse_key(line);
  const auto* key = std::get_if<GemmKey>(&parsed);
  if (key == nullptr) return line;
  return fmt::format("{} {}x{}x{}", to_string(key->a), key->m, key->n, key->k);
}

// One line per runner of the status reply's `runners`: which GPU, what it does, what it did.
void print_runners(const json& runners) {
  if (!runners.is_array() || runners.empty()) return;
  for (const json& r : runners) {
    std::string doing = r.value("state", "");
    if (r.contains("key")) doing += " " + short_key(r.value("key", ""));
    if (r.contains("progress")) doing += " (" + r.value("progress", "") + ")";
    if (r.contains("origin"))
      doing += fmt::format(" [{}-started, {:.0f}% of the GPU]", r.value("origin", ""), 100 * r.value("duty_cycle", 0.0));
    const int pid = r.value("worker_pid", 0);
    std::printf("  runner %llu on GPU %d, %s (%s): %s; %llu jobs finished, %llu published, %llu workers lost; "
                "evaluations %.1f s, paused %.1f s for the GPU policy%s\n",
                r.value("index", 0ULL), r.value("ordinal", -1), r.value("gpu", "").c_str(),
                r.value("arch", "").c_str(), doing.c_str(), r.value("jobs_finished", 0ULL), r.value("published", 0ULL),
                r.value("workers_lost", 0ULL), r.value("evaluating_ms", 0.0) / 1000, r.value("paused_ms", 0.0) / 1000,
                pid > 0 ? fmt::format(", worker pid {}", pid).c_str() : "");
  }
}

int run_status(const DaemonArgs& a, bool as_json) {
  const std::filesystem::path socket = socket_of(a);
  json status;
  try {
    status = daemon::Client::status(socket, 20);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl status: daemon at %s not reachable: %s\n", socket.c_str(), e.what());
    return kFailure;
  }
  if (as_json) {
    std::printf("%s\n", status.dump(2).c_str());
    return kOk;
  }
  const json& jobs = status["jobs"];
  std::printf("kdispatchd %s, pid %d, up %lld s, cache %s, generation %llu\n", status.value("daemon", "").c_str(),
              status.value("pid", 0), status.value("uptime_s", 0LL), status.value("cache_dir", "").c_str(),
              status.value("generation", 0ULL));
  std::printf("search: %s\n", status["search_backend"].value("message", "").c_str());
  if (const auto p = status.find("search_policy"); p != status.end() && p->is_object())
    std::printf("GPU policy: a search started by an application's miss takes at most %.0f%% of its GPU's time "
                "(search_duty_cycle), a prewarm %.0f%% (prewarm_duty_cycle)\n",
                100 * p->value("search_duty_cycle", 1.0), 100 * p->value("prewarm_duty_cycle", 1.0));
  print_runners(status.value("runners", json::array()));
  std::printf("jobs: %d queued, %d running, %d done, %d failed, %d cancelled; %d clients, %d subscribers\n",
              jobs.value("queued", 0), jobs.value("running", 0), jobs.value("done", 0), jobs.value("failed", 0),
              jobs.value("cancelled", 0), status.value("clients", 0), status.value("subscribers", 0));
  if (const auto t = status.find("client_totals"); t != status.end() && t->is_object())
    std::printf("client calls: %llu hits, %llu misses, %llu fallbacks (%llu process(es) reporting; kdctl stats "
                "has the reasons)\n",
                t->value("hits", 0ULL), t->value("misses", 0ULL), t->value("fallbacks_total", 0ULL),
                status.value("clients_reporting", 0ULL));
  if (const auto b = status.find("bounds"); b != status.end() && b->is_object())
    std::printf("bounds: records %llu of %llu bytes (%llu evicted), queued jobs at most %llu (%llu dropped), "
                "finished jobs kept %llu s (%llu purged)\n",
                b->value("cache_bytes", 0ULL), b->value("max_cache_bytes", 0ULL), b->value("records_evicted", 0ULL),
                b->value("max_queued_jobs", 0ULL), b->value("jobs_dropped", 0ULL), b->value("job_retention_s", 0ULL),
                b->value("jobs_purged", 0ULL));
  if (const auto r = status.find("remote"); r != status.end() && r->is_object()) {  // issue 31: the fleet's tier
    const json c = r->value("counters", json::object());
    std::printf("remote tier: %s %s%s, trust %s, gate %s; %llu imported, %llu pushed, %llu held back, %llu lease "
                "wait(s) (kdctl remote status has more)\n",
                r->value("url", "").c_str(), r->value("connected", false) ? "connected" : "not connected",
                r->value("connected", false) ? "" : (": " + r->value("last_error", "")).c_str(),
                r->value("trust", "").c_str(), r->value("gate", "").c_str(), c.value("imports", 0ULL),
                c.value("pushes", 0ULL), r->value("held_back", 0ULL), c.value("lease_waits", 0ULL));
  }
  for (const json& j : status.value("top_jobs", json::array()))
    std::printf("  %-9s %s%s%s\n", j.value("state", "").c_str(), j.value("key", "").c_str(),
                j.contains("progress") ? "  " : "", j.value("progress", "").c_str());
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
