// kdctl purge: removes finished jobs (done, failed, cancelled) from the job queue now, by state
// and age. Through the daemon when one answers (it is the queue's only writer); otherwise it takes
// the cache's writer lock and purges the queue itself.
#include <array>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "cache_snapshot.hpp"
#include "ctl_client/ctl_client.hpp"
#include "commands.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "protocol/messages.hpp"
#include "queue/job_queue.hpp"
#include "queue/writer_lock.hpp"
#include "scaled.hpp"
#include "store/cache_store.hpp"

namespace kd::kdctl {
namespace {

struct PurgeArgs {
  std::string socket;
  std::string cache_dir;
  std::string states = "done,failed,cancelled";
  std::string older_than;  // "7d"; empty: every finished job
  bool dry_run = false;
};

constexpr daemon::JobState kFinished[] = {daemon::JobState::done, daemon::JobState::failed, daemon::JobState::cancelled};

struct Parsed {
  std::vector<daemon::JobState> states;
  std::uint64_t older_than_s = 0;
};

// The flags as the daemon takes them, or a usage message.
std::variant<Parsed, std::string> parse(const PurgeArgs& a) {
  Parsed p;
  std::stringstream in(a.states);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    const auto s = daemon::job_state_from(item);
    if (!s || *s == daemon::JobState::queued || *s == daemon::JobState::running)
      return fmt::format("--state \"{}\": finished states are done, failed and cancelled (a comma list)", item);
    p.states.push_back(*s);
  }
  if (p.states.empty()) return std::string("--state: name at least one of done, failed, cancelled");
  if (!a.older_than.empty()) {
    const auto s = parse_scaled(a.older_than, kDurationSuffixes, false);
    if (!s) return fmt::format("--older-than \"{}\": expected a number and s, m, h, d or w (7d)", a.older_than);
    p.older_than_s = *s;
  }
  return p;
}

void print(const std::array<std::uint64_t, daemon::kJobStateCount>& removed, bool dry_run, std::string_view where) {
  std::uint64_t total = 0;
  std::string parts;
  for (const auto s : kFinished) {
    const auto n = removed[static_cast<std::size_t>(s)];
    total += n;
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, daemon::to_string(s));
  }
  std::printf("%s %llu finished job(s): %s%s\n", dry_run ? "would remove" : "removed",
              static_cast<unsigned long long>(total), parts.c_str(), std::string(where).c_str());
}

// Through the daemon; nullopt when none answers on `socket`.
std::optional<int> purge_through_daemon(const std::filesystem::path& socket, const Parsed& p, bool dry_run) {
  std::optional<daemon::Client> client;
  try {
    client.emplace(socket);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  protocol::Purge request{{}, p.older_than_s, dry_run};
  for (const auto s : p.states) request.states.emplace_back(daemon::to_string(s));
  const auto answer = client->call(request, std::chrono::minutes(10));
  if (const auto* refused = std::get_if<protocol::ErrorMessage>(&answer)) {
    std::fprintf(stderr, "kdctl purge: the daemon says: %s\n", refused->message.c_str());
    return kFailure;
  }
  const protocol::PurgedJobs& by_state = std::get<protocol::PurgeOk>(answer).removed;
  std::array<std::uint64_t, daemon::kJobStateCount> removed{};
  removed[static_cast<std::size_t>(daemon::JobState::done)] = by_state.done;
  removed[static_cast<std::size_t>(daemon::JobState::failed)] = by_state.failed;
  removed[static_cast<std::size_t>(daemon::JobState::cancelled)] = by_state.cancelled;
  print(removed, dry_run, "");
  return kOk;
}

int run_purge(const PurgeArgs& a) {
  const auto parsed = parse(a);
  if (const auto* problem = std::get_if<std::string>(&parsed)) {
    std::fprintf(stderr, "kdctl purge: %s\n", problem->c_str());
    return kUsage;
  }
  const Parsed& p = std::get<Parsed>(parsed);
  const auto dir = resolve_cache_dir(a.cache_dir);
  const std::filesystem::path socket =
      a.socket.empty() ? protocol::daemon_socket_path(dir) : std::filesystem::path(a.socket);
  if (const auto code = purge_through_daemon(socket, p, a.dry_run)) return *code;

  require_cache(dir);
  auto lock = daemon::WriterLock::try_acquire(dir);
  if (!lock) {
    std::fprintf(stderr,
                 "kdctl purge: a kdispatchd serves the cache %s but does not answer on %s: pass its "
                 "--socket, or stop it and run kdctl purge again\n",
                 dir.c_str(), socket.c_str());
    return kFailure;
  }
  daemon::JobQueue queue(dir);
  daemon::PurgeRequest request;
  request.states = p.states;
  request.before_unix_ms = daemon::unix_ms_now() - static_cast<std::int64_t>(p.older_than_s) * 1000;
  if (a.dry_run) request.mode = daemon::PurgeRequest::Mode::count_only;
  const daemon::PurgeResult r = queue.purge(request);
  queue.stop();
  print(r.by_state, a.dry_run, fmt::format(" (no daemon answers on {}: the cache {} directly)", socket.string(), dir.string()));
  return kOk;
}

}  // namespace

void setup_purge(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_purge);
  sub.add_option("--state", a->states, "Finished states to remove, a comma list (default: done,failed,cancelled)");
  sub.add_option("--older-than", a->older_than,
                 "Only jobs unchanged for longer than this (7d, 12h, 90m, 2w); default: every finished job");
  sub.add_flag("--dry-run", a->dry_run, "Count what would be removed; change nothing");
  add_socket_flag(sub, a->socket);
  add_cache_dir_flag(sub, a->cache_dir);
  sub.footer("Queued and running jobs are never purged. The daemon also purges finished\n"
             "jobs by itself after job_retention_s. Records are not touched (kdctl evict removes records).\n"
             "Exit codes: 0 ok, 1 no cache, a daemon that holds the cache but does not answer, or a failed\n"
             "write, 2 usage.");
}

}  // namespace kd::kdctl
