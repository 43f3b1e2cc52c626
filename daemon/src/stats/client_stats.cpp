#include "stats/client_stats.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include <spdlog/spdlog.h>

#include "queue/job_queue.hpp"

namespace kd::daemon {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

std::uint64_t fallback_of(const CallCounters& c, std::string_view reason) {
  const auto it = c.fallbacks.find(reason);
  return it == c.fallbacks.end() ? 0 : it->second;
}

bool went_down(const CallCounters& last, const CallCounters& now) {
  if (now.hits < last.hits || now.misses < last.misses || now.loads < last.loads || now.swaps < last.swaps)
    return true;
  return std::any_of(last.fallbacks.begin(), last.fallbacks.end(),
                     [&](const auto& f) { return fallback_of(now, f.first) < f.second; });
}

// now - last, counter by counter; requires !went_down(last, now).
CallCounters difference(const CallCounters& now, const CallCounters& last) {
  CallCounters d;
  d.hits = now.hits - last.hits;
  d.misses = now.misses - last.misses;
  d.loads = now.loads - last.loads;
  d.swaps = now.swaps - last.swaps;
  for (const auto& [reason, n] : now.fallbacks)
    if (const std::uint64_t more = n - fallback_of(last, reason); more > 0) d.fallbacks.emplace(reason, more);
  return d;
}

json raw_json(const CallCounters& c) {
  return {{"hits", c.hits}, {"misses", c.misses}, {"fallbacks", c.fallbacks}, {"loads", c.loads}, {"swaps", c.swaps}};
}

// Reads what raw_json wrote; throws std::invalid_argument naming the field.
std::uint64_t stored_unsigned(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || !it->is_number_unsigned())
    throw std::invalid_argument(std::string("field '") + name + "' is not a non-negative integer");
  return it->get<std::uint64_t>();
}

std::int64_t stored_time(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer())
    throw std::invalid_argument(std::string("field '") + name + "' is not an integer");
  return it->get<std::int64_t>();
}

CallCounters stored_counters(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("counters are not an object");
  CallCounters c;
  c.hits = stored_unsigned(j, "hits");
  c.misses = stored_unsigned(j, "misses");
  c.loads = stored_unsigned(j, "loads");
  c.swaps = stored_unsigned(j, "swaps");
  const auto f = j.find("fallbacks");
  if (f == j.end() || !f->is_object()) throw std::invalid_argument("field 'fallbacks' is not an object");
  for (auto it = f->begin(); it != f->end(); ++it) {
    if (!it.value().is_number_unsigned())
      throw std::invalid_argument("fallback '" + it.key() + "' is not a non-negative integer");
    c.fallbacks.emplace(it.key(), it.value().get<std::uint64_t>());
  }
  return c;
}

}  // namespace

std::uint64_t CallCounters::fallbacks_total() const noexcept {
  std::uint64_t n = 0;
  for (const auto& [reason, count] : fallbacks) n = saturating_add(n, count);
  return n;
}

protocol::ClientCounters CallCounters::wire() const {
  const std::uint64_t failed_over = fallbacks_total();
  return {hits,  misses, {fallbacks.begin(), fallbacks.end()}, failed_over, saturating_add(hits, failed_over),
          loads, swaps};
}

CallCounters counters_of(const protocol::ClientStats& report) {
  CallCounters c;
  c.hits = report.hits;
  c.misses = report.misses;
  c.loads = report.loads;
  c.swaps = report.swaps;
  for (const auto& [reason, n] : report.fallbacks)
    if (n > 0) c.fallbacks.emplace(reason, n);
  return c;
}

ClientStatsBook::ClientStatsBook(std::int64_t now_unix_ms) : since_unix_ms_(now_unix_ms) {}

void ClientStatsBook::add_to_totals(const CallCounters& delta) {
  totals_.hits = saturating_add(totals_.hits, delta.hits);
  totals_.misses = saturating_add(totals_.misses, delta.misses);
  totals_.loads = saturating_add(totals_.loads, delta.loads);
  totals_.swaps = saturating_add(totals_.swaps, delta.swaps);
  for (const auto& [reason, n] : delta.fallbacks) {
    auto it = totals_.fallbacks.find(reason);
    if (it == totals_.fallbacks.end())
      it = totals_.fallbacks.try_emplace(totals_.fallbacks.size() < kMaxTotalReasons ? reason : "other", 0).first;
    it->second = saturating_add(it->second, n);
  }
}

