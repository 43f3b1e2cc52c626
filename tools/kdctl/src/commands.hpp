// The subcommand table. Each subcommand registers its flags on its CLI11 sub-app and sets
// `action` to the function that runs it when that subcommand is chosen.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace kd::kdctl {

struct Command {
  std::string_view name;
  std::string_view help;
  void (*setup)(CLI::App& sub, std::function<int()>& action);
};

std::span<const Command> commands();

// When `sub` is the chosen subcommand (CLI11 calls its callback after parsing it), `action` becomes
// run(*args). Several subcommands may share one `args`.
template <class Args>
void run_when_chosen(CLI::App& sub, std::function<int()>& action, std::shared_ptr<Args> args,
                     int (*run)(const Args&)) {
  sub.callback([args, run, &action] { action = [args, run] { return run(*args); }; });
}

// The flag values of a subcommand whose action is run(values): the caller declares its flags on the
// returned object, which lives as long as the action.
template <class Args>
std::shared_ptr<Args> command_args(CLI::App& sub, std::function<int()>& action, int (*run)(const Args&)) {
  auto args = std::make_shared<Args>();
  run_when_chosen(sub, action, args, run);
  return args;
}

// --cache-dir as the subcommands that read or write a cache name it (empty: default_cache_dir()).
void add_cache_dir_flag(CLI::App& sub, std::string& cache_dir);

// One setup function per subcommand, each in its own file (cmd_<name>.cpp).
void setup_devices(CLI::App& sub, std::function<int()>& action);
void setup_search(CLI::App& sub, std::function<int()>& action);
void setup_validate(CLI::App& sub, std::function<int()>& action);
void setup_verify(CLI::App& sub, std::function<int()>& action);
void setup_bench(CLI::App& sub, std::function<int()>& action);
void setup_prewarm(CLI::App& sub, std::function<int()>& action);
void setup_status(CLI::App& sub, std::function<int()>& action);
void setup_record(CLI::App& sub, std::function<int()>& action);
void setup_ls(CLI::App& sub, std::function<int()>& action);
void setup_show(CLI::App& sub, std::function<int()>& action);
void setup_stats(CLI::App& sub, std::function<int()>& action);
void setup_export(CLI::App& sub, std::function<int()>& action);
void setup_import(CLI::App& sub, std::function<int()>& action);
void setup_evict(CLI::App& sub, std::function<int()>& action);
void setup_doctor(CLI::App& sub, std::function<int()>& action);
void setup_stop(CLI::App& sub, std::function<int()>& action);
void setup_cancel(CLI::App& sub, std::function<int()>& action);
void setup_purge(CLI::App& sub, std::function<int()>& action);
void setup_remote(CLI::App& sub, std::function<int()>& action);

}  // namespace kd::kdctl
