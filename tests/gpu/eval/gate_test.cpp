// The validation gate on a GPU, end to end through kdispatch-worker processes: each kernel under
// kernels/ written to break a rule must be rejected with that rule named; correct kernels pass;
// after a hang, a trap and an illegal address the next evaluation still runs. Prints the
// rejection table.
//
// This binary doubles as the worker: started as `gpu_eval --kd-worker ARGS...` it runs
// kdispatch-worker's main with ARGS (the same library code) and never reaches GoogleTest.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "builtin/family.hpp"
#include "builtin/family_wg_tiled.hpp"
#include "builtin/family_wg_tma.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "kdispatch/gemm.cuh"
#include "eval/evaluator.hpp"
#include "key/gemm_key.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"
#include "test_kernels.hpp"
#include "worker/worker_parent.hpp"
#include "worker/worker_process.hpp"

namespace kd::eval {
namespace {

using namespace std::chrono_literals;

const bool kServedAsWorker = [] {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char c : all) {
    if (c != '\0') {
      cur.push_back(c);
      continue;
    }
    args.push_back(cur);
    cur.clear();
  }
  if (args.size() < 2 || args[1] != "--kd-worker") return false;
  std::vector<char*> argv;
  for (std::size_t i = 1; i < args.size(); ++i) argv.push_back(args[i].data());
  argv.push_back(nullptr);
  std::_Exit(worker::worker_main(static_cast<int>(argv.size() - 1), argv.data()));
}();

constexpr const char* kF32 =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=512 n=256 k=384 lda=512 ldb=384 ldc=512 "
    "batch=1 epilogue=none beta0=1";
constexpr const char* kF32Beta =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=512 n=256 k=384 lda=512 ldb=384 ldc=512 "
    "batch=1 epilogue=none beta0=0";
constexpr const char* kBf16TnPadded =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=512 n=256 k=384 lda=400 ldb=392 ldc=520 "
    "batch=1 epilogue=none beta0=1";
constexpr const char* kF32BatchBias =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=512 n=256 k=384 lda=520 ldb=384 ldc=512 "
    "batch=3 stride_a=200000 stride_b=98304 stride_c=131072 epilogue=bias beta0=1";

// nullopt: the kernel is correct (verdict passed or not_faster).
struct Case {
  const char* kernel;
  const char* key;
  std::optional<Rule> expect;
  std::optional<std::array<std::uint32_t, 3>> grid;  // overrides the source's plan
  std::chrono::milliseconds watchdog = 60s;
};

struct Row {
  std::string kernel, key, expected, verdict, detail;
  double seconds = 0.0;
  bool ok = false;
};

std::string short_key(const char* key) {
  if (key == kF32) return "f32 NN beta=0";
  if (key == kF32Beta) return "f32 NN beta!=0";
  if (key == kBf16TnPadded) return "bf16 TN padded ld";
  if (key == kF32BatchBias) return "f32 NN batch=3 bias";
  return key;
}

EvalOptions test_options() {
  EvalOptions o;
  o.timing_budget = 200ms;
  o.min_timed_runs = 10;
  o.max_timed_runs = 60;
  return o;
}

EvalRequest build_request(const Case& c, const std::string& arch) {
  const std::string source(test::test_kernel(c.kernel));
  const search::CompileOutput out = search::compile_cuda({.source = source, .name = std::string(c.kernel) + ".cu", .arch = arch});
  EXPECT_EQ(out.status, search::CompileStatus::ok) << c.kernel << ": " << out.log;
  auto plan = parse_plan_from_source(source);
  EXPECT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << c.kernel;
  EvalRequest r;
  r.key_line = c.key;
  r.cubin = out.cubin;
  if (auto* p = std::get_if<LaunchPlan>(&plan)) r.plan = *p;
  if (c.grid && !r.plan.launches.empty()) r.plan.launches[0].grid = *c.grid;
  r.options = test_options();
  return r;
}

Row make_row(const char* kernel, const char* key, const std::optional<Rule>& expect, const Verdict& v,
             double seconds) {
  Row row{kernel, short_key(key), expect ? std::string(to_string(*expect)) : "pass (correct)",
          std::string(to_string(v.rule)), v.detail.substr(0, 110), seconds, false};
  row.ok = expect ? v.rule == *expect : v.correct();
  return row;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\nkdispatch validation gate: rejection table\n");
  std::printf("%-24s %-20s %-28s %-28s %6s  %s\n", "kernel", "key", "expected", "verdict", "sec", "detail");
  for (const Row& r : rows) {
    std::printf("%-24s %-20s %-28s %-28s %6.2f  %s%s\n", r.kernel.c_str(), r.key.c_str(), r.expected.c_str(),
                r.verdict.c_str(), r.seconds, r.ok ? "" : "MISMATCH: ", r.detail.c_str());
  }
  std::fflush(stdout);
}

TEST(GpuEvalGate, EveryRuleBreakerIsRejectedByNameAndCorrectKernelsPass) {
  KD_REQUIRE_GPU();
  const DeviceInfo dev = query_device(0);
  test::TempDir dir;
  worker::WorkerSpawn spawn;
  spawn.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "--kd-worker", "--device", "0",
                "--roofline-dir", (dir.path() / "roofline").string()};
  worker::WorkerParent parent(spawn);
  const nlohmann::json& ready = parent.ensure_started();
  std::printf("worker ready: %s\n", ready.dump().c_str());

