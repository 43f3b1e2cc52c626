#include "eval/problem_scratch.hpp"

#include <algorithm>
#include <array>

#include "common/error.hpp"
#include "cuda/driver.hpp"

namespace kd::eval {
namespace {

// The scalars' layout: one 64-byte slot per kind of result.
constexpr std::uint64_t kRefStatsAt = 0, kCompareAt = 64, kGuardAt = 128, kChecksumAt = 192, kClockAt = 256,
                        kFlushSinkAt = 320, kStreamSinkAt = 384, kScalarBytes = 512;

template <class T>
T read_back(CUdeviceptr p, CUstream s) {
  KD_CU_CHECK(cu().cuStreamSynchronize(s), "evaluator stream");
  T value{};
  KD_CU_CHECK(cu().cuMemcpyDtoH(&value, p, sizeof(T)), "result scalars");
  return value;
}

}  // namespace

std::uint64_t operand_seed(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = seed + i + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

ProblemScratch::ProblemScratch(const EvalKernels& kernels, CUstream stream, std::uint64_t l2_bytes)
    : k_(kernels), stream_(stream), scalars_(kScalarBytes, "result scalars"),
      flush_(std::max<std::uint64_t>(2 * l2_bytes, 32ull << 20), "L2 flush") {}

RefStats ProblemScratch::ref_stats(CUdeviceptr ref, long long count) {
  k_.ref_stats(stream_, ref, count, scalars_.get() + kRefStatsAt);
  return read_back<RefStats>(scalars_.get() + kRefStatsAt, stream_);
}

CompareStats ProblemScratch::compare(const DeviceMatrix& out, CUdeviceptr ref, CUdeviceptr other, double floor) {
  k_.compare(stream_, out, ref, other, floor, scalars_.get() + kCompareAt);
  return read_back<CompareStats>(scalars_.get() + kCompareAt, stream_);
}

GuardStats ProblemScratch::guards(const DeviceMatrix& body, std::uint64_t body_bytes) {
  k_.check_guards(stream_, body, kGuardBytes, body_bytes, scalars_.get() + kGuardAt);
  return read_back<GuardStats>(scalars_.get() + kGuardAt, stream_);
}

GuardStats ProblemScratch::workspace_guards(const GuardedBuffer& workspace) {
  return guards(DeviceMatrix{workspace.body(), 0, 0, 1, 0, 1, 2}, workspace.body_bytes());
}

std::uint64_t ProblemScratch::checksum(const GuardedBuffer& b) {
  k_.checksum(stream_, b.base(), b.total_bytes(), scalars_.get() + kChecksumAt);
  return read_back<std::uint64_t>(scalars_.get() + kChecksumAt, stream_);
}

int ProblemScratch::probe_sm_clock_mhz() {
  k_.clock_probe(stream_, scalars_.get() + kClockAt);
  const auto v = read_back<std::array<unsigned long long, 2>>(scalars_.get() + kClockAt, stream_);
  if (v[1] == 0) return 0;
  return static_cast<int>(static_cast<double>(v[0]) * 1000.0 / static_cast<double>(v[1]));
}

void ProblemScratch::flush_l2() { k_.checksum(stream_, flush_.get(), flush_.bytes(), scalars_.get() + kFlushSinkAt); }

CUdeviceptr ProblemScratch::stream_sink() const { return scalars_.get() + kStreamSinkAt; }

EvalKernels::Copy stash_for_late_copy(DeviceBuffer& into, const GuardedBuffer& from, const char* what,
                                      CUstream stream) {
  if (into.bytes() < from.total_bytes()) into = DeviceBuffer(from.total_bytes(), what);
  KD_CU_CHECK(cu().cuMemcpyDtoDAsync(into.get(), from.base(), from.total_bytes(), stream), what);
  KD_CU_CHECK(cu().cuMemsetD8Async(from.body(), 0xFF, from.body_bytes(), stream), what);
  return {into.get(), from.base(), from.total_bytes()};
}

}  // namespace kd::eval
