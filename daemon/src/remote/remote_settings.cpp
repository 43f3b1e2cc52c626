#include "remote/remote_settings.hpp"

#include <charconv>

#include <fmt/format.h>

#include "config/config.hpp"

namespace kd::daemon {
namespace {

template <class T>
std::optional<T> number(std::string_view text) {
  T value{};
  const auto* end = text.data() + text.size();
  const auto res = std::from_chars(text.data(), end, value);
  if (text.empty() || res.ec != std::errc{} || res.ptr != end) return std::nullopt;
  return value;
}

std::optional<std::string> millis(std::chrono::milliseconds& out, const std::string& text, std::uint64_t least,
                                  std::uint64_t most) {
  const auto v = number<std::uint64_t>(text);
  if (!v || *v < least || *v > most) return fmt::format("expected milliseconds from {} to {}", least, most);
  out = std::chrono::milliseconds(*v);
  return std::nullopt;
}

}  // namespace

std::string_view to_string(RemoteTrust t) { return t == RemoteTrust::trusted ? "trusted" : "verify"; }

std::string RemoteEndpoint::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("redis://{}{}{}:{}/{}", v6 ? "[" : "", host, v6 ? "]" : "", port, db);
}

std::variant<RemoteEndpoint, std::string> parse_remote_url(const std::string& url) {
  using Result = std::variant<RemoteEndpoint, std::string>;
  constexpr std::string_view kScheme = "redis://";
  if (url.starts_with("rediss://"))
    return Result(std::in_place_index<1>,
                  "TLS (rediss://) needs hiredis 1.0 with TLS, and Debian's hiredis 0.14 has none: use redis:// "
                  "to a TLS tunnel on loopback (stunnel, spiped) to cross an untrusted network");
  if (!url.starts_with(kScheme))
    return Result(std::in_place_index<1>, "expected redis://HOST[:PORT][/DB]");
  std::string_view rest = std::string_view(url).substr(kScheme.size());
  if (rest.find('@') != std::string_view::npos)
    return Result(std::in_place_index<1>,
                  "credentials do not go in the URL (it is logged and shown in status): put the password "
                  "in remote_password_file or remote_password_env and the user in remote_user");
  RemoteEndpoint e;
  std::string_view hostport = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      const auto n = number<unsigned>(db);
      if (!n || *n > 15 * 1024) return Result(std::in_place_index<1>, fmt::format("'{}' is not a database number", db));
      e.db = *n;
    }
  }
  std::string_view port_text;
  if (hostport.starts_with('[')) {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return Result(std::in_place_index<1>, "an IPv6 host needs its closing ']'");
    e.host = std::string(hostport.substr(1, close - 1));
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return Result(std::in_place_index<1>, "expected :PORT after the IPv6 host");
      port_text = after.substr(1);
    }
  } else if (const auto colon = hostport.find(':'); colon != std::string_view::npos) {
    e.host = std::string(hostport.substr(0, colon));
    port_text = hostport.substr(colon + 1);
  } else {
    e.host = std::string(hostport);
  }
  if (e.host.empty()) return Result(std::in_place_index<1>, "the URL names no host");
  if (!port_text.empty()) {
    const auto p = number<std::uint16_t>(port_text);
    if (!p || *p == 0) return Result(std::in_place_index<1>, fmt::format("'{}' is not a port", port_text));
    e.port = *p;
  }
  return Result(std::in_place_index<0>, std::move(e));
}

std::optional<std::string> parse_remote(Config& c, const std::string& text) {
  c.remote.endpoint.reset();
  if (text.empty()) return std::nullopt;
  auto parsed = parse_remote_url(text);
  if (auto* why = std::get_if<std::string>(&parsed)) return *why;
  c.remote.endpoint = std::get<RemoteEndpoint>(std::move(parsed));
  return std::nullopt;
}

std::optional<std::string> parse_remote_user(Config& c, const std::string& text) {
  c.remote.user = text;
  return std::nullopt;
}

// Read after remote_password_env (table order): one source of the password, not two.
std::optional<std::string> parse_remote_password_env(Config& c, const std::string& text) {
  c.remote.password_env = text;
  return std::nullopt;
}

std::optional<std::string> parse_remote_password_file(Config& c, const std::string& text) {
  if (!text.empty() && !c.remote.password_env.empty())
    return "remote_password_env is set too: give the password one way";
  c.remote.password_file = text;
  return std::nullopt;
}

std::optional<std::string> parse_remote_prefix(Config& c, const std::string& text) {
  if (text.empty() || text.size() > 64 || text.find_first_of("*?[]\\ \t\r\n") != std::string::npos)
    return "expected 1 to 64 characters without spaces or *?[]\\ (Redis pattern characters)";
  c.remote.key_prefix = text;
  return std::nullopt;
}

std::optional<std::string> parse_remote_trust(Config& c, const std::string& text) {
  if (text == "verify") c.remote.trust = RemoteTrust::verify;
  else if (text == "trusted") c.remote.trust = RemoteTrust::trusted;
  else return "expected verify (records run after this machine's gate passed them) or trusted";
  return std::nullopt;
}

std::optional<std::string> parse_remote_lease_ms(Config& c, const std::string& text) {
  return millis(c.remote.lease, text, 300, 3'600'000);
}

std::optional<std::string> parse_remote_poll_ms(Config& c, const std::string& text) {
  return millis(c.remote.poll, text, 10, 600'000);
}

std::optional<std::string> parse_remote_timeout_ms(Config& c, const std::string& text) {
  return millis(c.remote.timeout, text, 10, 60'000);
}

}  // namespace kd::daemon