  const std::vector<Case> cases = {
      {"naive_f32_nn", kF32, std::nullopt, std::nullopt},
      {"naive_f32_nn", kF32Beta, std::nullopt, std::nullopt},
      {"naive_bf16_tn", kBf16TnPadded, std::nullopt, std::nullopt},
      {"naive_f32_nn", kF32BatchBias, std::nullopt, std::array<std::uint32_t, 3>{16, 32, 3}},
      {"unwritten", kF32, Rule::unwritten_output, std::nullopt},
      {"half_written", kF32, Rule::unwritten_output, std::nullopt},
      {"modifies_input", kF32, Rule::input_modified, std::nullopt},
      {"out_of_bounds", kF32, Rule::guard_band_overwritten, std::nullopt},
      {"workspace_overrun", kF32, Rule::workspace_guard_overwritten, std::nullopt},
      {"reads_c_when_beta_zero", kF32, Rule::nan_or_inf, std::nullopt},
      {"wrong_transpose", kF32, Rule::wrong_result, std::nullopt},
      {"tf32_on_strict_f32", kF32, Rule::precision_below_class, std::nullopt},
      {"state_counter", kF32, Rule::state_between_calls, std::nullopt},
      {"cache_by_address", kF32, Rule::state_between_calls, std::nullopt},
      {"race", kF32, Rule::nondeterministic, std::nullopt},
      {"atomic_order", kF32, Rule::nondeterministic, std::nullopt},
      {"skips_when_timed", kF32, Rule::timed_output_mismatch, std::nullopt},
      {"dependent_waits_first", kF32, std::nullopt, std::nullopt},
      {"dependent_reads_early", kF32, Rule::read_before_grid_wait, std::nullopt},
      {"hang", kF32, Rule::hang_timeout, std::nullopt, 10s},
      {"naive_f32_nn", kF32, std::nullopt, std::nullopt},
      {"trap", kF32, Rule::crashed, std::nullopt},
      {"naive_f32_nn", kF32, std::nullopt, std::nullopt},
      {"illegal_address", kF32, Rule::crashed, std::nullopt},
      {"naive_f32_nn", kF32, std::nullopt, std::nullopt},
  };
  std::vector<Row> rows;
  for (const Case& c : cases) {
    const EvalRequest request = build_request(c, dev.arch);
    const auto t0 = std::chrono::steady_clock::now();
    const Verdict v = parent.evaluate(request, c.watchdog);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows.push_back(make_row(c.kernel, c.key, c.expect, v, s));
    if (v.correct()) {
      std::printf("%s on %s: cand %.3g/%.3g vendor %.3g/%.3g (max_rel/norm_rel); %s\n", c.kernel,
                  short_key(c.key).c_str(), v.candidate_error.max_rel, v.candidate_error.norm_rel,
                  v.vendor_error.max_rel, v.vendor_error.norm_rel, v.detail.c_str());
    }
  }

  // In-process (the library entry kdctl validate uses): a roofline that makes any time impossible,
  // a source that does not compile, a plan naming a missing entry.
  Roofline absurd;
  absurd.gpu = "test";
  absurd.bandwidth_bytes_per_s = 1e3;
  Evaluator evaluator({0, {}, absurd});
  {
    const auto t0 = std::chrono::steady_clock::now();
    const Verdict v = evaluator.evaluate_source(kF32, std::string(test::test_kernel("naive_f32_nn")), test_options());
    rows.push_back(make_row("naive_f32_nn+roofline", kF32, Rule::faster_than_roofline, v,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  {
    const Verdict v = evaluator.evaluate_source(kF32, "extern \"C\" __global__ void kd_main( {", test_options());
    rows.push_back(make_row("syntax_error", kF32, Rule::compile_failed, v, 0.0));
  }
  {
    std::string source(test::test_kernel("naive_f32_nn"));
    source.replace(source.find("\"entry\":\"kd_main\""), 17, "\"entry\":\"kd_gone\"");
    const Verdict v = evaluator.evaluate_source(kF32, source, test_options());
    rows.push_back(make_row("missing_entry", kF32, Rule::plan_invalid, v, 0.0));
  }

  print_table(rows);
  for (const Row& r : rows) EXPECT_TRUE(r.ok) << r.kernel << " on " << r.key << ": expected " << r.expected
                                              << ", got " << r.verdict << " (" << r.detail << ")";
  EXPECT_EQ(parent.restarts(), 3) << "a fresh worker after the hang, the trap and the illegal address";
}

// The worker the builtin families' gate tests evaluate through: this binary in worker mode.
worker::WorkerSpawn builtin_gate_worker(const test::TempDir& dir) {
  worker::WorkerSpawn spawn;
  spawn.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "--kd-worker", "--device", "0",
                "--roofline-dir", (dir.path() / "roofline").string()};
  return spawn;
}

// Renders family `f`'s configuration `p` for `line`, compiles it, runs it through the whole gate,
// prints one line headed `label` with its time against cuBLAS, and expects it correct; with
// `may_vary_bits`, a verdict that it is correct but returns different bits on two runs is accepted
// too (skinny_ws, a trial family whose sums use float atomics).
void gate_builtin(worker::WorkerParent& parent, const builtin::Family& f, const builtin::Target& t,
                  const DeviceInfo& dev, const char* label, const char* line, const builtin::Params& p,
                  bool may_vary_bits = false) {
  const GemmKey key = std::get<GemmKey>(parse_key(line));
  ASSERT_TRUE(f.valid(key, t, p)) << builtin::describe(p);
  const std::string source = builtin::render(f, key, t, p);
  const search::CompileOutput out =
      search::compile_cuda({.source = source, .name = std::string(f.name) + ".cu", .arch = dev.arch});
  ASSERT_EQ(out.status, search::CompileStatus::ok) << out.log;
  EvalRequest r;
  r.key_line = line;
  r.cubin = out.cubin;
  r.plan = f.plan(key, t, p);
  r.options = test_options();
  const Verdict v = parent.evaluate(r, 60s);
  std::printf("%s %s | %s: %s, %.1f us vs cuBLAS %.1f us; err %.3g (cuBLAS %.3g), lean %.2g (cuBLAS %.2g) %s\n",
              label, line + 5, builtin::describe(p).c_str(), std::string(to_string(v.rule)).c_str(),
              v.candidate_time ? v.candidate_time->median_us : 0.0, v.baseline_time ? v.baseline_time->median_us : 0.0,
              v.candidate_error.norm_rel, v.vendor_error.norm_rel, v.candidate_error.lean, v.vendor_error.lean,
              v.correct() ? "" : v.detail.c_str());
  std::printf("  lean by trial:");
  for (const auto& trial : v.trials)
    std::printf(" %s %.2g (cuBLAS %.2g);", trial.distribution.c_str(), trial.candidate.lean, trial.vendor.lean);
  std::printf("\n");
  const bool varies = may_vary_bits && v.rule == Rule::nondeterministic &&
                      v.detail.find("correct within the tolerance") != std::string::npos;
  EXPECT_TRUE(v.correct() || varies) << builtin::describe(p) << " on " << line << ": " << to_string(v.rule) << " "
                                     << v.detail;
  if (varies) std::printf("  %s\n", v.detail.c_str());
}

// The sm_90a builtin families (wgmma; wg_tma also TMA) on this GPU. Skips without a GPU or on
// another architecture; gate() starts the gate worker on first use.
class GpuEvalBuiltin : public ::testing::Test {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    dev_ = query_device(0);
    if (dev_.cc_major != 9) GTEST_SKIP() << "the wgmma families need sm_90a; this GPU is " << dev_.arch;
    target_ = builtin::Target::from(dev_);
  }
  worker::WorkerParent& gate() {
    if (!parent_) {
      parent_.emplace(builtin_gate_worker(dir_));
      parent_->ensure_started();
    }
    return *parent_;
  }
  // No evaluation needed a fresh worker (0 when gate() was never used).
  void expect_no_restarts() const { EXPECT_EQ(parent_ ? parent_->restarts() : 0, 0); }
  // Every seed of family f for `line`, completed, that `pick` keeps (every one without it), through
  // gate_builtin under `label`, `check(key, p)` asserting on it first; adds the seeds run to
  // `evaluated`. Call it inside ASSERT_NO_FATAL_FAILURE: a failed assertion ends the test.
  void gate_seeds(const builtin::Family& f, const char* line, const char* label, int& evaluated,
                  const std::function<bool(const builtin::Params&)>& pick = {},
                  const std::function<void(const GemmKey&, const builtin::Params&)>& check = {},
                  bool may_vary_bits = false) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    for (const builtin::Params& raw : f.seeds(key, target_)) {
      const builtin::Params p = f.complete(key, target_, raw);
      if (pick && !pick(p)) continue;
      if (check) {
        ASSERT_NO_FATAL_FAILURE(check(key, p));
      }
      ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), f, target_, dev_, label, line, p, may_vary_bits));
      ++evaluated;
    }
  }
  // wg_tiled's f16-split seeds (gate_seeds' pick), whose plans start with the split of B (its check).
  static bool f16_split(const builtin::Params& p) { return p.at("KD_F16S") == 1; }
  std::function<void(const GemmKey&, const builtin::Params&)> split_b16_first() const {
    return [this](const GemmKey& key, const builtin::Params& p) {
      ASSERT_EQ(builtin::wg_tiled_family().plan(key, target_, p).launches.front().entry, "kd_wg_split_b16");
    };
  }
  DeviceInfo dev_;
  builtin::Target target_;
  test::TempDir dir_;
  std::optional<worker::WorkerParent> parent_;
};

