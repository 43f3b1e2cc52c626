// The request table: one row per client message type (PROTOCOL.md documents each). Requests are
// decoded and replies encoded only by the protocol's codec (libdispatch/src/protocol).
#include <algorithm>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/proposer_table.hpp"
#include "kdispatch/kdispatch.h"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "protocol/requests.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "stats/client_stats.hpp"

namespace kd::daemon {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using protocol::ProtocolViolation;

// A key line made canonical and, the first time, its parse: the one parse of a key in the daemon
// (the job queue keeps it for claims and the search, queue/job.hpp).
struct CanonicalKey {
  std::string line;
  ParsedKey parsed;  // set when this call parsed the line; null when the line came from the memo
};

// The canonical key, or the parser's message: the full line when it has a device part or the
// daemon has one GPU model (`home`: a shape line is then that GPU's key, so a prewarmed shape and an
// application's miss for it are one job, not two searches), else the shape line.
// Applications report the same few keys over and over, so canonical lines are memoised per thread
// (the io thread) up to kCanonicalCacheEntries, then the memo restarts; `home` never changes while
// the daemon runs. A line from the memo comes without its parse, which went to the queue with the
// line's first miss: a repeated miss costs the copy of its line and nothing else.
constexpr std::size_t kCanonicalCacheEntries = 1 << 16;

// Keyed for the home GPU only where the keyed line still fits a job key: a shape line near the
// limit stays a shape line rather than becoming a key the job store cannot hold. `K` is GemmKey or
// RowKey (issue 33: a row-operator line is a job as a GEMM line is, always exact).
template <class K>
std::string home_keyed(K& key, const std::optional<DevicePart>& home) {
  if (key.device || !home) return key.device ? key.full_line() : key.shape_line();
  K keyed = key.with_device(*home);
  if (std::string keyed_line = keyed.full_line(); keyed_line.size() <= kMaxKeyLineBytes) {
    key = std::move(keyed);
    return keyed_line;
  }
  return key.shape_line();
}

std::variant<CanonicalKey, std::string> canonical_key(const std::string& line, const std::optional<DevicePart>& home) {
  using Result = std::variant<CanonicalKey, std::string>;
  thread_local std::unordered_map<std::string, std::string> memo;
  if (const auto it = memo.find(line); it != memo.end())
    return Result(std::in_place_index<0>, CanonicalKey{it->second, {}});
  auto parsed = parse_op_key(line);
  if (auto* err = std::get_if<KeyError>(&parsed)) return Result(std::in_place_index<1>, err->message);
  OpKey& op = std::get<OpKey>(parsed);
  std::string canonical;
  ParsedKey keyed;
  if (auto* row = std::get_if<RowKey>(&op)) {
    canonical = home_keyed(*row, home);
    keyed.row = std::make_shared<const RowKey>(std::move(*row));
  } else {
    auto& gemm = std::get<GemmKey>(op);
    canonical = home_keyed(gemm, home);
    keyed.key = std::make_shared<const GemmKey>(std::move(gemm));
  }
  if (memo.size() >= kCanonicalCacheEntries) memo.clear();
  memo.emplace(line, canonical);
  return Result(std::in_place_index<0>, CanonicalKey{std::move(canonical), std::move(keyed)});
}

// What a reply echoes of a key a client sent and of the parser's message about it: a rejected key
// may be a megabyte long, and 16 of them must still fit a reply far below the frame limit.
constexpr std::size_t kMaxEchoedKeyBytes = kMaxKeyLineBytes;
constexpr std::size_t kMaxEchoedMessageBytes = 512;
constexpr std::size_t kMaxRejectedListed = 16;

std::string echo_key(const std::string& key) { return protocol::truncate_utf8(key, kMaxEchoedKeyBytes); }

struct Rejected {
  std::vector<protocol::RejectedKey> list;
  void add(const std::string& key, const std::string& why) {
    if (list.size() < kMaxRejectedListed)
      list.push_back({echo_key(key), protocol::truncate_utf8(why, kMaxEchoedMessageBytes)});
  }
};

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

void on_hello(Server& server, Session& session, const protocol::Hello&) {
  session.reply(reply_frame(protocol::HelloOk{
      protocol::kProtocolVersion, KD_VERSION_STRING, server.queue().generation(),
      {std::string(protocol::kFeatureClientStats), std::string(protocol::kFeatureUsage)}}));
}

void on_miss(Server& server, Session& session, const protocol::Miss& m) {
  std::vector<MissReport> misses;
  Rejected rejected;
  for (const protocol::MissEntry& e : m.keys) {
    server.metrics().add(Counter::miss_keys_received);
    server.metrics().add(Counter::misses_reported, e.count);
    auto canon = canonical_key(e.key, server.home_device());
    if (canon.index() == 1) {
      server.metrics().add(Counter::miss_keys_rejected);
      rejected.add(e.key, std::get<1>(canon));
      continue;
    }
    CanonicalKey& c = std::get<0>(canon);
    misses.push_back({std::move(c.line), e.count, std::move(c.parsed)});
  }
  server.metrics().add(Counter::client_hits, m.hits);
  const std::size_t accepted = misses.size();
  Completion done;
  if (m.ack) {
    done = reply_later(server, session, session.reserve_reply(), [accepted, rejected = std::move(rejected.list)] {
      return reply_frame(protocol::MissAck{accepted, rejected});
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

void on_subscribe(Server& server, Session& session, const protocol::Subscribe&) {
  session.set_subscribed();
  session.reply(reply_frame(protocol::Subscribed{server.queue().generation()}));
}

// The codec checked every field and limit: a well-formed report whose counters went down is
// counted as rejected and ignored.
void on_client_stats(Server& server, Session& session, const protocol::ClientStats& r) {
  if (!session.stats_instance().empty() && session.stats_instance() != r.instance)
    throw ProtocolViolation(fmt::format("protocol: this connection reports counters for instance '{}', not '{}'",
                                        session.stats_instance(), r.instance));
  session.set_stats_instance(r.instance);
  switch (server.client_stats().record(r, session.id(), unix_ms_now())) {
    case ClientStatsBook::Outcome::counted: server.metrics().add(Counter::client_stats_received); break;
    case ClientStatsBook::Outcome::counters_went_down:
      server.metrics().add(Counter::client_stats_rejected);
      spdlog::debug("client pid {} ({}): client_stats counters went down; report ignored", r.pid, r.program);
      break;
  }
}

void on_zero_stats(Server& server, Session& session, const protocol::ZeroStats&) {
  spdlog::info("client counters zeroed by client pid {} (uid {})", session.peer_pid(), session.peer_uid());
  server.client_stats().zero(unix_ms_now());
  save_client_stats(server.client_stats(), server.queue(), /*force=*/true,
                    [&io = server.io(), self = session.shared_from_this(),
                     slot = session.reserve_reply()](bool committed, const std::string& error) {
                      asio::post(io, [self, slot, committed, error] {
                        self->fill_reply(slot, committed ? reply_frame(protocol::StatsZeroed{})
                                                         : error_frame("commit failed: " + error));
                      });
                    });
}

void on_prewarm(Server& server, Session& session, const protocol::Prewarm& p) {
  if (!p.proposer.empty()) {
    // The same comma list the daemon's `proposer` setting takes ("builtin,cublaslt").
    const auto names = search::parse_proposer_list(p.proposer);
    if (const auto* err = std::get_if<std::string>(&names)) throw ProtocolViolation("protocol: proposer: " + *err);
  }
  const JobBudgets budgets{p.budgets.rounds, p.budgets.candidates, p.budgets.wall_seconds, p.budgets.llm_tokens};
  std::vector<PrewarmRequest> requests;
  Rejected rejected;
  for (const std::string& key : p.keys) {
    auto canon = canonical_key(key, server.home_device());
    if (canon.index() == 1) {
      server.metrics().add(Counter::miss_keys_rejected);
      rejected.add(key, std::get<1>(canon));
      continue;
    }
    CanonicalKey& c = std::get<0>(canon);
    requests.push_back({std::move(c.line), p.proposer, budgets, std::move(c.parsed)});
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
          self->fill_reply(slot, r.committed ? reply_frame(protocol::PrewarmOk{queued, list})
                                             : error_frame("commit failed: " + r.error));
        });
        if (r.committed && work_added) work_added();
      });
}

void on_status(Server& server, Session& session, const protocol::StatusQuery& q) {
  const auto top = static_cast<std::size_t>(std::min(q.jobs, protocol::kMaxTopJobs));
  const protocol::Status status = server.hooks().status(top);
  session.reply(status.top_jobs ? reply_fitting_list(status, "top_jobs") : reply_frame(status));
}

void on_stats(Server& server, Session& session, const protocol::StatsQuery&) {
  session.reply(reply_frame(server.hooks().stats()));
}

// The jobs of given keys, for a client that follows its own (kdctl prewarm); the codec bounds
// their number (protocol::kMaxJobsPerRequest) so that the reply fits a frame.
void on_jobs(Server& server, Session& session, const protocol::JobsQuery& q) {
  protocol::JobsReply reply;
  std::vector<std::string> lookups;         // the canonical lines of the keys that parse
  std::vector<std::size_t> lookup_entries;  // their entries in reply.jobs
  for (const std::string& raw : q.keys) {
    auto canon = canonical_key(raw, server.home_device());
    if (canon.index() == 1) {
      protocol::JobEntry& invalid = reply.jobs.emplace_back();
      invalid.key = echo_key(raw);
      invalid.state = "invalid";
      invalid.reason = protocol::truncate_utf8(std::get<1>(canon), kMaxEchoedMessageBytes);
      continue;
    }
    lookups.push_back(std::move(std::get<0>(canon).line));
    lookup_entries.push_back(reply.jobs.size());
    reply.jobs.push_back({raw, "unknown"});
  }
  // By key in the jobs database, in one read transaction: no scan, whatever the queue holds.
  const std::vector<std::optional<Job>> found = server.queue().find_each(lookups);
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (!found[i]) continue;
    const Job& job = *found[i];
    protocol::JobEntry& entry = reply.jobs[lookup_entries[i]];
    std::string raw = std::move(entry.key);  // as asked, so that the client finds its own spelling
    entry = job_entry(job);
    entry.key = std::move(raw);
    if (job.state == JobState::running && server.hooks().progress)
      entry.progress = protocol::truncate_utf8(server.hooks().progress(job.key), kMaxJobTextBytes);
  }
  session.reply(reply_fitting_list(reply, "jobs"));
}

// Another process (kdctl import or evict) wrote the cache: re-read its generation and tell the
// subscribers, so that they load the new records now instead of at a restart.
constexpr std::size_t kMaxNoticesPerChange = 256;

void on_cache_changed(Server& server, Session& session, const protocol::CacheChanged& c) {
  std::vector<std::string> keys;
  for (const std::string& k : c.keys) {
    if (keys.size() >= kMaxNoticesPerChange) break;
    auto canon = canonical_key(k, server.home_device());
    if (canon.index() == 0) keys.push_back(std::move(std::get<0>(canon).line));
  }
  spdlog::info("client pid {} changed the cache ({} key(s)); re-reading its generation", session.peer_pid(),
               c.keys.size());
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
      self->fill_reply(slot, reply_frame(protocol::CacheChangedOk{after, before, subscribers}));
    });
  });
}

