// The request table: one row per client message type (PROTOCOL.md documents each).
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/proposer_list.hpp"
#include "kdispatch/kdispatch.h"
#include "key/gemm_key.hpp"
#include "protocol/messages.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "stats/client_stats.hpp"

namespace kd::daemon {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// A frame that does not follow the protocol: the client gets an error frame and is dropped.
struct ProtocolViolation {
  std::string message;
};

const json& field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end()) throw ProtocolViolation{fmt::format("protocol: field '{}' is missing", name)};
  return *it;
}

std::string string_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string()) throw ProtocolViolation{fmt::format("protocol: field '{}' must be a string", name)};
  return v.get<std::string>();
}

std::uint64_t unsigned_field(const json& j, const char* name, std::optional<std::uint64_t> fallback) {
  const auto it = j.find(name);
  if (it == j.end() && fallback) return *fallback;
  if (it == j.end() || !it->is_number_unsigned())
    throw ProtocolViolation{fmt::format("protocol: field '{}' must be a non-negative integer", name)};
  return it->get<std::uint64_t>();
}

bool bool_field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end()) return false;
  if (!it->is_boolean()) throw ProtocolViolation{fmt::format("protocol: field '{}' must be a boolean", name)};
  return it->get<bool>();
}

// The canonical line of a key, or the parser's message: the full line when it has a device part
// or the daemon has one GPU model (`home`: a shape line is then that GPU's key, so a prewarmed shape
// and an application's miss for it are one job, not two searches), else the shape line.
// Applications report the same few keys over and over, so canonical forms are memoised per thread
// (the io thread) up to kCanonicalCacheEntries, then the memo restarts; `home` never changes while
// the daemon runs.
constexpr std::size_t kCanonicalCacheEntries = 1 << 16;

std::variant<std::string, std::string> canonical_key(const std::string& line, const std::optional<DevicePart>& home) {
  using Result = std::variant<std::string, std::string>;
  thread_local std::unordered_map<std::string, std::string> memo;
  if (const auto it = memo.find(line); it != memo.end()) return Result(std::in_place_index<0>, it->second);
  auto parsed = parse_key(line);
  if (auto* err = std::get_if<KeyError>(&parsed)) return Result(std::in_place_index<1>, err->message);
  const auto& key = std::get<GemmKey>(parsed);
  std::string canonical = key.device ? key.full_line() : key.shape_line();
  // Keyed for the home GPU only where the keyed line still fits a job key: a shape line near the
  // limit stays a shape line rather than becoming a key the job store cannot hold.
  if (!key.device && home) {
    std::string keyed = key.with_device(*home).full_line();
    if (keyed.size() <= kMaxKeyLineBytes) canonical = std::move(keyed);
  }
  if (memo.size() >= kCanonicalCacheEntries) memo.clear();
  memo.emplace(line, canonical);
  return Result(std::in_place_index<0>, std::move(canonical));
}

// What a reply echoes of a key a client sent and of the parser's message about it: a rejected key
// may be a megabyte long, and 16 of them must still fit a reply far below the frame limit.
constexpr std::size_t kMaxEchoedKeyBytes = kMaxKeyLineBytes;
constexpr std::size_t kMaxEchoedMessageBytes = 512;
constexpr std::size_t kMaxRejectedListed = 16;

std::string echo_key(const std::string& key) { return protocol::truncate_utf8(key, kMaxEchoedKeyBytes); }

struct Rejected {
  json list = json::array();
  void add(const std::string& key, const std::string& why) {
    if (list.size() < kMaxRejectedListed)
      list.push_back({{"key", echo_key(key)}, {"message", protocol::truncate_utf8(why, kMaxEchoedMessageBytes)}});
  }
};