// The wg_tma trial family (TMA-fed wgmma for 16-bit inputs, tensor maps built on the device) through
// the same gate: every seed of an issue shape, of a ragged batched bias call with beta != 0 and of an
// f16 call with an f32 output must pass (correct, faster or not). Prints its times against cuBLAS.
// This is the check that lets the family leave trial status (Family::trial).
// wg_tma builds its TMA tensor maps on the device (tensormap.replace). This compares the two maps
// its first CTA publishes with what the driver's cuTensorMapEncodeTiled makes of the same tensor,
// byte for byte, in a probe build that issues no copy: a wrong field shows here as a named byte
// difference instead of a TMA fault in the gate.
TEST_F(GpuEvalBuiltin, WgTmaDeviceBuiltMapsMatchTheDriverEncoding) {
  const CudaDriver& d = cu();  // KD_REQUIRE_GPU left device 0's primary context current
  const builtin::Family& f = builtin::wg_tma_family();
  const builtin::Target& t = target_;
  const char* line =
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4160 ldb=4224 ldc=4096 batch=1 "
      "epilogue=none beta0=1";
  const GemmKey key = std::get<GemmKey>(parse_key(line));
  ASSERT_FALSE(f.rejects(key).has_value()) << line;
  const builtin::Params p = f.complete(key, t, f.seeds(key, t).at(0));
  ASSERT_TRUE(f.valid(key, t, p)) << builtin::describe(p);
  const LaunchPlan plan = f.plan(key, t, p);
  const LaunchSpec& l = plan.launches.at(0);
  const unsigned bm = static_cast<unsigned>(key.m) / l.grid[1], bn = static_cast<unsigned>(key.n) / l.grid[0];
  ASSERT_EQ(bm * l.grid[1], key.m) << "the test shape must divide into whole tiles";
  ASSERT_EQ(bn * l.grid[0], key.n);

  const std::string source = "#define KD_MAP_PROBE 1\n" + builtin::render(f, key, t, p);
  const search::CompileOutput out =
      search::compile_cuda({.source = source, .name = "wg_tma_probe.cu", .arch = dev_.arch});
  ASSERT_EQ(out.status, search::CompileStatus::ok) << out.log;
  CUmodule module = nullptr;
  KD_CU_CHECK(d.cuModuleLoadData(&module, out.cubin.data()), "probe module");
  CUfunction fn = nullptr;
  KD_CU_CHECK(d.cuModuleGetFunction(&fn, module, l.entry.c_str()), l.entry);
  KD_CU_CHECK(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.smem_bytes)),
              "shared memory");

  const std::size_t a_bytes = static_cast<std::size_t>(key.lda * key.m) * 2;
  const std::size_t b_bytes = static_cast<std::size_t>(key.ldb * key.n) * 2;
  const std::size_t c_bytes = static_cast<std::size_t>(key.ldc * key.n) * 2;
  CUdeviceptr a = 0, b = 0, c = 0, ws = 0;
  KD_CU_CHECK(d.cuMemAlloc(&a, a_bytes), "A");
  KD_CU_CHECK(d.cuMemAlloc(&b, b_bytes), "B");
  KD_CU_CHECK(d.cuMemAlloc(&c, c_bytes), "C");
  KD_CU_CHECK(d.cuMemAlloc(&ws, plan.workspace_bytes), "workspace");
  KD_CU_CHECK(d.cuMemsetD8(ws, 0xA5, plan.workspace_bytes), "poison workspace");
  kd_gemm_args args{};
  args.a = reinterpret_cast<const void*>(a);
  args.b = reinterpret_cast<const void*>(b);
  args.c = reinterpret_cast<void*>(c);
  args.workspace = reinterpret_cast<void*>(ws);
  args.m = key.m, args.n = key.n, args.k = key.k;
  args.lda = key.lda, args.ldb = key.ldb, args.ldc = key.ldc;
  args.batch = 1;
  args.alpha = 1.f;
  void* params[] = {&args};
  KD_CU_CHECK(d.cuLaunchKernel(fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.smem_bytes,
                               nullptr, params, nullptr),
              "probe launch");
  KD_CU_CHECK(d.cuCtxSynchronize(), "probe run");
  std::array<unsigned char, 256> device_maps{};
  KD_CU_CHECK(d.cuMemcpyDtoH(device_maps.data(), ws, device_maps.size()), "workspace");

  // What the host API makes of the same two tensors: {k, rows} bf16, row stride in bytes, a box
  // of 64 x rows with the 128-byte swizzle, zero fill.
  auto encode = [&](CUdeviceptr base, long long rows, long long ld, unsigned box_rows) {
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(key.k), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * 2};
    const cuuint32_t box[2] = {64, box_rows};
    const cuuint32_t elem[2] = {1, 1};
    KD_CU_CHECK(d.cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, reinterpret_cast<void*>(base),
                                         dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                "cuTensorMapEncodeTiled");
    return map;
  };
  const CUtensorMap host_a = encode(a, key.m, key.lda, bm), host_b = encode(b, key.n, key.ldb, bn);
  auto hex = [](const unsigned char* bytes, std::size_t n) {
    std::string s;
    char buf[4];
    for (std::size_t i = 0; i < n; ++i) {
      std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
      s += buf;
      if (i % 16 == 15) s += i + 1 < n ? "\n" : "";
      else if (i % 4 == 3) s += ' ';
    }
    return s;
  };
  for (const auto& [name, host, dev_map] :
       {std::tuple{"A", &host_a, device_maps.data()}, std::tuple{"B", &host_b, device_maps.data() + 128}}) {
    const auto* h = reinterpret_cast<const unsigned char*>(host);
    // Bytes 65 and 73 are the driver encoder's own: cuTensorMapEncodeTiled sets 0x40 and 0x04 there
    // (H200, driver 580) and no tensormap.replace field writes them; the device-built maps run
    // correctly without them (GpuEvalBuiltin.WgTmaSeedsPassTheGate). Every other byte must match.
    std::string differ;
    for (std::size_t i = 0; i < 128; ++i)
      if (h[i] != dev_map[i] && i != 65 && i != 73) {
        // Two appends, not " " + to_string: GCC 12 at -O2 warns of a huge memcpy bound in the latter.
        differ += ' ';
        differ += std::to_string(i);
      }
    std::printf("wg_tma map %s (tile %ux%u): %s\n", name, bm, bn, differ.empty() ? "identical" : ("bytes" + differ).c_str());
    EXPECT_TRUE(differ.empty()) << "map " << name << " differs at bytes" << differ << "\ndriver:\n"
                                << hex(h, 128) << "\ndevice:\n" << hex(dev_map, 128);
  }
  d.cuMemFree(a);
  d.cuMemFree(b);
  d.cuMemFree(c);
  d.cuMemFree(ws);
  d.cuModuleUnload(module);
}