ClientStatsBook::Outcome ClientStatsBook::record(const protocol::ClientStats& report,
                                                 std::uint64_t connection, std::int64_t now_unix_ms) {
  const CallCounters now = counters_of(report);
  const std::lock_guard lock(mu_);
  auto it = instances_.find(report.instance);
  if (it == instances_.end()) {
    add_to_totals(now);
    ++processes_seen_;
  } else {
    if (went_down(it->second.last, now)) return Outcome::counters_went_down;
    add_to_totals(difference(now, it->second.last));
  }
  ++change_;
  if (report.final) {
    // The process is exiting: nothing more will come from this instance.
    if (it != instances_.end()) instances_.erase(it);
    return Outcome::counted;
  }
  if (it == instances_.end()) {
    it = instances_.emplace(report.instance, Instance{}).first;
    it->second.first_report_unix_ms = now_unix_ms;
  }
  Instance& in = it->second;
  in.pid = report.pid;
  in.program = report.program;
  in.last = now;
  in.connection = connection;
  in.last_report_unix_ms = now_unix_ms;
  in.gone_unix_ms = 0;
  return Outcome::counted;
}

void ClientStatsBook::disconnected(const std::string& instance, std::uint64_t connection,
                                   std::int64_t now_unix_ms) {
  const std::lock_guard lock(mu_);
  const auto it = instances_.find(instance);
  // Another connection may have taken the instance over (the client reconnected first).
  if (it != instances_.end() && it->second.connection == connection) {
    it->second.connection = 0;
    it->second.gone_unix_ms = now_unix_ms;
    ++change_;
  }
  prune(now_unix_ms);
}

void ClientStatsBook::prune(std::int64_t now_unix_ms) {
  const std::int64_t retention_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kGoneRetention).count();
  std::vector<std::pair<std::int64_t, std::string>> gone;
  for (auto it = instances_.begin(); it != instances_.end();) {
    if (it->second.connection == 0 && it->second.gone_unix_ms + retention_ms < now_unix_ms) {
      it = instances_.erase(it);
      ++change_;
      continue;
    }
    if (it->second.connection == 0) gone.emplace_back(it->second.gone_unix_ms, it->first);
    ++it;
  }
  if (gone.size() <= kMaxGone) return;
  std::sort(gone.begin(), gone.end());
  for (std::size_t i = 0; i < gone.size() - kMaxGone; ++i) instances_.erase(gone[i].second);
  ++change_;
}

void ClientStatsBook::zero(std::int64_t now_unix_ms) {
  const std::lock_guard lock(mu_);
  totals_ = CallCounters{};
  // The live ones count again from here: their next reports add only what happens after now.
  processes_seen_ = static_cast<std::uint64_t>(std::count_if(
      instances_.begin(), instances_.end(), [](const auto& i) { return i.second.connection != 0; }));
  since_unix_ms_ = now_unix_ms;
  ++change_;
}

CallCounters ClientStatsBook::totals() const {
  const std::lock_guard lock(mu_);
  return totals_;
}

std::size_t ClientStatsBook::live() const {
  const std::lock_guard lock(mu_);
  return static_cast<std::size_t>(std::count_if(instances_.begin(), instances_.end(),
                                                [](const auto& i) { return i.second.connection != 0; }));
}

protocol::ClientsReport ClientStatsBook::report() const {
  const std::lock_guard lock(mu_);
  std::vector<const std::pair<const std::string, Instance>*> live;
  for (const auto& entry : instances_)
    if (entry.second.connection != 0) live.push_back(&entry);
  const std::size_t live_count = live.size();
  // The processes with the most calls first, as many as kMaxLiveListed and kMaxLiveListedBytes allow.
  const auto calls = [](const auto* e) {
    return saturating_add(e->second.last.hits, e->second.last.fallbacks_total());
  };
  const std::size_t considered = std::min(live.size(), kMaxLiveListed);
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(considered), live.end(),
                    [&](const auto* a, const auto* b) { return calls(a) > calls(b); });
  live.resize(considered);
  protocol::ClientsReport out{since_unix_ms_, processes_seen_, live_count, 0, totals_.wire(), {}};
  std::size_t bytes = 0;
  for (const auto* entry : live) {
    protocol::LiveClient c{entry->second.pid, entry->second.program, entry->first,
                           entry->second.first_report_unix_ms, entry->second.last_report_unix_ms,
                           entry->second.last.wire()};
    bytes += protocol::dump_payload(c).size() + 1;
    if (bytes > kMaxLiveListedBytes) break;
    out.live.push_back(std::move(c));
  }
  std::sort(out.live.begin(), out.live.end(),
            [](const auto& a, const auto& b) { return std::tie(a.pid, a.instance) < std::tie(b.pid, b.instance); });
  out.live_omitted = live_count - out.live.size();
  return out;
}