void on_cancel(Server& server, Session& session, const protocol::Cancel& c) {
  auto canon = canonical_key(c.key, server.home_device());
  if (canon.index() == 1) {
    session.reply(reply_frame(protocol::CancelOk{false, std::get<1>(canon)}));
    return;
  }
  const std::string key = std::move(std::get<0>(canon).line);
  const auto slot = session.reserve_reply();
  server.queue().cancel(key, [&server, self = session.shared_from_this(), slot, key](
                                 const CommitResult& r, bool found) {
    asio::post(server.io(), [&server, self, slot, key, r, found] {
      if (r.committed && found && server.hooks().cancelled) server.hooks().cancelled(key);
      self->fill_reply(slot, r.committed ? reply_frame(protocol::CancelOk{found, std::nullopt})
                                         : error_frame("commit failed: " + r.error));
    });
  });
}

// Which records an application hit since its last report (libkdispatch's usage marks): the
// last-use times least-recently-used eviction goes by. No reply.
void on_usage(Server& server, Session&, const protocol::Usage& u) { server.queue().note_usage(u.keys, unix_ms_now()); }

// Removes finished jobs now (kdctl purge). Runs off the io thread; the reply says what went.
void on_purge(Server& server, Session& session, const protocol::Purge& p) {
  PurgeRequest request;
  for (const std::string& name : p.states) {
    const auto state = job_state_from(name);
    if (!state || *state == JobState::queued || *state == JobState::running) {
      session.reply(error_frame("purge removes finished jobs: states are done, failed and cancelled, not " +
                                json(name).dump(-1, ' ', false, json::error_handler_t::replace)));
      return;
    }
    request.states.push_back(*state);
  }
  constexpr std::uint64_t kMaxAgeS = std::uint64_t{1} << 40;
  // Finished at or before now minus the age (the bound is exclusive): a job cancelled in this very
  // millisecond is "older than 0 s" too.
  request.before_unix_ms =
      unix_ms_now() - static_cast<std::int64_t>(std::min(p.older_than_s, kMaxAgeS) * 1000) + 1;
  if (p.dry_run) request.mode = PurgeRequest::Mode::count_only;
  if (!server.hooks().purge) {
    session.reply(error_frame("this daemon cannot purge"));
    return;
  }
  spdlog::info("purge of finished jobs older than {} s requested by client pid {} (uid {}){}", p.older_than_s,
               session.peer_pid(), session.peer_uid(), p.dry_run ? " (dry run)" : "");
  server.hooks().purge(
      std::move(request), [&io = server.io(), self = session.shared_from_this(), slot = session.reserve_reply(),
                           dry_run = p.dry_run](const std::optional<PurgeResult>& result, const std::string& error) {
        std::string frame;
        if (result) {
          const auto of = [&](JobState s) { return result->by_state[static_cast<std::size_t>(s)]; };
          frame = reply_frame(protocol::PurgeOk{
              {of(JobState::done), of(JobState::failed), of(JobState::cancelled)}, result->total(), dry_run});
        } else {
          frame = error_frame("purge failed: " + error);
        }
        asio::post(io, [self, slot, frame = std::move(frame)] { self->fill_reply(slot, frame); });
      });
}