TEST_F(GpuEvalBuiltin, WgTmaSeedsPassTheGate) {
  const builtin::Family& f = builtin::wg_tma_family();
  int evaluated = 0;
  for (const char* line : {
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=6144 n=64 k=4096 lda=4096 ldb=4096 ldc=6144 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=1000 n=300 k=504 lda=504 ldb=504 ldc=1000 batch=2 "
           "stride_a=504000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
           "gemm a=f16 b=f16 c=f32 compute=f32 ta=T tb=N m=777 n=333 k=560 lda=560 ldb=560 ldc=777 batch=1 "
           "epilogue=none beta0=1"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f.rejects(key).has_value()) << line;
    ASSERT_NO_FATAL_FAILURE(gate_seeds(f, line, "wg_tma", evaluated));
  }
  EXPECT_GE(evaluated, 8);
  expect_no_restarts();
}

// wg_tiled with KD_BLO: B's lo parts split once per call by a first launch into the workspace (after
// any split-K partials) and read by the main kernel as its programmatic dependent. Through the whole
// gate: the n <= 16 seed that uses it, then ragged, batched and biased calls with k not a multiple of 4
// (the split's scalar path, edge k tiles) with and without split-K partials in front of the lo parts.
TEST_F(GpuEvalBuiltin, WgTiledSplitOfBPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  const builtin::Target& t = target_;
  struct BloCase {
    const char* line;
    long long split;  // 0: the seed's own
  };
  int evaluated = 0;
  for (const BloCase c : {
           BloCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=28672 n=16 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 "
                "epilogue=none beta0=1",
                0},
           BloCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=1000 n=13 k=502 lda=504 ldb=504 ldc=1000 batch=2 "
                "stride_a=504000 stride_b=6552 stride_c=13000 epilogue=bias beta0=0",
                3},
           BloCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=300 k=502 lda=1000 ldb=504 ldc=1000 batch=2 "
                "stride_a=502000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
                1},
           BloCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=300 k=502 lda=1000 ldb=504 ldc=1000 batch=2 "
                "stride_a=502000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
                3}}) {
    const GemmKey key = std::get<GemmKey>(parse_key(c.line));
    ASSERT_FALSE(f.rejects(key).has_value()) << c.line;
    builtin::Params p = f.complete(key, t, f.seeds(key, t).front());
    p["KD_BLO"] = 1;
    if (key.n > 16) {
      p["KD_STAGES"] = 4;  // A, B and B lo per stage: 4 stages of 128-column tiles fit
      p["KD_PROMOTE"] = 1;
    }
    if (c.split) p["KD_SPLITK"] = c.split;
    ASSERT_EQ(f.plan(key, t, p).launches.front().entry, "kd_wg_split_b");
    ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), f, t, dev_, "wg_tiled blo", c.line, p));
    ++evaluated;
  }
  EXPECT_EQ(evaluated, 4);
  expect_no_restarts();
}

