#include "remote/redis_link.hpp"

#include <sys/time.h>

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include "llm/api_key.hpp"

namespace kd::daemon {
namespace {

struct FreeReply {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, FreeReply>;

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

Reply copy(const redisReply& r) {
  Reply out;
  switch (r.type) {
    case REDIS_REPLY_STRING: out.kind = Reply::Kind::string; break;
    case REDIS_REPLY_STATUS: out.kind = Reply::Kind::status; break;
    case REDIS_REPLY_ERROR: out.kind = Reply::Kind::error; break;
    case REDIS_REPLY_INTEGER: out.kind = Reply::Kind::integer; break;
    case REDIS_REPLY_ARRAY: out.kind = Reply::Kind::array; break;
    default: out.kind = Reply::Kind::nil; break;
  }
  if (r.str != nullptr) out.text.assign(r.str, r.len);
  out.integer = r.integer;
  for (std::size_t i = 0; i < r.elements; ++i)
    if (r.element[i] != nullptr) out.elements.push_back(copy(*r.element[i]));
  return out;
}

std::string failure(const redisContext* c, const std::string& where) {
  return fmt::format("Redis at {}: {}", where, c != nullptr && c->err != 0 ? c->errstr : "connection lost");
}

}  // namespace

void RedisLink::Free::operator()(redisContext* c) const noexcept { redisFree(c); }

std::string load_remote_password(const RemoteSettings& s) {
  llm::KeySource source = llm::NoKey{};
  if (!s.password_env.empty()) source = llm::KeyFromEnv{s.password_env};
  else if (!s.password_file.empty()) source = llm::KeyFromFile{s.password_file};
  else return {};
  return llm::load_api_key(source).reveal();
}

RedisLink::RedisLink(const RedisLogin& login) : where_(login.endpoint.url()) {
  ctx_.reset(redisConnectWithTimeout(login.endpoint.host.c_str(), login.endpoint.port, to_timeval(login.timeout)));
  if (!ctx_ || ctx_->err != 0) throw RedisDown(failure(ctx_.get(), where_));
  if (redisSetTimeout(ctx_.get(), to_timeval(login.timeout)) != REDIS_OK) throw RedisDown(failure(ctx_.get(), where_));
  if (!login.password.empty()) {
    std::vector<std::string_view> auth{"AUTH"};
    if (!login.user.empty()) auth.push_back(login.user);
    auth.push_back(login.password);
    const Reply r = command(auth);
    // Redis's reply to a wrong password names no secret; it is passed on as it is.
    if (r.kind == Reply::Kind::error) throw RedisDown(fmt::format("Redis at {} refused the login: {}", where_, r.text));
  }
  if (login.endpoint.db != 0) {
    const std::string db = std::to_string(login.endpoint.db);
    const Reply r = command({"SELECT", db});
    if (r.kind == Reply::Kind::error) throw RedisDown(fmt::format("Redis at {}: SELECT {}: {}", where_, db, r.text));
  }
}

RedisLink::~RedisLink() = default;
RedisLink::RedisLink(RedisLink&&) noexcept = default;
RedisLink& RedisLink::operator=(RedisLink&&) noexcept = default;

Reply RedisLink::command(const std::vector<std::string_view>& argv) {
  return std::move(pipeline({argv}).front());
}

std::vector<Reply> RedisLink::pipeline(const std::vector<std::vector<std::string_view>>& commands) {
  if (!ctx_ || ctx_->err != 0) throw RedisDown(failure(ctx_.get(), where_));
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  for (const auto& argv : commands) {
    args.clear();
    lengths.clear();
    for (const auto a : argv) {
      args.push_back(a.data());
      lengths.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_.get(), static_cast<int>(args.size()), args.data(), lengths.data()) != REDIS_OK)
      throw RedisDown(failure(ctx_.get(), where_));
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_.get(), &raw) != REDIS_OK || raw == nullptr) throw RedisDown(failure(ctx_.get(), where_));
    const ReplyPtr reply(static_cast<redisReply*>(raw));
    replies.push_back(copy(*reply));
  }
  return replies;
}

}  // namespace kd::daemon
