#include "server/server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "server/peer_access.hpp"
#include "server/session.hpp"

namespace kd::daemon {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

std::string payload_frame(std::string_view type, const std::string& payload) {
  if (!protocol::fits_in_frame(payload.size())) {
    // Every reply is bounded where it is built; reaching this is a bug, and the client gets an
    // error instead of a frame it could not read (the connection stays).
    spdlog::error("a '{}' reply of {} bytes exceeds the {}-byte frame limit; answered with an error", type,
                  payload.size(), protocol::kMaxFramePayloadBytes);
    return error_frame(fmt::format("the '{}' reply would be {} bytes, over the {}-byte frame limit; ask for less",
                                   type, payload.size(), protocol::kMaxFramePayloadBytes));
  }
  return protocol::encode_frame(payload);
}

std::string error_frame(const std::string& message) {
  // Cut so that it always fits a frame (a message may echo what a client sent).
  return protocol::encode(protocol::ErrorMessage{protocol::truncate_utf8(message, protocol::kMaxErrorMessageBytes)});
}

std::string object_fitting_list(std::string_view type, nlohmann::json object, const char* list) {
  if (std::string payload = protocol::dump_payload(object); protocol::fits_in_frame(payload.size()))
    return protocol::encode_frame(payload);
  constexpr std::size_t kBudget = protocol::kMaxFramePayloadBytes - 64;  // room for "<list>_omitted"
  const auto fits_with = [&](std::size_t n) {
    nlohmann::json copy = object;
    auto& a = copy[list];
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(n), a.end());
    return protocol::dump_payload(copy).size() <= kBudget;
  };
  const std::size_t total = object[list].size();
  std::size_t lo = 0, hi = total;  // the largest n that fits lies in [lo, hi)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (fits_with(mid) ? lo : hi) = mid;
  }
  auto& a = object[list];
  a.erase(a.begin() + static_cast<std::ptrdiff_t>(lo), a.end());
  object[std::string(list) + "_omitted"] = total - lo;
  return payload_frame(type, protocol::dump_payload(object));
}

protocol::JobEntry job_entry(const Job& j) {
  protocol::JobEntry e;
  e.key = j.key;
  e.state = std::string(to_string(j.state));
  e.count = j.count;
  e.priority = j.priority();
  e.attempts = j.attempts;
  e.reason = protocol::truncate_utf8(j.reason, kMaxJobTextBytes);
  return e;
}

Server::Server(asio::io_context& io, const Config& config, JobQueue& queue, Metrics& metrics,
               ClientStatsBook& client_stats, ServerHooks hooks)
    : io_(io), config_(config), queue_(queue), metrics_(metrics), client_stats_(client_stats),
      hooks_(std::move(hooks)), acceptor_(io) {}

Server::~Server() { stop(); }

void Server::start() {
  const auto& path = config_.socket;
  // sockaddr_un holds 108 bytes including the terminating zero.
  if (path.string().size() >= 108)
    throw Error(ErrorDomain::usage, 0,
                fmt::format("socket path {} is longer than the 107 bytes a Unix socket allows",
                            path.string()));
  std::filesystem::create_directories(path.parent_path());
  if (std::filesystem::exists(std::filesystem::symlink_status(path))) {
    local::socket probe(io_);
    boost::system::error_code ec;
    probe.connect(local::endpoint(path.string()), ec);
    if (!ec)
      throw Error(ErrorDomain::usage, 0,
                  fmt::format("another daemon is answering on {}; stop it first", path.string()));
    if (!std::filesystem::is_socket(std::filesystem::symlink_status(path)))
      throw Error(ErrorDomain::usage, 0,
                  fmt::format("{} exists and is not a socket; refusing to replace it", path.string()));
    std::filesystem::remove(path);  // stale socket of a daemon that died
  }
  acceptor_.open(local());
  // Create the file with the configured mode from the start, so no other user can connect in the
  // window before chmod. umask is process-wide, but nothing else creates files at this point.
  const mode_t old_mask = ::umask(0777 & ~config_.socket_mode);
  boost::system::error_code bind_ec;
  acceptor_.bind(local::endpoint(path.string()), bind_ec);
  ::umask(old_mask);
  if (bind_ec)
    throw Error(ErrorDomain::system, bind_ec.value(),
                fmt::format("bind {}: {}", path.string(), bind_ec.message()));
  bound_ = true;
  KD_SYS_CHECK(::chmod(path.c_str(), config_.socket_mode), path.string());
  give_socket_to_group(config_, path);  // before listen: nobody can connect yet
  acceptor_.listen(asio::socket_base::max_listen_connections);
  spdlog::info("listening on {} (mode 0{:o})", path.string(), config_.socket_mode);
  accept_next();
}

void Server::stop() {
  boost::system::error_code ignored;
  if (acceptor_.is_open()) acceptor_.close(ignored);
  // close() erases from sessions_: iterate over a copy.
  const auto sessions = sessions_;
  for (const auto& s : sessions) s->close();
  sessions_.clear();
  if (bound_) {
    std::error_code fs_ignored;
    std::filesystem::remove(config_.socket, fs_ignored);
    bound_ = false;
  }
}

void Server::accept_next() {
  acceptor_.async_accept([this](boost::system::error_code ec, local::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      auto identity = read_peer_identity(socket.native_handle());
      if (const auto* why = std::get_if<std::string>(&identity)) {
        spdlog::warn("{}; refusing the client", *why);
        metrics_.add(Counter::clients_refused);
      } else {
        const PeerIdentity& peer = std::get<PeerIdentity>(identity);
        auto session = std::make_shared<Session>(*this, std::move(socket), peer.uid, peer.pid,
                                                  next_session_id_++);
        sessions_.insert(session);
        if (admit(config_, peer) == Admission::refused) {
          metrics_.add(Counter::clients_refused);
          spdlog::warn("refusing client pid {}: uid {} is not in allowed_uids{}", peer.pid,
                       peer.uid, config_.allowed_gid ? " nor in allowed_group" : "");
          session->fail(refusal_message(config_, peer));
        } else if (sessions_.size() > config_.max_clients) {
          metrics_.add(Counter::clients_refused);
          session->fail(fmt::format("too many clients (max_clients = {})", config_.max_clients));
        } else {
          metrics_.add(Counter::clients_accepted);
          session->start();
        }
      }
    } else {
      spdlog::warn("accept: {}", ec.message());
    }
    accept_next();
  });
}

void Server::forget(const std::shared_ptr<Session>& session) {
  if (!session->stats_instance().empty())
    client_stats_.disconnected(session->stats_instance(), session->id(), unix_ms_now());
  sessions_.erase(session);
}

std::size_t Server::subscribers() const {
  return static_cast<std::size_t>(std::count_if(sessions_.begin(), sessions_.end(),
                                                [](const auto& s) { return s->subscribed(); }));
}

void Server::notify_published(std::string key, std::uint64_t generation) {
  if (publish_observer_ && !key.empty()) publish_observer_(key);
  asio::post(io_, [this, key = std::move(key), generation] {
    const std::string frame = protocol::encode(protocol::Published{key, generation, std::nullopt});
    const auto sessions = sessions_;  // a push may drop a client that does not read
    for (const auto& s : sessions)
      if (s->subscribed()) s->push_notice(frame);
  });
}

void Server::notify_evicted(std::uint64_t generation, std::uint64_t records) {
  asio::post(io_, [this, generation, records] {
    const std::string frame = reply_frame(protocol::Published{"", generation, records});
    const auto sessions = sessions_;
    for (const auto& s : sessions)
      if (s->subscribed()) s->push_notice(frame);
  });
}

}  // namespace kd::daemon
