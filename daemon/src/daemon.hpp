// kdispatchd as a library: run_daemon() serves until SIGTERM/SIGINT or a shutdown message.
#pragma once

#include <functional>

#include "config/config.hpp"

namespace kd::daemon {

// Loads the configuration again (for SIGHUP); throws kd::Error as load_config does.
using ConfigLoader = std::function<Config()>;

// Takes the cache directory's daemon lock, opens the queue (resuming interrupted jobs), binds the
// socket and the metrics endpoint, and serves. Returns the process exit code: 0 after a graceful
// shutdown (running jobs back to queued, everything committed, socket removed). Throws kd::Error
// when it cannot start (another daemon holds the cache, the socket is taken, bad cache).
// SIGHUP never stops it: with `reload`, it applies the reloadable keys (config_reload.hpp) and logs
// what changed and what needs a restart; a configuration that does not load is logged and ignored.
int run_daemon(const Config& config, const ConfigLoader& reload = {});

}  // namespace kd::daemon
