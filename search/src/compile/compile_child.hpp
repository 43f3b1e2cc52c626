// One NVRTC compile in a forked child process, so that a compile can be bounded in time (NVRTC
// cannot be cancelled in-process) and a compiler crash cannot take the caller down.
#pragma once

#include <chrono>
#include <string>

#include "compile/nvrtc_compiler.hpp"

namespace kd::search {

enum class ChildOutcome {
  finished,   // NVRTC returned: `output` holds ok or compile_error with the log
  timed_out,  // still running at the deadline; killed with SIGKILL
  crashed,    // died (signal, bad exit) or NVRTC failed for a non-source reason
};

struct ChildCompileResult {
  ChildOutcome outcome = ChildOutcome::crashed;
  CompileOutput output;  // meaningful when finished
  std::string failure;   // why, when not finished: "killed by signal 11 (Segmentation fault)"
  std::chrono::microseconds wall_time{0};  // fork to reap
};

// Forks, compiles `request` with compile_cuda() in the child, and returns the child's result;
// the child is killed at `time_limit`. Thread-safe: many threads may call it at once.
//
// Fork from a multithreaded process: the child runs only NVRTC and writes one pipe, then
// _exit()s; it closes every inherited descriptor but its pipe first. Call warm_up_nvrtc() once in
// the parent beforehand, so that the child inherits NVRTC's loaded builtins library and static
// state instead of initialising them while another parent thread may hold a loader lock.
// Throws kd::Error when pipe() or fork() fails.
ChildCompileResult compile_in_child(const CompileRequest& request, std::chrono::milliseconds time_limit);

// Compiles a tiny kernel in this process (see compile_in_child). Throws kd::Error when NVRTC
// does not work at all.
void warm_up_nvrtc();

}  // namespace kd::search
