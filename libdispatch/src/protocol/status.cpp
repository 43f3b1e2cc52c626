#include "protocol/status.hpp"

namespace kd::protocol {

using nlohmann::json;

// The counts beside "rejected" and "mismatched" in one object: written out, not a field list.
void to_json(json& j, const RemoteCounts& m) {
  j = m.counts;
  j["rejected"] = m.rejected;
  j["mismatched"] = m.mismatched;
}
void from_json(const json& j, RemoteCounts& m) {
  field::optional(j, "rejected", m.rejected);
  field::optional(j, "mismatched", m.mismatched);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "rejected" || it.key() == "mismatched") continue;
    field::read(it.value(), it.key(), m.counts[it.key()]);
  }
}

}  // namespace kd::protocol
