// A test binding of shims/src/dispatch_hook.hpp that answers from a real cache, linked into
// libkdispatch_cublas_cachehook.so. Every call's key line (kd_gemm_desc_key_line), with the device
// part KD_TEST_DEVICE names ("arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132": there is no GPU to
// fingerprint), is looked up in KD_CACHE_DIR with CacheReader, the read-only store libkdispatch
// uses, as the calling user. A hit prints one "HIT <full key line> proposer=<proposer>" line on
// stdout and reports Launched (the kernel is not launched: no GPU); anything else prints
// "MISS <full key line> <reason>" and is a miss (no_entry). It proves without a GPU that a process
// can read the cache a deployed daemon serves and find a record through the shim's whole call path
// (tests/integration/packaging).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "dispatch_hook.hpp"
#include "key/gemm_key.hpp"
#include "store/cache_store.hpp"

namespace kd::shim {
namespace {

// The full key line of `shape_line` on the device KD_TEST_DEVICE names, as the parser prints it.
std::optional<std::string> full_key_line(const char* shape_line) {
  const char* device = std::getenv("KD_TEST_DEVICE");
  if (device == nullptr) return std::nullopt;
  const auto parsed = parse_key(std::string(shape_line) + " " + device);
  const auto* key = std::get_if<GemmKey>(&parsed);
  if (key == nullptr || !key->device) return std::nullopt;
  return key->full_line();
}

}  // namespace

DispatchResult dispatch_gemm(const GemmCall& call) noexcept {
  static std::mutex mu;  // CacheReader is not thread-safe
  try {
    const std::lock_guard lock(mu);
    char shape_line[KD_KEY_LINE_BYTES];
    if (kd_gemm_desc_key_line(&call.desc, shape_line, sizeof shape_line) != KD_SUCCESS)
      return FellBack{KD_FALLBACK_UNSUPPORTED};
    const std::optional<std::string> line = full_key_line(shape_line);
    const char* dir = std::getenv("KD_CACHE_DIR");
    if (!line || dir == nullptr) {
      std::printf("MISS %s no KD_TEST_DEVICE or KD_CACHE_DIR\n", shape_line);
      return FellBack{KD_FALLBACK_NO_ENTRY};
    }
    static CacheReader reader{std::filesystem::path(dir)};
    reader.refresh();
    const auto found = reader.lookup(*line);
    if (const auto* record = std::get_if<Record>(&found)) {
      std::printf("HIT %s proposer=%s\n", line->c_str(), record->proposer.c_str());
      return Launched{};
    }
    std::printf("MISS %s %s%s%s\n", line->c_str(),
                std::string(to_string(std::get<LookupMiss>(found))).c_str(),
                reader.available() ? "" : ": ", reader.unavailable_reason().c_str());
    return FellBack{KD_FALLBACK_NO_ENTRY};
  } catch (...) {
    return FellBack{KD_FALLBACK_LOAD_FAILED};
  }
}

}  // namespace kd::shim
