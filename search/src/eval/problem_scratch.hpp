// What every operator's problem (eval/gate_problem.hpp) does the same way: the device scalars it
// reads back (reference statistics, comparisons, guard bands, checksums, the SM clock), the L2
// flush, the seeds of a trial's operands, and stashing an input for a dependent first launch's late
// producer. One layout and one set of helpers, so that GemmProblem and RowProblem differ only in
// their data and calls.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "eval/device_memory.hpp"
#include "eval/eval_kernels.hpp"

namespace kd::eval {

// The seed of operand `i` of a trial seeded `seed` (splitmix64: neighbouring seeds give unrelated
// streams).
std::uint64_t operand_seed(std::uint64_t seed, std::uint64_t i);

class ProblemScratch {
public:
  // Allocates the scalars and a flush buffer of twice the L2 (at least 32 MiB). Requires a current
  // context; throws kd::Error when memory runs out.
  ProblemScratch(const EvalKernels& kernels, CUstream stream, std::uint64_t l2_bytes);

  // Each runs its helper kernel and reads the result back: synchronous.
  RefStats ref_stats(CUdeviceptr ref, long long count);
  CompareStats compare(const DeviceMatrix& out, CUdeviceptr ref, CUdeviceptr other, double floor);
  // Elements that lost the sentinel around (and in the padding of) `body`, `body_bytes` long.
  GuardStats guards(const DeviceMatrix& body, std::uint64_t body_bytes);
  // The same for a workspace (a free body).
  GuardStats workspace_guards(const GuardedBuffer& workspace);
  // Of the whole guarded block.
  std::uint64_t checksum(const GuardedBuffer& b);
  // Observed SM clock in MHz (a 200 us probe).
  int probe_sm_clock_mhz();

  // Cold L2 by reading a buffer twice the L2's size. A write-based flush (memset) would leave the
  // L2 full of dirty lines whose write-back the next timed kernel pays for (ARCHITECTURE.md).
  // Asynchronous.
  void flush_l2();
  // Where streaming reads leave their (never written) sink.
  CUdeviceptr stream_sink() const;

private:
  const EvalKernels& k_;
  CUstream stream_;
  DeviceBuffer scalars_, flush_;
};

// For a candidate whose first launch is a programmatic dependent: saves `from`'s whole guarded
// block into `into` (grown as needed) and poisons its body (all bits set: NaN in every dtype);
// returns the copy that writes it back, for EvalKernels::late_copy. Asynchronous.
EvalKernels::Copy stash_for_late_copy(DeviceBuffer& into, const GuardedBuffer& from, const char* what,
                                      CUstream stream);

// How long the late producer waits before writing the inputs back: long enough that a dependent
// reading before its griddepcontrol.wait sees the poison.
inline constexpr long long kLateInputsDelayNs = 50'000;

}  // namespace kd::eval
