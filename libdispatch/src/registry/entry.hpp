// A registry entry: what a calling thread needs to launch a tuned kernel (or a stored cuBLASLt
// algorithm) for one CallKey, or why it cannot. Immutable once published, except for the atomics
// marked below. An entry never owns its CUDA module, cuBLASLt descriptors or workspace: the
// background thread does (runtime/dispatcher.hpp), because a queued kernel or a captured CUDA graph
// may use them after the entry is replaced.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "registry/call_key.hpp"
#include "registry/fallback_reason.hpp"

namespace kd {

enum class EntryState : std::uint8_t {
  loaded,    // launches[] are ready in the key's context
  pending,   // the background thread is resolving it (calls fall back: not_loaded)
  negative,  // resolved to a miss: `miss_reason`, re-checked when the cache generation moves
};

struct KernelLaunch {
  CUfunction function = nullptr;
  std::array<std::uint32_t, 3> grid{};
  std::array<std::uint32_t, 3> block{};
  std::uint32_t smem_bytes = 0;
  bool pdl = false;  // a programmatic dependent of the launch before it (launch_plan.hpp)
};

inline constexpr std::size_t kMaxLaunches = 8;  // as the launch plan allows

// What launching an entry means: its plan's kernels (cuLaunchKernel), or one cublasLtMatmul with a
// stored algorithm (launch/cublaslt_entry.hpp).
enum class EntryKind : std::uint8_t { kernels, cublaslt };
struct CublasLtCall;  // launch/cublaslt_entry.hpp; owned by the entry's resources

struct Entry {
  CallKey key;
  std::uint64_t hash = 0;  // hash_call_key(key)
  EntryState state = EntryState::pending;
  FallbackReason miss_reason = FallbackReason::not_loaded;  // for pending and negative
  // Usage mark, next to `state` so that the hit path reads no other cache line: a hit loads it
  // (relaxed) and stores 1 only when it is 0, so hits on a marked entry write nothing and no hit
  // runs a locked instruction. The background thread collects and clears the marks
  // (runtime/usage_reporter.hpp) for the daemon's least-recently-used eviction.
  mutable std::atomic<std::uint8_t> used{0};
  std::uint64_t generation = 0;  // cache generation this entry was resolved at
  std::uint64_t record_id = 0;   // identity of the record it was loaded from (swap detection)

  EntryKind kind = EntryKind::kernels;
  std::uint32_t alignment_bytes = 16;
  std::uint32_t launch_count = 0;
  std::array<KernelLaunch, kMaxLaunches> launches{};
  const CublasLtCall* cublaslt = nullptr;  // kind == cublaslt: handle, descriptors, algorithm
  CUdeviceptr workspace = 0;
  std::uint64_t workspace_bytes = 0;

  // The stream that owns the workspace: the first to launch claims it. Kernels on one stream run
  // in order, so one workspace is safe per stream; other streams fall back (workspace_busy).
  // no_stream() until then: the legacy default stream is the null handle, so null cannot mean "unowned"
  // (it did, and the null stream then shared the workspace with the stream that claimed it next).
  static CUstream no_stream() noexcept { return reinterpret_cast<CUstream>(~std::uintptr_t{0}); }
  mutable std::atomic<CUstream> workspace_stream{no_stream()};
  // KD_GRAPH_WORKSPACE is on and the device has stream-ordered allocation (memory pools): a launch
  // on a capturing stream takes a workspace of its own from the graph (launch/launcher.cpp).
  bool graph_workspace = false;
  // Calls that missed on this entry; the daemon report carries it.
  mutable std::atomic<std::uint64_t> miss_count{0};
};

}  // namespace kd
