// cuBLASLt records in an application, without a GPU: the dispatcher with the real CudaEntryLoader
// (only its key_line is stood in, since that asks the driver which GPU a context is) turns a
// cuBLASLt record it must not run into a negative entry with a named reason, before any CUDA call.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runtime/dispatcher.hpp"
#include "cublaslt/algo.hpp"
#include "cublaslt/library.hpp"
#include "launch/cuda_entry_loader.hpp"
#include "store/cache_store.hpp"
#include "support/call_key.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;

// A cuBLASLt of another version than the records below. No entry point is ever called: the
// version check comes first.
const CublasLtLibrary* cublaslt_12_9() noexcept {
  static const CublasLtLibrary lt = [] {
    CublasLtLibrary l;
    l.version = 120900;
    return l;
  }();
  return &lt;
}
const CublasLtLibrary* no_cublaslt() noexcept { return nullptr; }

CallKey key_for(std::int64_t m, Epilogue epilogue = Epilogue::none) {
  CallKey k = test::linear_call_key(m, 0xABC);
  k.a = k.b = k.c = DType::bf16;
  k.ta = Transpose::T;
  k.epilogue = epilogue;
  k.beta_zero = 1;
  return k;
}

std::string line_for(const CallKey& k) { return "gemm cublaslt test m=" + std::to_string(k.m); }

// The real loader with a fixed key line per call key (no driver needed for it).
class LineLoader final : public CudaEntryLoader {
public:
  using CudaEntryLoader::CudaEntryLoader;
  std::variant<std::string, FallbackReason> key_line(const CallKey& key) override { return line_for(key); }
};

Record cublaslt_record(const CallKey& k, int version, std::size_t algo_bytes = kCublasLtAlgoBytes) {
  Record r;
  r.key_line = line_for(k);
  r.kind = RecordKind::cublaslt_algo;
  r.cublaslt_algo = std::string(algo_bytes, '\x11');
  r.plan.workspace_bytes = 1 << 20;
  r.alignment_bytes = kCublasLtAlignmentBytes;
  r.cublas_version = version;
  r.proposer = "cublaslt";
  return r;
}

FallbackReason settled_reason(Dispatcher& d, const CallKey& k) {
  FallbackReason r = FallbackReason::not_loaded;
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    {
      ThreadSlot* slot = EpochDomain::instance().this_thread();
      ReadGuard guard(*slot);
      const Dispatcher::Lookup l = d.lookup(k);
      EXPECT_EQ(l.entry, nullptr) << "a cuBLASLt record was loaded without a GPU";
      r = l.reason;
    }
    if (r != FallbackReason::not_loaded) return r;
    std::this_thread::sleep_for(10ms);
  }
  return r;
}

DispatcherOptions options(const test::TempDir& dir) {
  DispatcherOptions o;
  o.cache_dir = dir.path() / "cache";
  o.poll_interval = 50ms;
  return o;
}

TEST(CublasLtRecord, FromAnotherCublasLtVersionIsAForeignRecord) {
  test::TempDir dir;
  const CallKey foreign = key_for(4096), damaged = key_for(2048), bias = key_for(1024, Epilogue::bias);
  {
    CacheWriter w(options(dir).cache_dir);
    w.commit_record(cublaslt_record(foreign, 130100));
    w.commit_record(cublaslt_record(damaged, 120900, kCublasLtAlgoBytes - 1));
    w.commit_record(cublaslt_record(bias, 120900));
  }
  Dispatcher d(options(dir), std::make_unique<LineLoader>(&cublaslt_12_9));
  EXPECT_EQ(settled_reason(d, foreign), FallbackReason::foreign_record);
  EXPECT_EQ(settled_reason(d, damaged), FallbackReason::corrupted);
  EXPECT_EQ(settled_reason(d, bias), FallbackReason::unsupported) << "bias keys cannot share a descriptor";
}

TEST(CublasLtRecord, WithoutCublasLtTheRecordFailsToLoad) {
  test::TempDir dir;
  const CallKey k = key_for(4096);
  {
    CacheWriter w(options(dir).cache_dir);
    w.commit_record(cublaslt_record(k, 130100));
  }
  Dispatcher d(options(dir), std::make_unique<LineLoader>(&no_cublaslt));
  EXPECT_EQ(settled_reason(d, k), FallbackReason::load_failed);
}

}  // namespace
}  // namespace kd
