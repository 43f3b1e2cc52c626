#include "store/record_usage.hpp"

namespace kd {

std::string encode_usage(std::int64_t last_use_unix_ms) {
  auto v = static_cast<std::uint64_t>(last_use_unix_ms);
  std::string out(8, '\0');
  for (std::size_t i = 0; i < 8; ++i, v >>= 8) out[i] = static_cast<char>(v & 0xff);
  return out;
}

std::optional<std::int64_t> decode_usage(std::string_view bytes) {
  if (bytes.size() != 8) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = 8; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return static_cast<std::int64_t>(v);
}

}  // namespace kd