// A reply whose array `list` is cut from its end until the frame fits; `<list>_omitted` then
// says how many entries were left out. For replies whose list length the client chooses.
std::string reply_fitting_list(const char* type, json fields, const char* list) {
  fields["v"] = protocol::kProtocolVersion;
  fields["type"] = type;
  const auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  if (std::string payload = dump(fields); protocol::fits_in_frame(payload.size()))
    return protocol::encode_frame(payload);
  constexpr std::size_t kBudget = protocol::kMaxFramePayloadBytes - 64;  // room for "<list>_omitted"
  const auto fits_with = [&](std::size_t n) {
    json copy = fields;
    auto& a = copy[list];
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(n), a.end());
    return dump(copy).size() <= kBudget;
  };
  const std::size_t total = fields[list].size();
  std::size_t lo = 0, hi = total;  // the largest n that fits lies in [lo, hi)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (fits_with(mid) ? lo : hi) = mid;
  }
  auto& a = fields[list];
  a.erase(a.begin() + static_cast<std::ptrdiff_t>(lo), a.end());
  fields[std::string(list) + "_omitted"] = total - lo;
  return reply_frame(type, std::move(fields));
}

// Completion that fills `slot` of `session` on the io thread with `make(result)`.
template <class Make>
Completion reply_later(Server& server, Session& session, std::uint64_t slot, Make make) {
  return [&io = server.io(), self = session.shared_from_this(), slot,
          make = std::move(make)](const CommitResult& r) mutable {
    asio::post(io, [self, slot, r, make = std::move(make)] {
      self->fill_reply(slot, r.committed ? make() : error_frame("commit failed: " + r.error));
    });
  };
}

void on_hello(Server& server, Session& session, const json& j) {
  (void)unsigned_field(j, "pid", std::nullopt);
  (void)string_field(j, "client");
  session.reply(reply_frame("hello_ok", {{"version", protocol::kProtocolVersion},
                                         {"daemon", KD_VERSION_STRING},
                                         {"generation", server.queue().generation()},
                                         {"features", {protocol::kFeatureClientStats, protocol::kFeatureUsage}}}));
}

void on_miss(Server& server, Session& session, const json& j) {
  std::vector<MissReport> misses;
  Rejected rejected;
  const auto take = [&](const json& entry) {
    const std::string key = string_field(entry, "key");
    const std::uint64_t count = unsigned_field(entry, "count", 1);
    server.metrics().add(Counter::miss_keys_received);
    server.metrics().add(Counter::misses_reported, count);
    auto canon = canonical_key(key, server.home_device());
    if (canon.index() == 1) {
      server.metrics().add(Counter::miss_keys_rejected);
      rejected.add(key, std::get<1>(canon));
      return;
    }
    misses.push_back({std::move(std::get<0>(canon)), count});
  };
  if (const auto keys = j.find("keys"); keys != j.end()) {
    if (!keys->is_array()) throw ProtocolViolation{"protocol: field 'keys' must be an array"};
    for (const auto& entry : *keys) {
      if (!entry.is_object()) throw ProtocolViolation{"protocol: miss 'keys' holds {key, count} objects"};
      take(entry);
    }
  } else {
    take(j);
  }
  server.metrics().add(Counter::client_hits, unsigned_field(j, "hits", 0));
  const bool ack = bool_field(j, "ack");
  const std::size_t accepted = misses.size();
  Completion done;
  if (ack) {
    done = reply_later(server, session, session.reserve_reply(),
                       [accepted, rejected = std::move(rejected.list)] {
                         return reply_frame("ok", {{"accepted", accepted}, {"rejected", rejected}});
                       });
  }
  if (misses.empty()) {
    if (done) done(CommitResult{true, {}});
    return;
  }
  auto work_added = server.hooks().work_added;
  server.queue().report_misses(std::move(misses), [done = std::move(done), work_added](const CommitResult& r) {
    if (done) done(r);
    if (r.committed && work_added) work_added();
  });
}

void on_subscribe(Server& server, Session& session, const json&) {
  session.set_subscribed();
  session.reply(reply_frame("ok", {{"generation", server.queue().generation()}}));
}

