// Runs the real kdctl executable (built next to the tests) and captures its output.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "support/text_file.hpp"  // read_text and write_text, which the kdctl tests use beside run_kdctl

namespace kd::test {

struct KdctlRun {
  int rc = -1;  // exit code; 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs kdctl with `args`, stdout and stderr captured through files in `scratch`. `env` entries
// ("NAME=value") are added to (and override) this process's environment. The executable is
// KD_KDCTL_PATH (a compile definition), or $KD_BUNDLE_DIR/bin/kdctl when that is set (a bundle).
KdctlRun run_kdctl(const std::filesystem::path& scratch, const std::vector<std::string>& args,
                   const std::vector<std::string>& env = {});


}  // namespace kd::test
