// kdctl doctor: checks a cache without a GPU and salvages a damaged one (salvage.hpp).
//   kdctl doctor                 checks data.mdb (the cache check, every record, job and tree); a
//                                sound file loses its damaged records and trees in place; a damaged
//                                one is rebuilt from what can be read, moved aside and replaced by
//                                the rebuilt one (kdispatchd stopped)
//   kdctl doctor --from FILE     salvages FILE (a damaged file moved aside) into the cache
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "kdctl.hpp"
#include "queue/job.hpp"
#include "salvage.hpp"
#include "store/cache_check.hpp"
#include "store/cache_recovery.hpp"
#include "store/record_usage.hpp"
#include "tree/search_tree.hpp"

namespace kd::kdctl {
namespace {

namespace fs = std::filesystem;

struct DoctorArgs {
  std::string cache_dir;
  std::string from;
  bool dry_run = false;
};

// kdispatchd's lock (daemon/src/daemon.cpp, DaemonLock): held while a daemon serves the directory.
// Doctor holds it while it replaces data.mdb, so no daemon starts on a file being swapped.
class DaemonLockProbe {
public:
  explicit DaemonLockProbe(const fs::path& dir) {
    fd_ = ::open((dir / "kdispatchd.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0) held_ = true;
  }
  ~DaemonLockProbe() {
    if (fd_ >= 0) ::close(fd_);
  }
  DaemonLockProbe(const DaemonLockProbe&) = delete;
  DaemonLockProbe& operator=(const DaemonLockProbe&) = delete;
  bool held() const noexcept { return held_; }

private:
  int fd_ = -1;
  bool held_ = false;
};

// Records, jobs and trees of a cache that passed the cache check, decoded through LMDB, with the
// keys of the records and trees that do not.
struct Census {
  SalvageCounts records, jobs, trees;
  std::vector<std::string> damaged_records, damaged_trees;
};

Census take_census(const fs::path& dir) {
  Census c;
  const CacheSnapshot cache(dir);
  for (const StoredRecord& r : cache.records()) {
    if (std::holds_alternative<Record>(r.record)) {
      ++c.records.good;
    } else {
      ++c.records.damaged;
      c.damaged_records.push_back(r.key_line);
    }
  }
  cache.for_each_raw("jobs", [&](std::string_view key, std::string_view value) {
    (daemon::parse_job(key, value) ? c.jobs.good : c.jobs.damaged) += 1;
  });
  cache.for_each_raw("trees", [&](std::string_view key, std::string_view value) {
    const auto j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    bool good = false;
    try {
      good = !j.is_discarded() && search::SearchTree::from_json(j).search_id() == key;
    } catch (const nlohmann::json::exception&) {
    }
    if (good) {
      ++c.trees.good;
    } else {
      ++c.trees.damaged;
      c.damaged_trees.emplace_back(key);
    }
  });
  return c;
}

// A sound file whose entries fail to decode: the damaged records (with their last-use entries) and
// trees are removed in place (through CacheWriter, so a running kdispatchd and its clients see the
// generation move). Jobs are the daemon's: it keeps and counts those it cannot read, so they are
// only reported.
int clean_in_place(const DoctorArgs& a, const fs::path& dir, const Census& c) {
  std::printf("%s", format_counts(c.records, c.jobs, c.trees).c_str());
  if (c.jobs.damaged > 0) {
    std::printf("%llu job(s) do not parse; kdispatchd skips them when it loads its queue\n",
                static_cast<unsigned long long>(c.jobs.damaged));
  }
  if (c.damaged_records.empty() && c.damaged_trees.empty()) {
    std::printf("%s is healthy; nothing to do\n", data_file_of(dir).c_str());
    return kOk;
  }
  if (a.dry_run) {
    std::printf("dry run: would remove %zu damaged record(s) and %zu damaged tree(s)\n", c.damaged_records.size(),
                c.damaged_trees.size());
    return kOk;
  }
  CacheWriter writer(dir);
  for (const auto& key : c.damaged_records) {
    writer.evict(key);
    writer.del_raw(kUsageDb, key);  // its last-use time (the daemon's LRU eviction)
  }
  for (const auto& key : c.damaged_trees) writer.del_raw("trees", key);
  std::printf("removed %zu damaged record(s) and %zu damaged tree(s) from %s\n", c.damaged_records.size(),
              c.damaged_trees.size(), data_file_of(dir).c_str());
  return kOk;
}

int merge_from(const DoctorArgs& a, const fs::path& dir) {
  const fs::path from(a.from);
  std::error_code ec;
  if (!fs::is_regular_file(from, ec)) {
    std::fprintf(stderr, "kdctl doctor: --from %s: no such file (pass a data file, such as a data.mdb.damaged-* "
                         "that kdispatchd moved aside)\n", a.from.c_str());
    return kUsage;
  }
  std::optional<CacheWriter> writer;
  if (!a.dry_run) writer.emplace(dir);
  const SalvageReport report = salvage(from, writer ? &*writer : nullptr, SalvageTarget::merge);
  std::printf("salvaged %s\n%s", from.c_str(), format_report(report).c_str());
  if (a.dry_run) {
    std::printf("dry run: nothing written to %s\n", dir.c_str());
  } else {
    std::printf("%llu entr%s written into %s, %llu already there\n", static_cast<unsigned long long>(report.written),
                report.written == 1 ? "y" : "ies", dir.c_str(), static_cast<unsigned long long>(report.already_there));
    std::printf("%s\n", report.jobs_indexed
                            ? "added jobs are in the job index: a running kdispatchd can run them now and counts them "
                              "from its next start"
                            : "the cache's job index is incomplete: kdispatchd indexes the added jobs at its next start");
  }
  return kOk;
}

// Builds the salvaged cache next to the damaged one, then swaps them.
int rebuild(const DoctorArgs& a, const fs::path& dir) {
  const fs::path file = data_file_of(dir);
  if (a.dry_run) {
    const SalvageReport report = salvage(file, nullptr, SalvageTarget::fresh_cache);
    std::printf("%s", format_report(report).c_str());
    std::printf("dry run: nothing changed; kdctl doctor without --dry-run rebuilds %s from what is listed good\n",
                file.c_str());
    return kOk;
  }
  const DaemonLockProbe lock(dir);
  if (!lock.held()) {
    std::fprintf(stderr,
                 "kdctl doctor: kdispatchd is running on %s: stop it and run kdctl doctor again, or restart it (at "
                 "start it moves the damaged file aside and restores its compact copy; kdctl doctor --from then "
                 "salvages the moved file)\n",
                 dir.c_str());
    return kFailure;
  }
  const fs::path work = dir / fmt::format(".doctor-{}", ::getpid());
  fs::remove_all(work);
  SalvageReport report;
  try {
    CacheWriter fresh(work);
    report = salvage(file, &fresh, SalvageTarget::fresh_cache);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(work, ignored);  // the damaged file is still in place, untouched
    throw;
  }
  const fs::path moved = move_aside(dir, std::chrono::system_clock::now());
  fs::rename(data_file_of(work), file);
  fs::remove_all(work);
  std::printf("%s", format_report(report).c_str());
  std::printf("the damaged file is now %s; %s holds the salvaged cache (generation %llu)\n", moved.c_str(),
              file.c_str(), static_cast<unsigned long long>(report.generation + 1));
  return kOk;
}

int run_doctor(const DoctorArgs& a) {
  const fs::path dir = resolve_cache_dir(a.cache_dir);
  if (!a.from.empty()) return merge_from(a, dir);
  const CacheCheck check = check_cache_dir(dir, CheckScope::everything);
  if (!check.ok() && !check.damaged()) {
    std::fprintf(stderr, "kdctl doctor: %s\n", check.message().c_str());
    return kFailure;
  }
  if (check.ok()) return clean_in_place(a, dir, take_census(dir));
  std::printf("%s\n", check.what.c_str());
  return rebuild(a, dir);
}

}  // namespace

void setup_doctor(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_doctor);
  add_cache_dir_flag(sub, a->cache_dir);
  sub.add_option("--from", a->from,
                 "Salvage this data file (a data.mdb.damaged-* kdispatchd moved aside) into the cache instead");
  sub.add_flag("--dry-run", a->dry_run, "Check and count what can be salvaged; change nothing");
  sub.footer(
      "Needs no GPU. Without --from: checks data.mdb page by page and decodes every record (checksum), job and\n"
      "search tree. When the file is sound, removes the records and trees that do not decode (kdispatchd may\n"
      "run). When the file is damaged, writes every readable record, job and tree into a new cache (the jobs\n"
      "with a new job index, the records with their last-use times), moves the damaged file to\n"
      "data.mdb.damaged-<UTC time> and puts the new one in its place (kdispatchd must be stopped). Prints\n"
      "\"records: N good, M damaged, T total\" and the same for jobs and trees.\n"
      "With --from FILE: adds FILE's good records, jobs and trees that the cache lacks (kdispatchd may run;\n"
      "added jobs go into its job index at once, and its job counts include them from its next start).\n"
      "Exit codes: 0 healthy, cleaned or salvaged, 1 cannot read the cache or kdispatchd holds it, 2 usage.\n");
}

}  // namespace kd::kdctl
