// The worker side: kdispatch-worker's loop. One process per GPU, driven by its parent over
// stdin/stdout (protocol.hpp); it evaluates one candidate at a time with an in-process Evaluator,
// and enumerates cuBLASLt algorithms for the cublaslt proposer.
// A candidate that hangs is killed from outside (the parent's watchdog); one that traps or
// touches an illegal address loses the CUDA context, and the worker reports that and exits.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace kd::worker {

// Self-test modes stand in for the GPU so that the parent's watchdog and crash handling are
// tested on machines without one: echo answers every evaluation with a `not_faster` verdict and
// every cuBLASLt enumeration with two made-up algorithms; hang never answers; crash dies by
// SIGSEGV on the first request; sticky answers `crashed` (or an enumeration error) with
// "worker":"exits" and exits, like a lost CUDA context.
enum class SelfTest { none, echo, hang, crash, sticky };
std::optional<SelfTest> selftest_from_string(std::string_view name);

struct WorkerConfig {
  int device_ordinal = 0;
  std::filesystem::path roofline_dir;
  SelfTest selftest = SelfTest::none;
};

// Exit statuses of the worker process.
inline constexpr int kExitNormal = 0;       // EOF or shutdown
inline constexpr int kExitUsage = 64;       // bad flags
inline constexpr int kExitStartFailed = 69; // the evaluator could not start (no GPU, NVRTC)
inline constexpr int kExitContextLost = 70; // a candidate lost the CUDA context

// Announces readiness on out_fd, then serves frames from in_fd until EOF or shutdown.
// Returns the process exit status.
int serve(int in_fd, int out_fd, const WorkerConfig& config);

// kdispatch-worker's main: --device N, --roofline-dir DIR, --selftest echo|hang|crash|sticky.
// Moves the protocol off fd 1 (stray prints from libraries then go to stderr), then serves.
int worker_main(int argc, char** argv);

}  // namespace kd::worker
