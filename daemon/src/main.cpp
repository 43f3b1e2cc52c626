// kdispatchd: thin main; the daemon lives in kdispatch::daemon.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "daemon_info.hpp"
#include "kdispatch/kdispatch.h"

int main(int argc, char** argv) {
  CLI::App app{"kdispatchd: the kdispatch daemon (queues missed shapes, searches, publishes)"};
  bool version = false;
  app.add_flag("--version", version, "Print the version and exit");
  CLI11_PARSE(app, argc, argv);
  if (version) {
    std::printf("kdispatchd %s\n", KD_VERSION_STRING);
    return 0;
  }
  std::fprintf(stderr, "kdispatchd: not available in this build: %s\n",
               kd::daemon::missing_capabilities().c_str());
  return 1;
}
