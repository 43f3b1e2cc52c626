#include "worker/worker_process.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/error.hpp"
#include "eval/evaluator.hpp"
#include "worker/protocol.hpp"

namespace kd::worker {
namespace {

constexpr std::pair<std::string_view, SelfTest> kSelfTests[] = {
    {"echo", SelfTest::echo}, {"hang", SelfTest::hang}, {"crash", SelfTest::crash},
    {"sticky", SelfTest::sticky}};

void die_by_segfault() {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a deliberate crash leaves no core file
  std::signal(SIGSEGV, SIG_DFL);
  std::raise(SIGSEGV);
  std::_Exit(kExitContextLost);
}

// The echo self-test's enumeration: two made-up algorithms (not valid for any cuBLASLt), so the
// parent's side of enumerate_cublaslt is tested without a GPU.
cublaslt::Enumeration selftest_enumeration() {
  cublaslt::Enumeration e;
  e.version = 1;
  for (int i = 1; i <= 2; ++i) {
    cublaslt::AlgoCandidate c;
    c.algo = {std::string(kCublasLtAlgoBytes, static_cast<char>(i)), static_cast<std::uint64_t>(i) << 20, e.version};
    c.description = fmt::format("selftest algo {}", i);
    c.origin = fmt::format("heuristic #{}", i);
    e.algos.push_back(std::move(c));
  }
  return e;
}

// Answers one request in a self-test mode; returns an exit status to stop serving.
std::optional<int> selftest_answer(SelfTest mode, int out_fd, std::uint64_t id, bool enumerate) {
  switch (mode) {
    case SelfTest::hang:
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    case SelfTest::crash: die_by_segfault(); return kExitContextLost;
    case SelfTest::sticky: {
      if (enumerate) {
        write_frame(out_fd, algos_frame(id, std::string("selftest: CUDA_ERROR_ILLEGAL_ADDRESS (simulated)"),
                                        WorkerFate::exits));
        return kExitContextLost;
      }
      eval::Verdict v;
      v.rule = eval::Rule::crashed;
      v.detail = "selftest: CUDA_ERROR_ILLEGAL_ADDRESS (simulated)";
      write_frame(out_fd, verdict_frame(id, v, WorkerFate::exits));
      return kExitContextLost;
    }
    case SelfTest::echo:
    case SelfTest::none: {
      if (enumerate) {
        write_frame(out_fd, algos_frame(id, selftest_enumeration(), WorkerFate::continues));
        return std::nullopt;
      }
      eval::Verdict v;
      v.rule = eval::Rule::not_faster;
      v.detail = "selftest: echo";
      write_frame(out_fd, verdict_frame(id, v, WorkerFate::continues));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<SelfTest> selftest_from_string(std::string_view name) {
  for (const auto& [n, mode] : kSelfTests)
    if (n == name) return mode;
  return std::nullopt;
}

int serve(int in_fd, int out_fd, const WorkerConfig& config) {
  std::unique_ptr<eval::Evaluator> evaluator;
  nlohmann::json ready = {{"type", "ready"}, {"pid", ::getpid()}};
  if (config.selftest == SelfTest::none) {
    try {
      evaluator = std::make_unique<eval::Evaluator>(
          eval::EvaluatorConfig{config.device_ordinal, config.roofline_dir, std::nullopt});
      ready["arch"] = evaluator->device_arch();
      ready["gpu"] = evaluator->device_name();
      ready["roofline"] = eval::to_json(evaluator->roofline());
    } catch (const std::exception& e) {
      write_frame(out_fd, {{{"type", "fatal"}, {"error", e.what()}}, {}});
      return kExitStartFailed;
    }
  } else {
    ready["selftest"] = true;
  }
  write_frame(out_fd, {ready, {}});

  for (;;) {
    Frame in;
    if (read_frame(in_fd, in) != ReadStatus::ok) return kExitNormal;
    const std::string type = frame_type(in);
    if (type == "shutdown") return kExitNormal;
    const bool enumerate = type == "enumerate_cublaslt";
    if (type != "evaluate" && !enumerate) {
      write_frame(out_fd, {{{"type", "error"}, {"error", "unknown message type '" + type + "'"}}, {}});
      continue;
    }
    const std::uint64_t id = in.header.value("id", std::uint64_t{0});
    if (!evaluator) {
      if (auto status = selftest_answer(config.selftest, out_fd, id, enumerate)) return *status;
      continue;
    }
    WorkerFate fate = WorkerFate::continues;
    if (enumerate) {
      EnumerationResult result;
      try {
        const EnumerateRequest r = enumerate_request_from_frame(in);
        result = evaluator->enumerate_cublaslt(r.key_line, r.options);
      } catch (const std::exception& e) {  // a malformed request
        result = std::string(e.what());
      }
      fate = evaluator->context_usable() ? WorkerFate::continues : WorkerFate::exits;
      write_frame(out_fd, algos_frame(id, result, fate));
    } else {
      eval::Verdict v;
      try {
        v = evaluator->evaluate(request_from_frame(in));
      } catch (const std::exception& e) {  // a malformed request
        v.rule = eval::Rule::internal_error;
        v.detail = e.what();
      }
      fate = evaluator->context_usable() ? WorkerFate::continues : WorkerFate::exits;
      write_frame(out_fd, verdict_frame(id, v, fate));
    }
    if (fate == WorkerFate::exits) {
      // Tearing down handles on a lost context can block in the driver; the process is about to
      // end and the driver reclaims everything.
      (void)evaluator.release();
      return kExitContextLost;
    }
  }
}

int worker_main(int argc, char** argv) {
  WorkerConfig config;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--device" && has_value) {
      config.device_ordinal = std::atoi(argv[++i]);
    } else if (arg == "--roofline-dir" && has_value) {
      config.roofline_dir = argv[++i];
    } else if (arg == "--selftest" && has_value) {
      const auto mode = selftest_from_string(argv[++i]);
      if (!mode) {
        std::fprintf(stderr, "kdispatch-worker: unknown selftest mode '%s'\n", argv[i]);
        return kExitUsage;
      }
      config.selftest = *mode;
    } else {
      std::fprintf(stderr,
                   "usage: kdispatch-worker [--device N] [--roofline-dir DIR] "
                   "[--selftest echo|hang|crash|sticky]\n"
                   "Started by kdispatchd; speaks length-prefixed JSON frames on stdin/stdout.\n");
      return kExitUsage;
    }
  }
  // The protocol moves to private descriptors; fd 1 becomes stderr so that a library printing to
  // stdout cannot corrupt a frame.
  const int in_fd = ::dup(0);
  const int out_fd = ::dup(1);
  if (in_fd < 0 || out_fd < 0 || ::dup2(2, 1) < 0) {
    std::perror("kdispatch-worker: dup");
    return kExitStartFailed;
  }
  try {
    const int status = serve(in_fd, out_fd, config);
    // With a lost context, skip the CUDA runtime's and cuBLAS's exit-time teardown (it can block).
    if (status == kExitContextLost) {
      std::fflush(stderr);
      std::_Exit(status);
    }
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdispatch-worker: %s\n", e.what());
    return kExitStartFailed;
  }
}

}  // namespace kd::worker