// Every field is checked before anything is counted: a report the protocol does not allow drops
// the client; a well-formed one whose counters went down is counted as rejected and ignored.
protocol::ClientStats client_stats_of(const json& j) {
  protocol::ClientStats r;
  const std::uint64_t pid = unsigned_field(j, "pid", std::nullopt);
  if (pid > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
    throw ProtocolViolation{"protocol: field 'pid' is not a process id"};
  r.pid = static_cast<std::int64_t>(pid);
  r.program = string_field(j, "program");
  r.instance = string_field(j, "instance");
  r.hits = unsigned_field(j, "hits", std::nullopt);
  r.misses = unsigned_field(j, "misses", std::nullopt);
  const json& fallbacks = field(j, "fallbacks");
  if (!fallbacks.is_object())
    throw ProtocolViolation{"protocol: field 'fallbacks' must be an object of reason -> count"};
  if (fallbacks.size() > protocol::kMaxFallbackReasons)
    throw ProtocolViolation{fmt::format("protocol: client_stats 'fallbacks' names more than {} reasons",
                                        protocol::kMaxFallbackReasons)};
  for (auto it = fallbacks.begin(); it != fallbacks.end(); ++it) {
    if (!it.value().is_number_unsigned())
      throw ProtocolViolation{fmt::format("protocol: fallback count '{}' must be a non-negative integer",
                                          it.key().substr(0, protocol::kMaxReasonNameBytes))};
    r.fallbacks[it.key()] = it.value().get<std::uint64_t>();
  }
  r.loads = unsigned_field(j, "loads", 0);
  r.swaps = unsigned_field(j, "swaps", 0);
  r.final = bool_field(j, "final");
  if (auto problem = protocol::client_stats_problem(r)) throw ProtocolViolation{*problem};
  return r;
}

void on_client_stats(Server& server, Session& session, const json& j) {
  protocol::ClientStats r = client_stats_of(j);
  if (!session.stats_instance().empty() && session.stats_instance() != r.instance)
    throw ProtocolViolation{fmt::format("protocol: this connection reports counters for instance '{}', not '{}'",
                                        session.stats_instance(), r.instance)};
  session.set_stats_instance(r.instance);
  switch (server.client_stats().record(r, session.id(), unix_ms_now())) {
    case ClientStatsBook::Outcome::counted: server.metrics().add(Counter::client_stats_received); break;
    case ClientStatsBook::Outcome::counters_went_down:
      server.metrics().add(Counter::client_stats_rejected);
      spdlog::debug("client pid {} ({}): client_stats counters went down; report ignored", r.pid, r.program);
      break;
  }
}

void on_zero_stats(Server& server, Session& session, const json&) {
  spdlog::info("client counters zeroed by client pid {} (uid {})", session.peer_pid(), session.peer_uid());
  server.client_stats().zero(unix_ms_now());
  save_client_stats(server.client_stats(), server.queue(), /*force=*/true,
                    [&io = server.io(), self = session.shared_from_this(),
                     slot = session.reserve_reply()](bool committed, const std::string& error) {
                      asio::post(io, [self, slot, committed, error] {
                        self->fill_reply(slot, committed ? reply_frame("ok", {{"zeroed", true}})
                                                         : error_frame("commit failed: " + error));
                      });
                    });
}

void on_prewarm(Server& server, Session& session, const json& j) {
  const json& keys = field(j, "keys");
  if (!keys.is_array()) throw ProtocolViolation{"protocol: field 'keys' must be an array of key lines"};
  std::string proposer;
  if (j.contains("proposer")) proposer = string_field(j, "proposer");
  if (!proposer.empty()) {
    // The same comma list the daemon's `proposer` setting takes ("builtin,cublaslt").
    const auto names = search::parse_proposer_list(proposer);
    if (const auto* err = std::get_if<std::string>(&names))
      throw ProtocolViolation{"protocol: proposer: " + *err};
  }
  JobBudgets budgets;
  if (const auto b = j.find("budgets"); b != j.end()) {
    if (!b->is_object()) throw ProtocolViolation{"protocol: field 'budgets' must be an object"};
    budgets.rounds = unsigned_field(*b, "rounds", 0);
    budgets.candidates = unsigned_field(*b, "candidates", 0);
    budgets.wall_seconds = unsigned_field(*b, "wall_seconds", 0);
    budgets.llm_tokens = unsigned_field(*b, "llm_tokens", 0);
  }
  std::vector<PrewarmRequest> requests;
  Rejected rejected;
  for (const auto& k : keys) {
    if (!k.is_string()) throw ProtocolViolation{"protocol: prewarm keys must be strings"};
    auto canon = canonical_key(k.get<std::string>(), server.home_device());
    if (canon.index() == 1) {
      server.metrics().add(Counter::miss_keys_rejected);
      rejected.add(k.get<std::string>(), std::get<1>(canon));
      continue;
    }
    requests.push_back({std::move(std::get<0>(canon)), proposer, budgets});
  }
  const std::size_t asked = requests.size();
  auto work_added = server.hooks().work_added;
  server.queue().prewarm(
      std::move(requests),
      [&io = server.io(), self = session.shared_from_this(), slot = session.reserve_reply(), asked,
       rejected = std::move(rejected), work_added](const CommitResult& r, const std::vector<Refused>& refused) mutable {
        for (const Refused& x : refused) rejected.add(x.key, x.message);  // the bound on queued jobs
        const std::size_t queued = asked - refused.size();
        asio::post(io, [self, slot, r, queued, list = std::move(rejected.list)] {
          self->fill_reply(slot, r.committed ? reply_frame("ok", {{"queued", queued}, {"rejected", list}})
                                             : error_frame("commit failed: " + r.error));
        });
        if (r.committed && work_added) work_added();
      });
}

// At most this many top jobs in a status reply (a job's entry is at most ~1.1 KB: job_json).
constexpr std::uint64_t kMaxTopJobs = 500;

void on_status(Server& server, Session& session, const json& j) {
  const auto top = static_cast<std::size_t>(std::min(unsigned_field(j, "jobs", 0), kMaxTopJobs));
  json status = server.hooks().status(top);
  if (status.contains("top_jobs")) {
    session.reply(reply_fitting_list("status", std::move(status), "top_jobs"));
    return;
  }
  session.reply(reply_frame("status", std::move(status)));
}

void on_stats(Server& server, Session& session, const json&) {
  session.reply(reply_frame("stats", server.hooks().stats()));
}

// The jobs of given keys, for a client that follows its own (kdctl prewarm). Bounded so that the
// reply fits a frame: kMaxJobsPerRequest entries of at most ~1.1 KB (job_json).
constexpr std::size_t kMaxJobsPerRequest = 500;

void on_jobs(Server& server, Session& session, const json& j) {
  const json& keys = field(j, "keys");
  if (!keys.is_array()) throw ProtocolViolation{"protocol: field 'keys' must be an array of key lines"};
  if (keys.size() > kMaxJobsPerRequest)
    throw ProtocolViolation{fmt::format("protocol: jobs asks for {} keys; at most {} per request", keys.size(),
                                        kMaxJobsPerRequest)};
  json list = json::array();
  std::vector<std::string> lookups;        // the canonical lines of the keys that parse
  std::vector<std::size_t> lookup_entries;  // their entries in `list`
  for (const auto& k : keys) {
    if (!k.is_string()) throw ProtocolViolation{"protocol: jobs keys must be strings"};
    const std::string& raw = k.get_ref<const std::string&>();
    auto canon = canonical_key(raw, server.home_device());
    if (canon.index() == 1) {
      list.push_back({{"key", echo_key(raw)},
                      {"state", "invalid"},
                      {"reason", protocol::truncate_utf8(std::get<1>(canon), kMaxEchoedMessageBytes)}});
      continue;
    }
    lookups.push_back(std::move(std::get<0>(canon)));
    lookup_entries.push_back(list.size());
    list.push_back({{"key", raw}, {"state", "unknown"}});
  }
  // By key in the jobs database, in one read transaction: no scan, whatever the queue holds.
  const std::vector<std::optional<Job>> found = server.queue().find_each(lookups);
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (!found[i]) continue;
    const Job& job = *found[i];
    json& entry = list[lookup_entries[i]];
    const json raw = std::move(entry["key"]);  // as asked, so that the client finds its own spelling
    entry = job_json(job);
    entry["key"] = raw;
    if (job.state == JobState::running && server.hooks().progress)
      entry["progress"] = protocol::truncate_utf8(server.hooks().progress(job.key), kMaxJobTextBytes);
  }
  session.reply(reply_fitting_list("jobs", {{"jobs", std::move(list)}}, "jobs"));
}

