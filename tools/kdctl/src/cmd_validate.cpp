// kdctl validate --key LINE --kernel FILE.cu: the validation gate and timing on a user's kernel,
// in the sandboxed worker. A range key (n=LO..HI, issue 29) runs the range gate: the kernel's plan
// must serve every n (checked before any GPU is needed), then the gate at every n the range search
// checks, timed at the ends and the middle. A row operator's key (issue 33) runs the same gate against
// the framework's kernel. Exit codes: 0 passes and beats the baseline (at every timed n), 3 passes
// but is not faster, 1 rejected, 2 usage error, 4 no GPU.
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "baseline_label.hpp"
#include "commands.hpp"
#include "compile/compile_service.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "driver/worker_backend.hpp"
#include "eval/verdict.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "plan/launch_plan.hpp"
#include "range/range_search.hpp"
#include "range_gate_print.hpp"
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

// `key`: what the kernel was validated for. A GEMM's errors are set against cuBLAS's and its times
// against cuBLAS's; a row operator's errors against the evaluator's f32 kernel (what a framework's
// kernel computes) and its times against the framework's kernel the verdict names (issue 33).
void print_verdict(const OpKey& key, const eval::Verdict& v) {
  std::printf("verdict: %s%s\n", std::string(eval::to_string(v.rule)).c_str(),
              v.correct() ? "" : "  (rejected)");
  if (!v.detail.empty()) std::printf("  %s\n", v.detail.c_str());
  const std::string baseline = baseline_of(key, v);
  if (!v.trials.empty()) {
    std::printf("  error vs fp64: candidate max_rel %.3g norm_rel %.3g lean %.2g; %s max_rel %.3g norm_rel %.3g "
                "lean %.2g\n",
                v.candidate_error.max_rel, v.candidate_error.norm_rel, v.candidate_error.lean,
                is_row(key) ? "the evaluator's f32 kernel" : "cuBLAS", v.vendor_error.max_rel, v.vendor_error.norm_rel,
                v.vendor_error.lean);
  }
  if (v.candidate_time && v.baseline_time) {
    std::printf("  time (%s): %.2f us (IQR %.2f) vs %s %.2f us (IQR %.2f): x%.2f",
                std::string(eval::to_string(v.regime)).c_str(), v.candidate_time->median_us,
                v.candidate_time->spread_us(), baseline.c_str(), v.baseline_time->median_us,
                v.baseline_time->spread_us(), v.baseline_time->median_us / v.candidate_time->median_us);
    if (v.floor_us > 0) std::printf(", %.0f%% of the roofline floor %.2f us", 100 * v.floor_us / v.candidate_time->median_us, v.floor_us);
    if (v.stream_us > 0) std::printf(", %.0f%% of a streaming read's bandwidth", 100 * v.stream_us / v.candidate_time->median_us);
    std::printf("\n");
    if (v.serving_calls > 0)
      std::printf("  serving regime: %d back-to-back calls per CUDA graph over %d copies of the %s\n", v.serving_calls,
                  v.serving_copies, is_row(key) ? "input x" : "weight operand");
  }
  if (v.isolated_candidate_time && v.isolated_baseline_time) {
    std::printf("  time (isolated, cold L2): %.2f us vs %s %.2f us: x%.2f\n", v.isolated_candidate_time->median_us,
                baseline.c_str(), v.isolated_baseline_time->median_us,
                v.isolated_baseline_time->median_us / v.isolated_candidate_time->median_us);
  }
  if (v.sm_clock_mhz > 0) std::printf("  SM clock %d MHz\n", v.sm_clock_mhz);
}

// A range kernel's plan checked against the range before any GPU is needed: nullopt when it serves
// every n (rules that give each n-dependent extent, or a grid that covers the range by itself), else
// the problem. A plan that does not parse is left to the compile, which names it as for any key.
std::optional<std::string> range_plan_refusal(const GemmKey& key, const std::string& source) {
  const auto plan = parse_plan_from_source(source);
  const auto* p = std::get_if<LaunchPlan>(&plan);
  if (p == nullptr) return std::nullopt;
  return range_plan_problem(*p, key.n, key.n_hi);
}

