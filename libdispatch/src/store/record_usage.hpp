// The `usage` database of the cache: when each record was last used, for least-recently-used
// eviction (the daemon's max_cache_bytes).
//
//   usage   full key line -> 8-byte little-endian unix milliseconds: the later of the record's
//           publication and the last hit an application reported for it
//
// Written only by the daemon, batched (its maintenance pass), never on an application's hit path
// and never by rewriting a record. A record without a usage entry (published by an older daemon,
// imported without a daemon, or a kill before the next batch) counts as used at its own
// created_unix_s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kd {

inline constexpr const char* kUsageDb = "usage";

std::string encode_usage(std::int64_t last_use_unix_ms);
// nullopt when `bytes` is not 8 bytes long (damaged: the record then counts by its creation time).
std::optional<std::int64_t> decode_usage(std::string_view bytes);

}  // namespace kd
