#include "verify_selection.hpp"

namespace kd::kdctl {

VerifySelection select_for_verify(const CacheSnapshot& cache, const std::string& arch, const std::string& gpu_name) {
  VerifySelection out;
  for (StoredRecord& s : cache.records()) {
    auto* r = std::get_if<Record>(&s.record);
    const auto parts = split_op_key(s.key_line);  // any operator's key
    if (r == nullptr || !parts) {
      out.damaged.push_back(s.key_line);
    } else if (parts->device.gpu == gpu_name && parts->device.arch == arch) {
      out.records.push_back(std::move(*r));
    } else {
      ++out.other_gpus;
    }
  }
  return out;
}

}  // namespace kd::kdctl