// wg_tiled with KD_TAIL: the tiles past the last whole wave split in k, their partials summed by a
// programmatic dependent launch. The tail seeds of ragged shapes (m not a multiple of the tile or of 4,
// k not a multiple of the k tile) through the whole gate, 128- and 16-column tiles.
TEST_F(GpuEvalBuiltin, WgTiledTailSplitPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  const builtin::Target& t = target_;
  int evaluated = 0;
  for (const char* line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=20001 n=100 k=1000 lda=1000 ldb=1000 ldc=20001 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=20001 n=13 k=1000 lda=20004 ldb=1000 ldc=20001 batch=1 "
           "epilogue=bias beta0=0"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f.rejects(key).has_value()) << line;
    const int before = evaluated;
    ASSERT_NO_FATAL_FAILURE(gate_seeds(
        f, line, "wg_tiled tail", evaluated,
        // f16 splits: WgTiledF16SplitPassesTheGate
        [](const builtin::Params& p) { return p.at("KD_TAIL") >= 2 && p.at("KD_F16S") != 1; },
        [&](const GemmKey& k, const builtin::Params& p) {
          ASSERT_EQ(f.plan(k, t, p).launches.back().entry, "kd_wg_tail_reduce");
        }));
    EXPECT_GT(evaluated, before) << "no tail seed for " << line;
  }
  EXPECT_EQ(evaluated, 2);
  expect_no_restarts();
}

// wg_tiled with KD_SK (stream-K): each CTA takes an equal run of tile-major k-tile units; a tile one CTA
// covers goes straight to C, the others leave partials that a programmatic dependent sums in CTA
// order. Through the whole gate: the 6144x128 seed, then ragged calls (m, n and k off the tile, k not a
// multiple of 4 rows of k tiles, bias, beta != 0) with whole and split tiles, ta = N, 16-column tiles,
// a batch of two and a CTA count that is not the SM count.
TEST_F(GpuEvalBuiltin, WgTiledStreamKPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  const builtin::Target& t = target_;
  struct SkCase {
    const char* line;
    long long ctas;  // 0: the seed's own
  };
  int evaluated = 0;
  for (const SkCase c : {
           SkCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=6144 n=128 k=4096 lda=4096 ldb=4096 ldc=6144 batch=1 "
                  "epilogue=none beta0=1",
                  0},
           SkCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=20001 n=100 k=1000 lda=1000 ldb=1000 ldc=20001 batch=1 "
                  "epilogue=bias beta0=0",
                  t.sms},
           SkCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=300 k=502 lda=1000 ldb=504 ldc=1000 batch=2 "
                  "stride_a=502000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
                  100},
           SkCase{"gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=20001 n=13 k=1000 lda=20004 ldb=1000 ldc=20001 batch=1 "
                  "epilogue=none beta0=1",
                  t.sms}}) {
    const GemmKey key = std::get<GemmKey>(parse_key(c.line));
    ASSERT_FALSE(f.rejects(key).has_value()) << c.line;
    builtin::Params p;
    if (c.ctas == 0) {
      for (const builtin::Params& raw : f.seeds(key, t))
        if (raw.contains("KD_SK") && raw.at("KD_SK") > 0) p = f.complete(key, t, raw);
      ASSERT_FALSE(p.empty()) << "no stream-K seed for " << c.line;
    } else {
      p = builtin::as_stream_k(f.complete(key, t, f.seeds(key, t).front()), c.ctas);
    }
    ASSERT_TRUE(f.valid(key, t, p)) << builtin::describe(p);
    ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), f, t, dev_, "wg_tiled stream-K", c.line, p));
    ++evaluated;
  }
  EXPECT_EQ(evaluated, 4);
  expect_no_restarts();
}

// wg_tiled with KD_F16S (strict fp32 from f16 hi|lo splits with power-of-two scales): every such
// seed through the whole gate, including its value distributions scaled by 1e-2 and 1e2. The
// 4096x128 split seeds, a ragged batched call (k off the k tile and off four, bias, beta != 0: B's
// last halves and column scales come from the partial float4 path) and a tail split.
TEST_F(GpuEvalBuiltin, WgTiledF16SplitPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  int evaluated = 0;
  for (const char* line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=1000 n=100 k=1001 lda=1004 ldb=1004 ldc=1000 batch=2 "
           "stride_a=1004000 stride_b=100400 stride_c=100000 epilogue=bias beta0=0",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=20001 n=100 k=1000 lda=1000 ldb=1000 ldc=20001 batch=1 "
           "epilogue=none beta0=1"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f.rejects(key).has_value()) << line;
    const int before = evaluated;
    ASSERT_NO_FATAL_FAILURE(gate_seeds(f, line, "wg_tiled f16 split", evaluated, f16_split, split_b16_first()));
    EXPECT_GT(evaluated, before) << "no f16-split seed for " << line;
  }
  EXPECT_GE(evaluated, 5);
  expect_no_restarts();
}

// Issue 30: the f16 splits for every layout, through the whole gate (value distributions scaled by 1e-2
// and 1e2 included): each of the four transposes at 1024^3 (ta = N reads A's fragments from k rows;
// tb = T splits B from its rows of n in a first launch of 32 columns per block), then strided batches
// of the training backward layouts with ragged edges: dX = dY W (ta = N tb = N) with bias and beta, and
// dW = X^T dY (ta = N tb = T, ldb and the batch stride off 16 bytes, k off the k tile). Every f16-split
// seed of each key; prints each one's time against cuBLAS's.
TEST_F(GpuEvalBuiltin, WgTiledF16SplitEveryLayoutPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  int evaluated = 0, tb_t = 0, ta_n = 0;
  for (const char* line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=T m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=300 k=502 lda=1000 ldb=504 ldc=1000 batch=3 "
           "stride_a=502000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=300 k=1001 lda=1000 ldb=301 ldc=1000 batch=3 "
           "stride_a=1001000 stride_b=301301 stride_c=300000 epilogue=none beta0=0"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f.rejects(key).has_value()) << line << ": " << *f.rejects(key);
    const int before = evaluated;
    ASSERT_NO_FATAL_FAILURE(gate_seeds(f, line, "wg_tiled f16 split", evaluated, f16_split, split_b16_first()));
    const int found = evaluated - before;
    tb_t += key.tb == Transpose::T ? found : 0;
    ta_n += key.ta == Transpose::N ? found : 0;
    EXPECT_GT(found, 0) << "no f16-split seed for " << line;
  }
  EXPECT_GE(evaluated, 6);
  EXPECT_GE(tb_t, 3);
  EXPECT_GE(ta_n, 4);
  expect_no_restarts();
}

