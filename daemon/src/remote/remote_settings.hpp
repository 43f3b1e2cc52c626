// The remote tier's settings (issue 31): where the fleet's Redis is, how this daemon proves who it
// is, and whether records from it must pass this machine's gate. The keys live in the daemon's one
// table (config/config.cpp, "remote*" rows); their parsers are here.
//
// Credentials never appear in the URL: a URL with user information is refused, so `remote` can be
// logged, printed by --print-config and shown in status as it is. The password comes from an
// environment variable or a file only its owner can read (the rules of llm_key_file).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace kd::daemon {

struct Config;

// Where records from the tier may run: after this machine's validation gate passed them (verify),
// or at once (trusted: every daemon writing to this Redis is trusted as this one is).
enum class RemoteTrust : std::uint8_t { verify, trusted };
std::string_view to_string(RemoteTrust t);

// redis://HOST[:PORT][/DB]. HOST may be a name, an IPv4 address or [IPv6].
struct RemoteEndpoint {
  std::string host;
  std::uint16_t port = 6379;
  unsigned db = 0;
  std::string url() const;  // the canonical URL, without credentials (there are none)
};
// The endpoint, or why `url` is not one (in words, with the fix). rediss:// (TLS) is refused with
// the reason: Debian's hiredis (0.14) has no TLS; a TLS tunnel (stunnel, spiped) on loopback is
// the way to cross an untrusted network.
std::variant<RemoteEndpoint, std::string> parse_remote_url(const std::string& url);

struct RemoteSettings {
  std::optional<RemoteEndpoint> endpoint;  // nullopt: no remote tier (remote = "")
  std::string user;                        // ACL user for AUTH (Redis 6); empty: password only
  std::string password_env;                // variable holding the password
  std::string password_file;               // or a file (mode 0600/0400, owned by the daemon's user)
  std::string key_prefix = "kdispatch";    // every key the tier writes starts with "<prefix>:"
  RemoteTrust trust = RemoteTrust::verify;
  std::chrono::milliseconds lease{30000};   // a search's lease; renewed every third of it
  std::chrono::milliseconds poll{1000};     // queued keys are looked up again this often
  std::chrono::milliseconds timeout{250};   // connect and command timeout
};

// Parsers for the config table rows (config.cpp): store `text` or return why not.
std::optional<std::string> parse_remote(Config& c, const std::string& text);
std::optional<std::string> parse_remote_user(Config& c, const std::string& text);
std::optional<std::string> parse_remote_password_env(Config& c, const std::string& text);
std::optional<std::string> parse_remote_password_file(Config& c, const std::string& text);
std::optional<std::string> parse_remote_prefix(Config& c, const std::string& text);
std::optional<std::string> parse_remote_trust(Config& c, const std::string& text);
std::optional<std::string> parse_remote_lease_ms(Config& c, const std::string& text);
std::optional<std::string> parse_remote_poll_ms(Config& c, const std::string& text);
std::optional<std::string> parse_remote_timeout_ms(Config& c, const std::string& text);

}  // namespace kd::daemon