// Another process (kdctl import or evict) wrote the cache: re-read its generation and tell the
// subscribers, so that they load the new records now instead of at a restart.
constexpr std::size_t kMaxNoticesPerChange = 256;

void on_cache_changed(Server& server, Session& session, const json& j) {
  std::vector<std::string> keys;
  std::size_t named = 0;
  if (const auto it = j.find("keys"); it != j.end()) {
    if (!it->is_array()) throw ProtocolViolation{"protocol: field 'keys' must be an array of key lines"};
    named = it->size();
    for (const auto& k : *it) {
      if (!k.is_string()) throw ProtocolViolation{"protocol: cache_changed keys must be strings"};
      if (keys.size() >= kMaxNoticesPerChange) continue;
      auto canon = canonical_key(k.get<std::string>(), server.home_device());
      if (canon.index() == 0) keys.push_back(std::move(std::get<0>(canon)));
    }
  }
  spdlog::info("client pid {} changed the cache ({} key(s)); re-reading its generation", session.peer_pid(), named);
  const auto slot = session.reserve_reply();
  server.queue().sync_generation([&server, self = session.shared_from_this(), slot, keys = std::move(keys)](
                                     const CommitResult& r, std::uint64_t before, std::uint64_t after) mutable {
    asio::post(server.io(), [&server, self, slot, keys = std::move(keys), r, before, after] {
      if (!r.committed) {
        self->fill_reply(slot, error_frame("cannot read the cache generation: " + r.error));
        return;
      }
      const std::size_t subscribers = server.subscribers();
      if (keys.empty()) server.notify_published("", after);
      for (const auto& key : keys) server.notify_published(key, after);
      spdlog::info("generation {} (was {}) published to {} subscriber(s)", after, before, subscribers);
      self->fill_reply(slot, reply_frame("ok", {{"generation", after},
                                                 {"previous_generation", before},
                                                 {"subscribers", subscribers}}));
    });
  });
}