// skinny_bulk with B's columns held in shared memory (KD_BSMEM, session 27): the seed of a decode
// shape, a ragged f16 strided batch with bias and beta != 0 whose k is not a multiple of the chunk
// (n = 13: the second n8 tile half past n), and 9 bf16 columns into an f32 C, through the whole gate.
TEST_F(GpuEvalBuiltin, SkinnyBulkBInSharedMemoryPassesTheGate) {
  const builtin::Family* f = builtin::find_family("skinny_bulk");
  ASSERT_NE(f, nullptr);
  const builtin::Target& t = target_;
  int evaluated = 0;
  for (const char* line : {
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=28672 n=16 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f16 b=f16 c=f16 compute=f32 ta=T tb=N m=1000 n=13 k=1000 lda=1000 ldb=1000 ldc=1000 batch=2 "
           "stride_a=1000000 stride_b=13000 stride_c=13000 epilogue=bias beta0=0",
           "gemm a=bf16 b=bf16 c=f32 compute=f32 ta=T tb=N m=3000 n=9 k=2048 lda=2048 ldb=2048 ldc=3000 batch=1 "
           "epilogue=none beta0=1"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f->rejects(key).has_value()) << line;
    builtin::Params p = f->complete(key, t, {{"KD_ROWS", 16}, {"KD_KC", 1024}, {"KD_WARPS", 8},
                                             {"KD_CTAS_PER_SM", 1}, {"KD_BSMEM", 1}});
    ASSERT_TRUE(f->valid(key, t, p)) << builtin::describe(p);
    ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), *f, t, dev_, "skinny_bulk bsmem", line, p));
    ++evaluated;
  }
  EXPECT_EQ(evaluated, 3);
  expect_no_restarts();
}

// simt_gemv (session 28): every seed of a bf16 decode shape and of a strict f32 one through the
// whole gate, then a ragged f16 strided batch of 3 columns with bias and beta != 0 (k not a multiple
// of a warp's load span, m not a multiple of the rows per block) and 2 bf16 columns into an f32 C,
// each with k split over 4 warps.
TEST_F(GpuEvalBuiltin, SimtGemvPassesTheGate) {
  const builtin::Family* f = builtin::find_family("simt_gemv");
  ASSERT_NE(f, nullptr);
  const builtin::Target& t = target_;
  int evaluated = 0;
  for (const char* line : {
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=14336 n=1 k=4096 lda=4096 ldb=4096 ldc=14336 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=1 k=14336 lda=14336 ldb=14336 ldc=4096 batch=1 "
           "epilogue=none beta0=1"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f->rejects(key).has_value()) << line;
    ASSERT_NO_FATAL_FAILURE(gate_seeds(*f, line, "simt_gemv seed", evaluated));  // gate_builtin asserts valid()
  }
  for (const char* line : {
           "gemm a=f16 b=f16 c=f16 compute=f32 ta=T tb=N m=1001 n=3 k=1000 lda=1000 ldb=1000 ldc=1001 batch=2 "
           "stride_a=1001000 stride_b=3000 stride_c=3003 epilogue=bias beta0=0",
           "gemm a=bf16 b=bf16 c=f32 compute=f32 ta=T tb=N m=3000 n=2 k=2056 lda=2056 ldb=2056 ldc=3000 batch=1 "
           "epilogue=none beta0=1"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f->rejects(key).has_value()) << line;
    const builtin::Params p = f->complete(
        key, t, {{"KD_WARPS", 8}, {"KD_KSPLIT", 4}, {"KD_RPW", 2}, {"KD_UNROLL", 2}, {"KD_NMAX", 4}});
    ASSERT_TRUE(f->valid(key, t, p)) << builtin::describe(p);
    ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), *f, t, dev_, "simt_gemv k split", line, p));
    ++evaluated;
  }
  EXPECT_EQ(evaluated, 12);
  expect_no_restarts();
}

// skinny_ws (session 29): every seed of a bf16 decode shape at 16 tokens through the whole gate (each
// correct; the gate may reject it as not reproducible, its float atomics' order varying), then
// ragged keys with two configurations each (half-unit stages, two deep, one octet; whole-unit stages,
// three deep, two octets): an f16 strided batch of 13 columns with bias and beta != 0 whose k leaves
// six of the eight consumers without a slice, 9 bf16 columns into an f32 C with a partial last slice,
// 5 columns with fewer row blocks than SMs, and k = 6144, where each consumer holds two slices and
// reloads its tokens per row block.
TEST_F(GpuEvalBuiltin, SkinnyWsPassesTheGate) {
  const builtin::Family* f = builtin::find_family("skinny_ws");
  ASSERT_NE(f, nullptr);
  const builtin::Target& t = target_;
  int evaluated = 0;
  {
    const char* line =
        "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=28672 n=16 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 "
        "epilogue=none beta0=1";
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(builtin::not_searched_for(*f, key).has_value()) << line;
    ASSERT_NO_FATAL_FAILURE(gate_seeds(*f, line, "skinny_ws seed", evaluated, {}, {}, true));
  }
  for (const char* line : {
           "gemm a=f16 b=f16 c=f16 compute=f32 ta=T tb=N m=1000 n=13 k=1000 lda=1000 ldb=1000 ldc=1000 batch=2 "
           "stride_a=1000000 stride_b=13000 stride_c=13000 epilogue=bias beta0=0",
           "gemm a=bf16 b=bf16 c=f32 compute=f32 ta=T tb=N m=3000 n=9 k=2056 lda=2056 ldb=2056 ldc=3000 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=100 n=5 k=4096 lda=4096 ldb=4096 ldc=100 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=2048 n=16 k=6144 lda=6144 ldb=6144 ldc=2048 batch=1 "
           "epilogue=none beta0=1"}) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f->rejects(key).has_value()) << line;
    for (const builtin::Params& raw : {builtin::Params{{"KD_STAGE_K", 256}, {"KD_STAGES", 2}, {"KD_OCTETS", 1}},
                                       builtin::Params{{"KD_STAGE_K", 512}, {"KD_STAGES", 3}, {"KD_OCTETS", 2}}}) {
      const builtin::Params p = f->complete(key, t, raw);
      ASSERT_TRUE(f->valid(key, t, p)) << builtin::describe(p);
      ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), *f, t, dev_, "skinny_ws ragged", line, p, true));
      ++evaluated;
    }
  }
  EXPECT_EQ(evaluated, 12);
  expect_no_restarts();
}

