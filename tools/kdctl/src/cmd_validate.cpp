// kdctl validate --key LINE --kernel FILE.cu: the validation gate and timing on a user's kernel,
// in the sandboxed worker. Exit codes: 0 passes and beats cuBLAS, 3 passes but is not faster,
// 1 rejected, 2 usage error, 4 no GPU.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "commands.hpp"
#include "compile/compile_service.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "driver/worker_backend.hpp"
#include "eval/verdict.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "store/cache_store.hpp"
#include "worker/worker_parent.hpp"

namespace kd::kdctl {
namespace {

struct ValidateArgs {
  std::string key;
  std::string kernel;
  int device = 0;
  int watchdog_s = 60;
  bool json = false;
};

void print_verdict(const eval::Verdict& v) {
  std::printf("verdict: %s%s\n", std::string(eval::to_string(v.rule)).c_str(),
              v.correct() ? "" : "  (rejected)");
  if (!v.detail.empty()) std::printf("  %s\n", v.detail.c_str());
  if (!v.trials.empty()) {
    std::printf("  error vs fp64: candidate max_rel %.3g norm_rel %.3g; cuBLAS max_rel %.3g norm_rel %.3g\n",
                v.candidate_error.max_rel, v.candidate_error.norm_rel, v.vendor_error.max_rel,
                v.vendor_error.norm_rel);
  }
  if (v.candidate_time && v.baseline_time) {
    std::printf("  time (%s): %.2f us (IQR %.2f) vs cuBLAS %.2f us (IQR %.2f): x%.2f",
                std::string(eval::to_string(v.regime)).c_str(), v.candidate_time->median_us,
                v.candidate_time->spread_us(), v.baseline_time->median_us, v.baseline_time->spread_us(),
                v.baseline_time->median_us / v.candidate_time->median_us);
    if (v.floor_us > 0) std::printf(", %.0f%% of the roofline floor %.2f us", 100 * v.floor_us / v.candidate_time->median_us, v.floor_us);
    if (v.stream_us > 0) std::printf(", %.0f%% of a streaming read's bandwidth", 100 * v.stream_us / v.candidate_time->median_us);
    std::printf("\n");
    if (v.serving_calls > 0)
      std::printf("  serving regime: %d back-to-back calls per CUDA graph over %d copies of the weight operand\n",
                  v.serving_calls, v.serving_copies);
  }
  if (v.isolated_candidate_time && v.isolated_baseline_time) {
    std::printf("  time (isolated, cold L2): %.2f us vs cuBLAS %.2f us: x%.2f\n", v.isolated_candidate_time->median_us,
                v.isolated_baseline_time->median_us,
                v.isolated_baseline_time->median_us / v.isolated_candidate_time->median_us);
  }
  if (v.sm_clock_mhz > 0) std::printf("  SM clock %d MHz\n", v.sm_clock_mhz);
}

int run_validate(const ValidateArgs& a) {
  auto parsed = parse_key(a.key);
  if (auto* err = std::get_if<KeyError>(&parsed)) {
    std::fprintf(stderr, "kdctl validate: bad --key: %s\n", err->message.c_str());
    return kUsage;
  }
  std::ifstream in(a.kernel);
  if (!in) {
    std::fprintf(stderr, "kdctl validate: cannot read %s\n", a.kernel.c_str());
    return kUsage;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (cu_device_count() <= a.device) {
    std::fprintf(stderr, "kdctl validate: no usable GPU (%s)\n",
                 cu_unavailable_reason().empty() ? "no such device" : cu_unavailable_reason().c_str());
    return kNoGpu;
  }
  const DeviceInfo dev = query_device(a.device);
  GemmKey key = std::get<GemmKey>(parsed);
  if (!key.device) key = key.with_device({dev.arch, dev.name, dev.sms});
  if (key.device->arch != dev.arch || key.device->gpu != dev.name) {
    std::fprintf(stderr, "kdctl validate: the key names %s (%s); this device is %s (%s)\n",
                 key.device->gpu.c_str(), key.device->arch.c_str(), dev.name.c_str(), dev.arch.c_str());
    return kUsage;
  }

  search::CompileService compiler;
  const search::CandidateBuild build = compiler.compile({text.str(), a.kernel, dev.arch, {}});
  if (!build.ok()) {
    std::printf("verdict: %s  (rejected before running)\n  %s\n", std::string(search::to_string(build.status)).c_str(),
                build.message.c_str());
    if (!build.log.empty()) std::printf("%s\n", build.log.c_str());
    return kFailure;
  }
  search::WorkerBackend backend(worker::default_worker_spawn(a.device, default_cache_dir()),
                                std::chrono::seconds(a.watchdog_s));
  eval::EvalRequest request{key.full_line(), build.cubin, *build.plan, {}};
  const eval::Verdict v = backend.evaluate(request);
  if (a.json) {
    std::printf("%s\n", eval::to_json(v).dump(2).c_str());
  } else {
    std::printf("key: %s\nkernel: %s (%zu launches, NVRTC %.0f ms)\n", key.full_line().c_str(), a.kernel.c_str(),
                build.plan->launches.size(), build.compile_time.count() / 1000.0);
    print_verdict(v);
  }
  if (v.rule == eval::Rule::passed) return kOk;
  if (v.rule == eval::Rule::not_faster) return kNotFaster;
  return kFailure;
}

}  // namespace

void setup_validate(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<ValidateArgs>();
  sub.add_option("--key", a->key, "Canonical key line or `linear` shorthand the kernel implements")->required();
  sub.add_option("--kernel", a->kernel, "CUDA source under the kernel contract (kdispatch/gemm.cuh, a kdispatch:plan)")
      ->required();
  sub.add_option("--device", a->device, "CUDA device ordinal")->capture_default_str();
  sub.add_option("--watchdog-seconds", a->watchdog_s, "Kill the worker of a kernel that runs this long")->capture_default_str();
  sub.add_flag("--json", a->json, "Print the full verdict report as JSON");
  sub.footer("Exit codes: 0 passes the gate and beats cuBLAS, 3 passes but is not faster, 1 rejected, "
             "2 usage error, 4 no GPU.");
  sub.callback([a, &action] { action = [a] { return run_validate(*a); }; });
}

}  // namespace kd::kdctl