void on_cancel(Server& server, Session& session, const json& j) {
  const std::string raw = string_field(j, "key");
  auto canon = canonical_key(raw, server.home_device());
  if (canon.index() == 1) {
    session.reply(reply_frame("ok", {{"cancelled", false}, {"message", std::get<1>(canon)}}));
    return;
  }
  const std::string key = std::get<0>(canon);
  const auto slot = session.reserve_reply();
  server.queue().cancel(key, [&server, self = session.shared_from_this(), slot, key](
                                 const CommitResult& r, bool found) {
    asio::post(server.io(), [&server, self, slot, key, r, found] {
      if (r.committed && found && server.hooks().cancelled) server.hooks().cancelled(key);
      self->fill_reply(slot, r.committed ? reply_frame("ok", {{"cancelled", found}})
                                         : error_frame("commit failed: " + r.error));
    });
  });
}

// Which records an application hit since its last report (libkdispatch's usage marks): the
// last-use times least-recently-used eviction goes by. No reply.
void on_usage(Server& server, Session&, const json& j) {
  const json& keys = field(j, "keys");
  if (!keys.is_array() || keys.size() > protocol::kMaxUsageKeys)
    throw ProtocolViolation{fmt::format("protocol: usage 'keys' must be an array of at most {} key lines",
                                        protocol::kMaxUsageKeys)};
  std::vector<std::string> lines;
  lines.reserve(keys.size());
  for (const auto& k : keys) {
    if (!k.is_string()) throw ProtocolViolation{"protocol: usage keys must be strings"};
    lines.push_back(k.get<std::string>());
  }
  server.queue().note_usage(lines, unix_ms_now());
}

