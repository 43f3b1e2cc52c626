// kdctl, the operator's tool. Subcommands are registered in one table (kdctl.cpp).
#pragma once

namespace kd::kdctl {

// Exit codes, documented in the README.
enum ExitCode : int {
  kOk = 0,
  kFailure = 1,      // the command ran and failed (a rejected kernel, an unreachable daemon)
  kUsage = 2,        // bad flags or arguments
  kNotFaster = 3,    // validate/search: correct but not faster than the vendor library
  kNoGpu = 4,        // the command needs a GPU and none is usable
};

// Parses argv and runs one subcommand; returns its exit code. Never throws.
int run(int argc, char** argv);

}  // namespace kd::kdctl
