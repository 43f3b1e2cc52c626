// This test binary doubles as a kdispatch-worker: started with `--fake-worker MODE_FILE` it reads
// a self-test mode (echo, hang, crash, sticky) from MODE_FILE and serves as the worker would,
// never reaching GoogleTest. Tests change the file between spawns to script successive workers.
#pragma once

#include <filesystem>

#include "worker/worker_parent.hpp"

namespace kd::test {

worker::WorkerSpawn fake_worker_spawn(const std::filesystem::path& mode_file);

}  // namespace kd::test