void on_shutdown(Server& server, Session& session, const protocol::Shutdown&) {
  spdlog::info("shutdown requested by client pid {} (uid {})", session.peer_pid(), session.peer_uid());
  session.reply(reply_frame(protocol::ShutdownOk{}));
  if (server.hooks().shutdown) asio::post(server.io(), server.hooks().shutdown);
}

using Handler = void (*)(Server&, Session&, const json&);
struct RequestType {
  std::string_view type;
  Handler handle;
};
// A row: the request's type and its handler, called with the request decoded by the codec.
template <class Request, void (*Handle)(Server&, Session&, const Request&)>
constexpr RequestType row() {
  return {Request::kType, [](Server& server, Session& session, const json& body) {
            Handle(server, session, body.get<Request>());
          }};
}
constexpr RequestType kRequests[] = {
    row<protocol::Hello, on_hello>(),
    row<protocol::Miss, on_miss>(),
    row<protocol::Subscribe, on_subscribe>(),
    row<protocol::ClientStats, on_client_stats>(),
    row<protocol::Prewarm, on_prewarm>(),
    row<protocol::StatusQuery, on_status>(),
    row<protocol::StatsQuery, on_stats>(),
    row<protocol::ZeroStats, on_zero_stats>(),
    row<protocol::Cancel, on_cancel>(),
    row<protocol::Shutdown, on_shutdown>(),
    row<protocol::JobsQuery, on_jobs>(),
    row<protocol::CacheChanged, on_cache_changed>(),
    row<protocol::Usage, on_usage>(),
    row<protocol::Purge, on_purge>(),
};

}  // namespace

void Server::handle_payload(Session& session, const std::string& payload) {
  try {
    const protocol::Envelope e = protocol::open_envelope(payload);
    for (const auto& r : kRequests) {
      if (r.type == e.type) {
        r.handle(*this, session, e.body);
        return;
      }
    }
    throw ProtocolViolation(fmt::format("protocol: unknown message type '{}'", e.type));
  } catch (const ProtocolViolation& e) {
    metrics_.add(Counter::protocol_errors);
    spdlog::debug("client pid {}: {}", session.peer_pid(), e.what());
    session.fail(e.what());
  } catch (const std::exception& e) {
    metrics_.add(Counter::protocol_errors);
    session.fail(std::string("protocol: ") + e.what());
  }
}

}  // namespace kd::daemon
