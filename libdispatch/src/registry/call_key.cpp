#include "registry/call_key.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kd {

std::uint64_t hash_call_key(const CallKey& key) noexcept {
  const std::uint64_t h = XXH3_64bits(&key, sizeof(key));
  return h == 0 ? 1 : h;
}

}  // namespace kd
