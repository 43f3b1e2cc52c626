#include "kdctl.hpp"

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "kdispatch/kdispatch.h"

namespace kd::kdctl {

namespace {
constexpr std::string_view kKeysHelp =
    "Keys: GEMM lines (gemm ..., or the linear shorthand) and row operators' lines (rmsnorm, layernorm,\n"
    "softmax with dtype= rows= cols=). Every subcommand that takes a key, a shape list or a cache's records\n"
    "takes both; a GEMM's baseline is cuBLAS, a row operator's the framework's kernel (PyTorch's). Only GEMM\n"
    "lines take ranges of n (n=LO..HI) and the cublaslt proposer.\n";
}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"kdctl: inspect, prewarm and manage a kdispatch kernel cache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kdctl ") + KD_VERSION_STRING);
  // Which subcommands take row operators' keys and records (issue 33): all that take keys or records.
  app.footer(std::string(kKeysHelp) + "\n" + exit_codes_help());

  std::function<int()> action;
  for (const Command& cmd : commands()) {
    CLI::App* sub = app.add_subcommand(std::string(cmd.name), std::string(cmd.help));
    cmd.setup(*sub, action);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kOk : kUsage;
  }
  try {
    return action ? action() : kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl: %s\n", e.what());
    return kFailure;
  }
}

}  // namespace kd::kdctl
