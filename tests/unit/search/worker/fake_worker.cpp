#include "fake_worker.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "worker/worker_process.hpp"

namespace kd::test {
namespace {

std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  return args;
}

// Runs before main(): a process started as a fake worker serves and exits here.
const bool kServedAsWorker = [] {
  const std::vector<std::string> args = own_argv();
  if (args.size() < 3 || args[1] != "--fake-worker") return false;
  std::ifstream mode_in(args[2]);
  std::string mode;
  mode_in >> mode;
  std::vector<std::string> worker_args = {"kdispatch-worker", "--selftest", mode};
  std::vector<char*> argv;
  for (std::string& a : worker_args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::_Exit(worker::worker_main(static_cast<int>(worker_args.size()), argv.data()));
}();

}  // namespace

worker::WorkerSpawn fake_worker_spawn(const std::filesystem::path& mode_file) {
  worker::WorkerSpawn s;
  s.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "--fake-worker", mode_file.string()};
  s.startup_timeout = std::chrono::seconds(30);
  (void)kServedAsWorker;
  return s;
}

}  // namespace kd::test
