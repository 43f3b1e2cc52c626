// kdctl evict: removes records (GEMM and row-operator ones alike) by age, size cap, GPU and key
// pattern (through CacheWriter::evict, so each removal bumps the generation), then tells the
// kdispatchd serving the cache, if any, so that its subscribed processes drop the entries at once
// (daemon_link.hpp).
#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "scaled.hpp"
#include "store/cache_store.hpp"
#include "store/record_usage.hpp"
#include "table.hpp"

namespace kd::kdctl {
namespace {

struct EvictArgs {
  std::string cache_dir;
  std::string socket;
  std::string older_than;  // "30d"
  std::string max_size;    // "500M"
  std::string gpu;         // substring of the GPU name
  std::string key_pattern; // fnmatch glob on the shape line
  bool damaged = false;
  bool dry_run = false;
};

struct Candidate {
  std::string key_line;
  std::uint64_t bytes = 0;
  std::int64_t created_unix_s = 0;  // 0 for a damaged record
  bool damaged = false;
  bool selected = false;  // matches --gpu and --key-pattern (damaged: --damaged given)
  std::string why;        // why it goes
};

std::vector<Candidate> load(const CacheWriter& writer, const EvictArgs& a) {
  std::vector<Candidate> all;
  for (const auto& [key, bytes] : writer.scan_raw("records")) {
    Candidate c{key, bytes.size()};
    auto decoded = deserialize_record(bytes);
    const auto parts = split_op_key(key);  // any operator's key (issue 33): a row record is not damaged
    const auto* record = std::get_if<Record>(&decoded);
    if (record == nullptr || record->key_line != key || !parts) {
      c.damaged = true;
      c.selected = a.damaged;
      if (a.damaged) c.why = "damaged";
    } else {
      c.created_unix_s = record->created_unix_s;
      const bool gpu_ok = a.gpu.empty() || parts->device.gpu.find(a.gpu) != std::string::npos;
      const bool pattern_ok = a.key_pattern.empty() || fnmatch(a.key_pattern.c_str(), parts->shape_line.c_str(), 0) == 0;
      const bool has_criterion = !a.gpu.empty() || !a.key_pattern.empty() || !a.older_than.empty() ||
                                 !a.max_size.empty();
      c.selected = has_criterion && gpu_ok && pattern_ok;
    }
    all.push_back(std::move(c));
  }
  return all;
}

// Marks what goes: selected records older than the limit; then, while the total size of all
// records stays above the cap, the oldest selected ones. Without an age or size criterion every
// selected record goes. Returns the bytes that remain.
std::uint64_t choose(std::vector<Candidate>& all, std::optional<std::chrono::seconds> older_than,
                     std::optional<std::uint64_t> max_bytes) {
  std::uint64_t total = 0;
  for (const auto& c : all) total += c.bytes;
  const auto evict = [&](Candidate& c, std::string why) {
    if (!c.why.empty()) return;
    total -= c.bytes;
    c.why = std::move(why);
  };
  for (const auto& c : all) {
    if (!c.why.empty()) total -= c.bytes;  // damaged records going with --damaged
  }
  for (auto& c : all) {
    if (!c.selected || c.damaged) continue;
    if (!older_than && !max_bytes) evict(c, "matches");
    if (older_than && age_of(c.created_unix_s) > *older_than) {
      evict(c, fmt::format("older than {}", format_age(*older_than)));
    }
  }
  if (max_bytes && total > *max_bytes) {
    std::vector<Candidate*> by_age;
    for (auto& c : all) {
      if (c.selected && !c.damaged && c.why.empty()) by_age.push_back(&c);
    }
    std::stable_sort(by_age.begin(), by_age.end(),
                     [](const Candidate* x, const Candidate* y) { return x->created_unix_s < y->created_unix_s; });
    for (Candidate* c : by_age) {
      if (total <= *max_bytes) break;
      evict(*c, fmt::format("over the size cap ({})", format_bytes(*max_bytes)));
    }
  }
  return total;
}

int run_evict(const EvictArgs& a) {
  if (a.older_than.empty() && a.max_size.empty() && a.gpu.empty() && a.key_pattern.empty() && !a.damaged) {
    std::fprintf(stderr, "kdctl evict: name what to evict: --older-than, --max-size, --gpu, "
                         "--key-pattern or --damaged\n");
    return kUsage;
  }
  std::optional<std::chrono::seconds> older_than;
  if (!a.older_than.empty()) {
    const auto s = parse_scaled(a.older_than, kDurationSuffixes, false);
    if (!s) {
      std::fprintf(stderr, "kdctl evict: --older-than \"%s\": expected a number and s, m, h, d or w (30d)\n",
                   a.older_than.c_str());
      return kUsage;
    }
    older_than = std::chrono::seconds(static_cast<std::int64_t>(*s));
  }
  std::optional<std::uint64_t> max_bytes;
  if (!a.max_size.empty()) {
    max_bytes = parse_scaled(a.max_size, kSizeSuffixes, true);
    if (!max_bytes) {
      std::fprintf(stderr, "kdctl evict: --max-size \"%s\": expected bytes, or a number and K, M, G or T (500M)\n",
                   a.max_size.c_str());
      return kUsage;
    }
  }
  const auto dir = resolve_cache_dir(a.cache_dir);
  require_cache(dir);
  CacheWriter writer(dir);
  std::vector<Candidate> all = load(writer, a);
  const std::uint64_t remaining = choose(all, older_than, max_bytes);

  Table table({{"KEY"}, {"BYTES", Align::right}, {"AGE", Align::right}, {"WHY"}});
  std::size_t gone = 0;
  std::vector<std::string> evicted;
  for (const auto& c : all) {
    if (c.why.empty()) continue;
    if (!a.dry_run) {
      writer.evict(c.key_line);
      writer.del_raw(kUsageDb, c.key_line);  // its last-use time (the daemon's LRU eviction)
      evicted.push_back(c.key_line);
    }
    ++gone;
    table.add({c.key_line, format_bytes(c.bytes), c.damaged ? "-" : format_age(age_of(c.created_unix_s)), c.why});
  }
  std::fputs(table.render().c_str(), stdout);
  std::printf("%zu of %zu record(s) %s; %s remain\n", gone, all.size(),
              a.dry_run ? "would be evicted" : "evicted", format_bytes(remaining).c_str());
  if (!evicted.empty()) {
    print_daemon_notice("kdctl evict", tell_daemon_cache_changed(socket_of(DaemonArgs{a.socket, dir.string()}), dir, evicted));
  }
  if (max_bytes && remaining > *max_bytes) {
    std::fprintf(stderr, "kdctl evict: still %s, over the %s cap: the other records do not match the filters\n",
                 format_bytes(remaining).c_str(), format_bytes(*max_bytes).c_str());
  }
  return kOk;
}

}  // namespace

void setup_evict(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_evict);
  add_cache_dir_flag(sub, a->cache_dir);
  sub.add_option("--older-than", a->older_than, "Evict records created longer ago than this (30d, 12h, 90m, 2w)");
  sub.add_option("--max-size", a->max_size,
                 "Evict the oldest records until the records' total serialized size is at most this (500M, 2G)");
  sub.add_option("--gpu", a->gpu, "Only records for GPUs whose name contains this text");
  sub.add_option("--key-pattern", a->key_pattern,
                 "Only records whose shape line matches this glob ('gemm a=bf16 *', 'layernorm *', '* dtype=bf16 *')");
  sub.add_flag("--damaged", a->damaged, "Also evict records that do not decode");
  sub.add_flag("--dry-run", a->dry_run, "Print what would be evicted; change nothing");
  add_socket_flag(sub, a->socket);
  sub.footer("--gpu and --key-pattern select records; --older-than and --max-size pick among them (alone, the\n"
             "filters evict every selected record). A kdispatchd serving the cache (found on --socket) is then told,\n"
             "and its subscribed processes drop the entries at once. Exit codes: 0 ok, 1 no cache or a write failed, 2 usage.\n");
}

}  // namespace kd::kdctl