// The range gate on the compiled kernel; prints every point and returns the exit code.
int validate_range(const ValidateArgs& a, const GemmKey& key, const search::CandidateBuild& build,
                   search::WorkerBackend& backend) {
  const search::range::RangeGate gate = search::range::gate_range_kernel(
      backend, key, build.cubin, *build.plan, {}, search::range::GateStop::first_incorrect);
  const eval::Verdict& last = gate.results.empty() ? eval::Verdict{} : gate.results.back().verdict;
  if (a.json) {
    nlohmann::json report = gate.results.empty() ? nlohmann::json::object() : eval::to_json(last);
    report["range"] = search::range::range_report(key.n, key.n_hi, gate.results);
    report["range"]["passed"] = gate.passed();
    if (!gate.passed()) report["range"]["failure"] = gate.failure;
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    std::printf("key: %s\nkernel: %s (%zu launches, NVRTC %.0f ms)\n", key.full_line().c_str(), a.kernel.c_str(),
                build.plan->launches.size(), build.compile_time.count() / 1000.0);
    std::printf("range gate for n=%lld..%lld (%zu points checked, timed at n=%s):\n", static_cast<long long>(key.n),
                static_cast<long long>(key.n_hi), gate.points.checked.size(), n_list(gate.points.timed).c_str());
    print_range_points(gate.results);
    if (!gate.correct()) {
      std::printf("verdict: rejected: %s\n", gate.failure.c_str());
      if (!gate.results.empty()) print_verdict(OpKey(key), last);
    } else if (!gate.passed()) {
      std::printf("verdict: correct at every checked n, but %s\n", gate.failure.c_str());
    } else {
      std::printf("verdict: passed: correct at every checked n and faster than cuBLAS at n=%s\n",
                  n_list(gate.points.timed).c_str());
    }
  }
  if (!gate.correct()) return kFailure;
  return gate.passed() ? kOk : kNotFaster;
}