std::pair<std::string, std::uint64_t> ClientStatsBook::serialize() const {
  const std::lock_guard lock(mu_);
  json instances = json::array();
  for (const auto& [id, in] : instances_)
    instances.push_back({{"instance", id},
                         {"pid", in.pid},
                         {"program", in.program},
                         {"counters", raw_json(in.last)},
                         {"first_report_unix_ms", in.first_report_unix_ms},
                         {"last_report_unix_ms", in.last_report_unix_ms}});
  const json j{{"format", kFormat},
               {"since_unix_ms", since_unix_ms_},
               {"processes_seen", processes_seen_},
               {"totals", raw_json(totals_)},
               {"instances", std::move(instances)}};
  return {j.dump(-1, ' ', false, json::error_handler_t::replace), change_};
}

void ClientStatsBook::saved(std::uint64_t change) noexcept {
  const std::lock_guard lock(mu_);
  saved_change_ = std::max(saved_change_, change);
}

bool ClientStatsBook::dirty() const {
  const std::lock_guard lock(mu_);
  return change_ != saved_change_;
}

std::optional<std::string> ClientStatsBook::restore(std::string_view text, std::int64_t now_unix_ms) {
  std::int64_t since = 0;
  std::uint64_t seen = 0;
  CallCounters totals;
  std::map<std::string, Instance, std::less<>> instances;
  try {
    const json j = json::parse(text);
    if (!j.is_object()) return "not a JSON object";
    if (j.value("format", 0) != kFormat) return "format " + j.value("format", json()).dump() + ", expected 1";
    since = stored_time(j, "since_unix_ms");
    seen = stored_unsigned(j, "processes_seen");
    totals = stored_counters(j.at("totals"));
    const json& list = j.at("instances");
    if (!list.is_array()) return "field 'instances' is not an array";
    for (const json& e : list) {
      Instance in;
      if (!e.is_object() || !e.contains("instance") || !e["instance"].is_string() || !e.contains("program") ||
          !e["program"].is_string())
        return "an instance lacks its id or program";
      in.pid = stored_time(e, "pid");
      in.program = e["program"].get<std::string>();
      in.last = stored_counters(e.at("counters"));
      in.first_report_unix_ms = stored_time(e, "first_report_unix_ms");
      in.last_report_unix_ms = stored_time(e, "last_report_unix_ms");
      in.gone_unix_ms = now_unix_ms;  // each gets the full retention to reconnect
      instances.emplace(e["instance"].get<std::string>(), std::move(in));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  const std::lock_guard lock(mu_);
  since_unix_ms_ = since;
  processes_seen_ = seen;
  totals_ = std::move(totals);
  instances_ = std::move(instances);
  prune(now_unix_ms);
  saved_change_ = change_;
  return std::nullopt;
}

void load_client_stats(ClientStatsBook& book, JobQueue& queue) {
  const auto text = queue.get_meta(kClientStatsMetaKey);
  if (!text) return;
  if (auto problem = book.restore(*text, unix_ms_now()))
    spdlog::warn("client counters in the cache's meta database are unreadable ({}); starting from zero",
                 *problem);
}

void save_client_stats(ClientStatsBook& book, JobQueue& queue, bool force,
                       std::function<void(bool committed, const std::string& error)> done) {
  if (!force && !book.dirty()) {
    if (done) done(true, {});
    return;
  }
  auto [text, change] = book.serialize();
  queue.put_meta(kClientStatsMetaKey, std::move(text),
                 [&book, change, done = std::move(done)](const CommitResult& r) {
                   if (r.committed) book.saved(change);
                   if (done) done(r.committed, r.error);
                 });
}

}  // namespace kd::daemon