// wg_tiled's m64n32 tiles (17-47 columns: decode batches and token buckets above 16 in f32): every
// seed through the whole gate, with its time against cuBLAS: a Linear layer at 32 tokens, a ragged 24,
// and a strided batch of ta = N with bias and beta at 40 columns (two column tiles).
TEST_F(GpuEvalBuiltin, WgTiledNarrow32PassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  int evaluated = 0;
  for (const char* line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=32 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4000 n=24 k=4004 lda=4004 ldb=4004 ldc=4000 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=40 k=500 lda=1000 ldb=504 ldc=1000 batch=2 "
           "stride_a=504000 stride_b=20160 stride_c=40000 epilogue=bias beta0=0"}) {
    ASSERT_NO_FATAL_FAILURE(gate_seeds(f, line, "wg_tiled m64n32", evaluated, {},
                                       [](const GemmKey&, const builtin::Params& p) {
                                         ASSERT_EQ(p.at("KD_BN"), 32) << builtin::describe(p);
                                       }));
  }
  EXPECT_GE(evaluated, 6);
  expect_no_restarts();
}

// The narrow plans on f16 splits (m64n32 and m64n64 consumers, KD_F16S, strict f32): their seeds
// through the whole gate, with their times against cuBLAS: Linear layers at 32 and 64 tokens, a ragged
// 56, and a strided batch of ta = N with bias and beta at 40 columns.
TEST_F(GpuEvalBuiltin, WgTiledNarrowF16SplitPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  int evaluated = 0;
  for (const char* line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=32 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=64 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4000 n=56 k=4004 lda=4004 ldb=4004 ldc=4000 batch=1 "
           "epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=40 k=500 lda=1000 ldb=504 ldc=1000 batch=2 "
           "stride_a=504000 stride_b=20160 stride_c=40000 epilogue=bias beta0=0"}) {
    ASSERT_NO_FATAL_FAILURE(gate_seeds(f, line, "wg_tiled narrow f16 splits", evaluated, f16_split,
                                       [](const GemmKey&, const builtin::Params& p) {
                                         ASSERT_LE(p.at("KD_BN"), 64) << builtin::describe(p);
                                       }));
  }
  EXPECT_EQ(evaluated, 4);
  expect_no_restarts();
}

// The persistent stream-K seed of batched calls (whole tiles per CTA, no partials): attention's
// scores and a ragged batch with bias and beta (k = 72: a partial k tile in every tile), within each
// batch entry and over all of them (KD_SKB); where k <= 64, also with the consumers taking turns
// (KD_PP, a plan that hangs if its host rule is wrong): the scores and a ragged batch with bias and beta;
// where entries have at most 64 rows, also with one consumer warpgroup: attention's values and a ragged batch.
TEST_F(GpuEvalBuiltin, WgTiledBatchedStreamKPassesTheGate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  int evaluated = 0;
  for (const char* line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=512 n=512 k=64 lda=64 ldb=64 ldc=512 batch=32 "
           "stride_a=32768 stride_b=32768 stride_c=262144 epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=500 n=384 k=72 lda=72 ldb=72 ldc=500 batch=40 "
           "stride_a=36000 stride_b=27648 stride_c=192000 epilogue=bias beta0=0",
           // Over every batch entry (KD_SKB): one tile each, two per CTA; then a ragged one with bias.
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=128 n=128 k=128 lda=128 ldb=128 ldc=128 batch=256 "
           "stride_a=16384 stride_b=16384 stride_c=16384 epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=120 n=100 k=72 lda=72 ldb=72 ldc=120 batch=256 "
           "stride_a=8640 stride_b=7200 stride_c=12000 epilogue=bias beta0=0",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=120 n=100 k=40 lda=40 ldb=40 ldc=120 batch=256 "
           "stride_a=4800 stride_b=4000 stride_c=12000 epilogue=bias beta0=0",
           // Entries of at most 64 rows, also with one consumer: attention's values (64-wide heads, ta = N),
           // then a ragged one with bias and beta.
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=128 k=128 lda=64 ldb=128 ldc=64 batch=512 "
           "stride_a=8192 stride_b=16384 stride_c=8192 epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=60 n=100 k=72 lda=60 ldb=72 ldc=60 batch=256 "
           "stride_a=4320 stride_b=7200 stride_c=6000 epilogue=bias beta0=0",
           // ta = N with two consumers, whose A arrives by the TMA in padded k rows (KD_TMAL): BERT's scores,
           // then a ragged one with bias and beta.
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=128 n=128 k=64 lda=128 ldb=64 ldc=128 batch=512 "
           "stride_a=8192 stride_b=8192 stride_c=16384 epilogue=none beta0=1",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=120 n=100 k=40 lda=120 ldb=40 ldc=120 batch=256 "
           "stride_a=4800 stride_b=4000 stride_c=12000 epilogue=bias beta0=0"}) {
    ASSERT_NO_FATAL_FAILURE(gate_seeds(f, line, "wg_tiled batched stream-K", evaluated,
                                       [](const builtin::Params& p) { return p.at("KD_SK") != 0; }));
  }
  EXPECT_EQ(evaluated, 19) << "nine stream-K seeds, four of them also with turns (k <= 64) and those with TMA "
                               "stores, two with one consumer; those with two consumers and tb = N copy their "
                               "operands by the TMA";
  expect_no_restarts();
}

// TF32-class keys both one-product families are gated on: 1024^3 in the four layouts, dW's layout
// (ta = N tb = T) as a ragged strided batch with bias and beta, and the 4096^3 cube.
constexpr const char* kTf32Lines[] = {
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
    "epilogue=none beta0=1 precision=tf32",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
    "epilogue=none beta0=1 precision=tf32",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
    "epilogue=none beta0=1 precision=tf32",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=T m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 batch=1 "
    "epilogue=none beta0=1 precision=tf32",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=300 k=1001 lda=1000 ldb=301 ldc=1000 batch=3 "
    "stride_a=1001000 stride_b=301301 stride_c=300000 epilogue=bias beta0=0 precision=tf32",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1 precision=tf32",
};

