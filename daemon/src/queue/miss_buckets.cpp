#include "queue/miss_buckets.hpp"

#include <variant>

#include "key/gemm_key.hpp"

namespace kd::daemon {

std::optional<std::string> bucket_line(const std::string& canonical_line, const NBuckets& buckets) {
  if (buckets.edges().empty()) return std::nullopt;
  const auto parsed = parse_key(canonical_line);
  const auto* key = std::get_if<GemmKey>(&parsed);
  if (key == nullptr || key->is_range()) return std::nullopt;
  const auto bucket = buckets.bucket_of(key->n);
  if (!bucket || bucket->first == bucket->second) return std::nullopt;
  const GemmKey ranged = key->with_n_range(bucket->first, bucket->second);
  std::string line = ranged.device ? ranged.full_line() : ranged.shape_line();
  // A range of n must hold for its largest n (ldb >= n when tb=T): a key whose other fields tie
  // it to its own n stays exact.
  if (!std::holds_alternative<GemmKey>(parse_key(line))) return std::nullopt;
  return line;
}

}  // namespace kd::daemon
