// What SIGHUP changes in a running kdispatchd: the configuration is loaded again (file,
// environment and flags, with the same precedence), and the keys of one table (kReloadableKeys in
// config_reload.cpp) take their new values; every other key keeps the value the daemon started
// with until a restart, and the reload says which of those changed.
//
// Reloadable are the keys that only tune how the running daemon treats what comes next: the log
// level, the search budgets, GPU shares and retry policy of the next jobs, and the client limits and uids the
// server checks on the next connection or frame. Not reloadable are the keys that name resources
// the daemon holds open (cache_dir, socket, socket_mode, metrics_listen, metrics_port_file), that
// made the worker and compile pools (workers, compile_threads), and that the search threads read
// while they run (proposer, llm_*): changing those under a running search would race with it.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace kd::daemon {

struct ReloadResult {
  std::vector<std::string> applied;         // "key = 'new'" for each reloadable key that changed
  std::vector<std::string> restart_needed;  // names of the other keys whose value changed
};

// Copies into `live` the values of the reloadable keys of `fresh` that differ from live's (by the
// text each key was loaded from), and updates their entries of live.origins. `live` is the
// configuration the io thread reads; threads that read reloadable values elsewhere get them
// through their own setters (Scheduler::set_limits).
ReloadResult apply_reload(Config& live, const Config& fresh);

// The names of the reloadable keys, in table order (for the documentation and tests).
std::vector<std::string> reloadable_keys();

}  // namespace kd::daemon