// Removes finished jobs now (kdctl purge). Runs off the io thread; the reply says what went.
void on_purge(Server& server, Session& session, const json& j) {
  PurgeRequest request;
  if (const auto states = j.find("states"); states != j.end()) {
    if (!states->is_array()) throw ProtocolViolation{"protocol: field 'states' must be an array of job states"};
    for (const auto& name : *states) {
      const auto state = name.is_string() ? job_state_from(name.get<std::string>()) : std::nullopt;
      if (!state || *state == JobState::queued || *state == JobState::running) {
        session.reply(error_frame("purge removes finished jobs: states are done, failed and cancelled, not " +
                                  name.dump()));
        return;
      }
      request.states.push_back(*state);
    }
  }
  const std::uint64_t older_than_s = unsigned_field(j, "older_than_s", 0);
  constexpr std::uint64_t kMaxAgeS = std::uint64_t{1} << 40;
  request.before_unix_ms = unix_ms_now() - static_cast<std::int64_t>(std::min(older_than_s, kMaxAgeS) * 1000);
  if (bool_field(j, "dry_run")) request.mode = PurgeRequest::Mode::count_only;
  const bool dry_run = request.mode == PurgeRequest::Mode::count_only;
  if (!server.hooks().purge) {
    session.reply(error_frame("this daemon cannot purge"));
    return;
  }
  spdlog::info("purge of finished jobs older than {} s requested by client pid {} (uid {}){}", older_than_s,
               session.peer_pid(), session.peer_uid(), dry_run ? " (dry run)" : "");
  server.hooks().purge(
      std::move(request), [&io = server.io(), self = session.shared_from_this(), slot = session.reserve_reply(),
                           dry_run](const std::optional<PurgeResult>& result, const std::string& error) {
        std::string frame;
        if (result) {
          json removed = json::object();
          for (const JobState s : {JobState::done, JobState::failed, JobState::cancelled})
            removed[std::string(to_string(s))] = result->by_state[static_cast<std::size_t>(s)];
          frame = reply_frame("ok", {{"removed", removed}, {"total", result->total()}, {"dry_run", dry_run}});
        } else {
          frame = error_frame("purge failed: " + error);
        }
        asio::post(io, [self, slot, frame = std::move(frame)] { self->fill_reply(slot, frame); });
      });
}

void on_shutdown(Server& server, Session& session, const json&) {
  spdlog::info("shutdown requested by client pid {} (uid {})", session.peer_pid(), session.peer_uid());
  session.reply(reply_frame("ok"));
  if (server.hooks().shutdown) asio::post(server.io(), server.hooks().shutdown);
}

using Handler = void (*)(Server&, Session&, const json&);
struct RequestType {
  std::string_view type;
  Handler handle;
};
constexpr RequestType kRequests[] = {
    {"hello", on_hello},       {"miss", on_miss},
    {"subscribe", on_subscribe}, {"client_stats", on_client_stats},
    {"prewarm", on_prewarm},   {"status", on_status},
    {"stats", on_stats},       {"zero_stats", on_zero_stats},
    {"cancel", on_cancel},     {"shutdown", on_shutdown},
    {"jobs", on_jobs},         {"cache_changed", on_cache_changed},
    {"usage", on_usage},       {"purge", on_purge},
};

}  // namespace

void Server::handle_payload(Session& session, const std::string& payload) {
  try {
    const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw ProtocolViolation{"protocol: bad JSON"};
    if (!j.is_object()) throw ProtocolViolation{"protocol: payload is not a JSON object"};
    const auto v = j.find("v");
    if (v == j.end() || !v->is_number_integer())
      throw ProtocolViolation{"protocol: missing version field 'v'"};
    if (v->get<std::int64_t>() != protocol::kProtocolVersion)
      throw ProtocolViolation{fmt::format("protocol: version {}, expected {}", v->dump(),
                                          protocol::kProtocolVersion)};
    const std::string type = string_field(j, "type");
    for (const auto& r : kRequests) {
      if (r.type == type) {
        r.handle(*this, session, j);
        return;
      }
    }
    throw ProtocolViolation{fmt::format("protocol: unknown message type '{}'", type)};
  } catch (const ProtocolViolation& e) {
    metrics_.add(Counter::protocol_errors);
    spdlog::debug("client pid {}: {}", session.peer_pid(), e.message);
    session.fail(e.message);
  } catch (const std::exception& e) {
    metrics_.add(Counter::protocol_errors);
    session.fail(std::string("protocol: ") + e.what());
  }
}

}  // namespace kd::daemon
