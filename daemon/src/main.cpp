// kdispatchd: thin main; the daemon lives in kdispatch::daemon. Exit codes: common/exit_code.hpp.
#include <csignal>
#include <cstdio>
#include <variant>

#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "common/exit_code.hpp"
#include "config/config.hpp"
#include "daemon.hpp"
#include "kdispatch/kdispatch.h"

namespace {

// A configuration the daemon cannot serve with (a bad value, a socket path too long, another
// daemon on the cache) is a usage error: restarting cannot fix it, so the unit does not retry it
// (RestartPreventExitStatus). Everything else failed at run time.
int exit_status_of(const std::exception& e) {
  const auto* error = dynamic_cast<const kd::Error*>(&e);
  const bool usage = error != nullptr && error->domain() == kd::ErrorDomain::usage;
  return kd::exit_status(usage ? kd::ExitCode::usage : kd::ExitCode::failure);
}

}  // namespace

int main(int argc, char** argv) {
  // A hangup (the terminal that started the daemon closed) must not stop it: ignored until
  // run_daemon handles SIGHUP itself (reload).
  std::signal(SIGHUP, SIG_IGN);
  auto parsed = kd::daemon::parse_command_line(argc, argv);
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  const auto& line = std::get<kd::daemon::CommandLine>(parsed);
  if (line.version) {
    std::printf("kdispatchd %s\n", KD_VERSION_STRING);
    return kd::exit_status(kd::ExitCode::ok);
  }
  try {
    const auto config = kd::daemon::load_config(line, kd::daemon::process_environment);
    if (line.print_config) {
      std::fputs(kd::daemon::print_config(config).c_str(), stdout);
      return kd::exit_status(kd::ExitCode::ok);
    }
    spdlog::set_level(spdlog::level::from_str(config.log_level));
    std::signal(SIGPIPE, SIG_IGN);
    return kd::daemon::run_daemon(
        config, [&line] { return kd::daemon::load_config(line, kd::daemon::process_environment); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdispatchd: %s\n", e.what());
    return exit_status_of(e);
  }
}
