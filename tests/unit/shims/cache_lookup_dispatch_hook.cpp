// A test binding of shims/src/dispatch_hook.hpp that answers from a real cache, linked into
// libkdispatch_cublas_cachehook.so. Every call's key, with the device part KD_TEST_DEVICE names
// ("arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132": there is no GPU to fingerprint), is looked up
// in KD_CACHE_DIR with CacheReader, the read-only store libkdispatch uses, as the calling user. A hit
// prints one "HIT <full key line> proposer=<proposer>" line on stdout and reports Launched (the
// kernel is not launched: no GPU); anything else prints "MISS <full key line> <reason>" and is a
// miss (no_entry). It proves without a GPU that a process can read the cache a deployed daemon
// serves and find a record through the shim's whole call path (tests/integration/packaging).
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

std::optional<DevicePart> test_device() {
  const char* text = std::getenv("KD_TEST_DEVICE");
  if (text == nullptr) return std::nullopt;
  // A full line parses the device part for us: any valid shape line with the part appended.
  const auto parsed = parse_key(std::string("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1 n=1 "
                                            "k=1 lda=1 ldb=1 ldc=1 batch=1 epilogue=none beta0=1 ") +
                                text);
  const auto* key = std::get_if<GemmKey>(&parsed);
  return key != nullptr ? key->device : std::nullopt;
}

}  // namespace

DispatchResult dispatch_gemm(const GemmCall& call) noexcept {
  static std::mutex mu;  // CacheReader is not thread-safe
  try {
    const std::lock_guard lock(mu);
    static const std::optional<DevicePart> device = test_device();
    const char* dir = std::getenv("KD_CACHE_DIR");
    if (!device || dir == nullptr) {
      std::printf("MISS %s no KD_TEST_DEVICE or KD_CACHE_DIR\n", call.key.shape_line().c_str());
      return FallbackReason::no_entry;
    }
    static CacheReader reader{std::filesystem::path(dir)};
    reader.refresh();
    const std::string line = call.key.with_device(*device).full_line();
    const auto found = reader.lookup(line);
    if (const auto* record = std::get_if<Record>(&found)) {
      std::printf("HIT %s proposer=%s\n", line.c_str(), record->proposer.c_str());
      return Launched{};
    }
    std::printf("MISS %s %s%s%s\n", line.c_str(),
                std::string(to_string(std::get<LookupMiss>(found))).c_str(),
                reader.available() ? "" : ": ", reader.unavailable_reason().c_str());
    return FallbackReason::no_entry;
  } catch (...) {
    return FallbackReason::load_failed;
  }
}

}  // namespace kd::shim
