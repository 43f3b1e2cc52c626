// kdispatchd as a library: run_daemon() serves until SIGTERM/SIGINT or a shutdown message.
#pragma once

#include "config/config.hpp"

namespace kd::daemon {

// Takes the cache directory's daemon lock, opens the queue (resuming interrupted jobs), binds the
// socket and the metrics endpoint, and serves. Returns the process exit code: 0 after a graceful
// shutdown (running jobs back to queued, everything committed, socket removed). Throws kd::Error
// when it cannot start (another daemon holds the cache, the socket is taken, bad cache).
int run_daemon(const Config& config);

}  // namespace kd::daemon