int run_validate(const ValidateArgs& a) {
  // Any operator's key (issue 33): a row operator's kernel goes through the same gate, against the
  // row baseline.
  auto parsed = parse_op_key(a.key);
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
  const GemmKey* asked_gemm = std::get_if<GemmKey>(&std::get<OpKey>(parsed));
  if (asked_gemm != nullptr && asked_gemm->is_range()) {
    const GemmKey& k = *asked_gemm;
    if (const auto problem = range_plan_refusal(k, text.str())) {
      if (a.json) {
        const nlohmann::json report = {{"rule", "plan_invalid"},
                                       {"detail", fmt::format("the plan does not serve n={}..{}: {}", k.n, k.n_hi, *problem)}};
        std::printf("%s\n", report.dump(2).c_str());
        return kFailure;
      }
      std::printf("verdict: plan_invalid  (rejected before running)\n  the plan does not serve n=%lld..%lld: %s\n"
                  "  a kernel for a range of n gives each grid extent that depends on n a \"grid_rule\" whose value at "
                  "n=%lld is the stored grid (ARCHITECTURE.md, range records), or a grid that covers every n\n",
                  static_cast<long long>(k.n), static_cast<long long>(k.n_hi), problem->c_str(),
                  static_cast<long long>(k.n_hi));
      return kFailure;
    }
  }
  if (cu_device_count() <= a.device) {
    std::fprintf(stderr, "kdctl validate: no usable GPU (%s)\n",
                 cu_unavailable_reason().empty() ? "no such device" : cu_unavailable_reason().c_str());
    return kNoGpu;
  }
  const DeviceInfo dev = query_device(a.device);
  const OpKey op = std::visit(
      [&](const auto& k) { return OpKey(k.device ? k : k.with_device({dev.arch, dev.name, dev.sms})); },
      std::get<OpKey>(parsed));
  const DevicePart& keyed = *std::visit([](const auto& k) { return &*k.device; }, op);
  if (keyed.arch != dev.arch || keyed.gpu != dev.name) {
    std::fprintf(stderr, "kdctl validate: the key names %s (%s); this device is %s (%s)\n",
                 keyed.gpu.c_str(), keyed.arch.c_str(), dev.name.c_str(), dev.arch.c_str());
    return kUsage;
  }
  const std::string full_line = op_full_line(op);

  search::CompileService compiler;
  search::CompileRequest request{text.str(), a.kernel, dev.arch, {}};
  // The compiled-kernel check holds every entry to the operator's argument struct: kd_row_args for a
  // row operator's key (issue 33), kd_gemm_args otherwise.
  if (is_row(op)) request.args_bytes = search::CompileRequest::kRowArgsBytes;
  const search::CandidateBuild build = compiler.compile(request);
  if (!build.ok()) {
    std::printf("verdict: %s  (rejected before running)\n  %s\n", std::string(search::to_string(build.status)).c_str(),
                build.message.c_str());
    if (!build.log.empty()) std::printf("%s\n", build.log.c_str());
    return kFailure;
  }
  search::WorkerBackend backend(worker::default_worker_spawn(a.device, default_cache_dir()),
                                std::chrono::seconds(a.watchdog_s));
  if (const GemmKey* gemm = std::get_if<GemmKey>(&op); gemm && gemm->is_range())
    return validate_range(a, *gemm, build, backend);
  eval::EvalRequest evaluation{full_line, build.cubin, *build.plan, {}};
  const eval::Verdict v = backend.evaluate(evaluation);
  if (a.json) {
    std::printf("%s\n", eval::to_json(v).dump(2).c_str());
  } else {
    std::printf("key: %s\nkernel: %s (%zu launches, NVRTC %.0f ms)\n", full_line.c_str(), a.kernel.c_str(),
                build.plan->launches.size(), build.compile_time.count() / 1000.0);
    print_verdict(op, v);
  }
  if (v.rule == eval::Rule::passed) return kOk;
  if (v.rule == eval::Rule::not_faster) return kNotFaster;
  return kFailure;
}

}  // namespace

void setup_validate(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_validate);
  sub.add_option("--key", a->key,
                 "Canonical key line (gemm, or rmsnorm/layernorm/softmax rows= cols=) or `linear` shorthand the kernel "
                 "implements; a GEMM's n (tokens) may be a range LO..HI")
      ->required();
  sub.add_option("--kernel", a->kernel, "CUDA source under the kernel contract (kdispatch/gemm.cuh, or kdispatch/rowop.cuh for a row key; a "
                 "kdispatch:plan)")
      ->required();
  sub.add_option("--device", a->device, "CUDA device ordinal")->capture_default_str();
  sub.add_option("--watchdog-seconds", a->watchdog_s, "Kill the worker of a kernel that runs this long")->capture_default_str();
  sub.add_flag("--json", a->json, "Print the full verdict report as JSON");
  sub.footer("A range key (n=LO..HI) holds the kernel to the range gate, as the range search does: its plan must "
             "serve every n (a grid_rule for each extent that depends on n, checked first, without a GPU), then the "
             "gate at up to 16 n (the ends, ragged values, tile boundaries), timed against cuBLAS at the ends and the "
             "middle; every point is printed.\n"
             "A row operator's key (rmsnorm, layernorm, softmax) takes a kd_row_args kernel and the same gate; its "
             "errors are set against the evaluator's f32 kernel and its time against the framework's kernel "
             "(PyTorch's, timed by the worker with python3, or the evaluator's f32 stand-in without torch), which the "
             "verdict names.\n"
             "Exit codes: 0 passes the gate and beats the baseline (cuBLAS, or a row operator's framework kernel; for a "
             "range: at every timed n), 3 passes but is not faster, 1 rejected, 2 usage error, 4 no GPU.");
}

}  // namespace kd::kdctl
