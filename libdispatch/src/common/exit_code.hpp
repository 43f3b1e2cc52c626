// The exit codes of kdctl and kdispatchd: one table for both programs. README.md ("Exit codes")
// lists the same rows (tests/unit/tools/kdctl/exit_codes_test.cpp checks that they agree), and both
// programs print them in --help. A code is never reused for another meaning.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace kd {

enum class ExitCode : int {
  ok = 0,
  failure = 1,     // ran and failed: the message names the problem
  usage = 2,       // bad flags, arguments, configuration or input lines: nothing was done
  not_faster = 3,  // kdctl search/validate: correct, but not faster than the baseline by the margin
  no_gpu = 4,      // the command needs a GPU and none is usable
};

struct ExitCodeInfo {
  ExitCode code;
  std::string_view meaning;  // as README's table writes it
};

inline constexpr ExitCodeInfo kExitCodes[] = {
    {ExitCode::ok, "success"},
    {ExitCode::failure, "the command ran and failed (the message names the problem)"},
    {ExitCode::usage, "usage error: bad flags, arguments, configuration or input lines"},
    {ExitCode::not_faster, "kdctl search/validate: correct, but not faster than the baseline (cuBLAS, or a row "
                           "operator's framework kernel) by the margin"},
    {ExitCode::no_gpu, "the command needs a GPU and none is usable"},
};

constexpr int exit_status(ExitCode c) noexcept { return static_cast<int>(c); }

// "Exit codes:\n  0  success\n  1  ..." for a --help footer: the rows of `codes`, in table order.
inline std::string exit_codes_help(std::span<const ExitCode> codes) {
  std::string out = "Exit codes:\n";
  for (const ExitCodeInfo& row : kExitCodes) {
    for (const ExitCode c : codes) {
      if (c != row.code) continue;
      out += "  " + std::to_string(exit_status(c)) + "  " + std::string(row.meaning) + "\n";
    }
  }
  return out;
}

// Every row.
inline std::string exit_codes_help() {
  std::string out = "Exit codes:\n";
  for (const ExitCodeInfo& row : kExitCodes)
    out += "  " + std::to_string(exit_status(row.code)) + "  " + std::string(row.meaning) + "\n";
  return out;
}

}  // namespace kd