// Issue 30's TF32 class: a precision=tf32 call may run one f16 product of the scaled splits' hi parts
// (KD_F16S with KD_3XTF32 = 0, TF32's 11 significant bits at f16's rate): the seeds of tb = T calls,
// the idea move's plan for tb = N, through the whole gate against cuBLAS's own TF32 GEMM: the four transposes at 1024^3, a ragged strided batch of
// dW's layout (ta = N tb = T, bias, beta != 0), and 4096^3 (ta = N, the cube the target
// names), whose printed times are cuBLAS TF32's in the same run.
TEST_F(GpuEvalBuiltin, WgTiledF16OneProductPassesTheTf32Gate) {
  const builtin::Family& f = builtin::wg_tiled_family();
  const builtin::Target& t = target_;
  const builtin::IdeaMove* f16s_on = nullptr;
  for (const builtin::IdeaMove& m : builtin::wg_tiled_ideas())
    if (m.id == std::string("wg.f16s_on")) f16s_on = &m;
  ASSERT_NE(f16s_on, nullptr);
  int evaluated = 0;
  for (const char* line : kTf32Lines) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(f.rejects(key).has_value()) << line << ": " << *f.rejects(key);
    // tb = T: the seeds are the one product; tb = N: the idea move from the first seed that takes it.
    int found = 0;
    for (const builtin::Params& raw : f.seeds(key, t)) {
      builtin::Params p = f.complete(key, t, raw);
      if (p.at("KD_F16S") == 0) {
        const auto moved = f16s_on->apply(key, t, p);
        if (!moved || found > 0) continue;
        p = f.complete(key, t, *moved);
        ASSERT_TRUE(f.valid(key, t, p)) << builtin::describe(p);
      }
      ASSERT_EQ(p.at("KD_3XTF32"), 0) << builtin::describe(p);
      ++found;
      ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), f, t, dev_, "wg_tiled f16 one product", line, p));
      ++evaluated;
    }
    EXPECT_GT(found, 0) << "no one-product plan for " << line;
  }
  EXPECT_GE(evaluated, 6);
  expect_no_restarts();
}

// wg_tma_f32 (issue 30's TF32 class): op(A) and op(B) as row-scaled f16 copies, written by a first
// launch, multiplied by the TMA kernel. Every seed of every layout, a ragged strided batch with bias
// and beta, and the large cubes whose times issue 30's table reports.
TEST_F(GpuEvalBuiltin, WgTmaF32PassesTheTf32Gate) {
  const builtin::Family& f = builtin::wg_tma_f32_family();
  const builtin::Target& t = target_;
  int evaluated = 0;
  std::vector<const char*> lines(std::begin(kTf32Lines), std::end(kTf32Lines));
  for (const char* more : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=777 n=333 k=555 lda=555 ldb=555 ldc=777 batch=1 "
           "epilogue=none beta0=0 precision=tf32",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=2048 n=2048 k=2048 lda=2048 ldb=2048 ldc=2048 batch=1 "
           "epilogue=none beta0=1 precision=tf32",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
           "epilogue=none beta0=1 precision=tf32"})
    lines.push_back(more);
  for (const char* line : lines) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    ASSERT_FALSE(builtin::not_searched_for(f, key).has_value()) << line << ": " << *builtin::not_searched_for(f, key);
    const auto seeds = f.seeds(key, t);
    ASSERT_FALSE(seeds.empty()) << line;
    for (const builtin::Params& p : seeds) {
      ASSERT_EQ(p.at("KD_SPLIT16"), 1) << builtin::describe(p);
      ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), f, t, dev_, "wg_tma_f32", line, p));
      ++evaluated;
    }
  }
  EXPECT_GE(evaluated, 9);
  expect_no_restarts();
}

// wg_tma_f16s (issue 30's strict class): op(A) and op(B) as hi and lo f16 copies, three products per
// k tile promoted to f32 accumulators. Every seed of the four layouts at 1024^3, the ragged strided
// batch of dW's layout with bias and beta and two ragged single calls (declined as too small, but
// served), and the cubes issue 30's table reports; errors at most cuBLAS SGEMM's on every trial, as
// the gate demands of strict f32.
TEST_F(GpuEvalBuiltin, WgTmaF16sPassesTheStrictGate) {
  const builtin::Family& f = builtin::wg_tma_f16s_family();
  const builtin::Target& t = target_;
  int evaluated = 0;
  std::vector<std::string> lines;
  for (const char* line : kTf32Lines) {
    std::string strict(line);
    strict.erase(strict.find(" precision=tf32"));
    lines.push_back(strict);
  }
  for (const char* more :
       {"gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=777 n=333 k=555 lda=555 ldb=555 ldc=777 batch=1 "
        "epilogue=none beta0=0",
        "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=2048 n=2048 k=2048 lda=2048 ldb=2048 ldc=2048 batch=1 "
        "epilogue=none beta0=1",
        // Both operands' rows contiguous across k, held in registers, with a last row group of 8 (A) and
        // of 4 (B) rows.
        "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=996 k=1000 lda=1000 ldb=996 ldc=1000 batch=1 "
        "epilogue=none beta0=1",
        "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
        "epilogue=none beta0=1"})
    lines.push_back(more);
  for (const std::string& line : lines) {
    const GemmKey key = std::get<GemmKey>(parse_key(line));
    // The small keys are declined (a search does not try them) but served: gated all the same.
    ASSERT_FALSE(f.rejects(key).has_value()) << line << ": " << *f.rejects(key);
    const auto seeds = f.seeds(key, t);
    ASSERT_FALSE(seeds.empty()) << line;
    for (const builtin::Params& p : seeds) {
      ASSERT_EQ(p.at("KD_SPLIT16"), 2) << builtin::describe(p);
      ASSERT_NO_FATAL_FAILURE(gate_builtin(gate(), f, t, dev_, "wg_tma_f16s", line.c_str(), p));
      ++evaluated;
    }
  }
  EXPECT_GE(evaluated, 12);
  expect_no_restarts();
}

}  // namespace
}  // namespace kd::eval

namespace kd::eval {
namespace {

// Needs no GPU: every rule-breaking kernel compiles and carries a plan.
TEST(GpuEvalKernels, EveryTestKernelCompilesWithAPlan) {
  ASSERT_GE(test::test_kernels().size(), 24u);
  for (const test::TestKernel& k : test::test_kernels()) {
    const search::CompileOutput out =
        search::compile_cuda({.source = std::string(k.source), .name = std::string(k.name) + ".cu", .arch = "sm_90"});
    EXPECT_EQ(out.status, search::CompileStatus::ok) << k.name << ": " << out.log;
    EXPECT_TRUE(std::holds_alternative<LaunchPlan>(parse_plan_from_source(k.source))) << k.name;
  }
}

}  // namespace
}  // namespace kd::eval
