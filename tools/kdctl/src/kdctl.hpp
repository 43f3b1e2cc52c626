// kdctl, the operator's tool. Subcommands are registered in one table (kdctl.cpp).
#pragma once

#include "common/exit_code.hpp"

namespace kd::kdctl {

// kdctl's short names for the shared exit codes (common/exit_code.hpp, README "Exit codes").
enum : int {
  kOk = exit_status(ExitCode::ok),
  kFailure = exit_status(ExitCode::failure),  // a rejected kernel, an unreachable daemon
  kUsage = exit_status(ExitCode::usage),
  kNotFaster = exit_status(ExitCode::not_faster),
  kNoGpu = exit_status(ExitCode::no_gpu),
};

// Parses argv and runs one subcommand; returns its exit code. Never throws.
int run(int argc, char** argv);

}  // namespace kd::kdctl
