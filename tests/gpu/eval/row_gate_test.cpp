// The validation gate for row operators (issue 33) on a GPU, through the same worker process and
// the same gate as GEMMs: correct rmsnorm, layernorm and softmax kernels pass; kernels written to
// skip a row, write past the last row, store into x or compute the variance in one pass are
// rejected with the rule named (the single pass on the trial of mean 1000 and std 0.1); the builtin
// row_reduce family's seeds pass at transformer shapes and the KernelBench shape, with their
// times against the baseline printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "builtin/row_family.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "eval/evaluator.hpp"
#include "eval/row_problem.hpp"
#include "key/row_key.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"
#include "test_kernels.hpp"
#include "worker/worker_parent.hpp"

namespace kd::eval {
namespace {

using namespace std::chrono_literals;

constexpr const char* kLayerNorm = "layernorm dtype=f32 rows=300 cols=1000 weight=1 bias=1";
constexpr const char* kLayerNormPlain = "layernorm dtype=f32 rows=64 cols=777 weight=0 bias=0";
constexpr const char* kRmsNorm = "rmsnorm dtype=f32 rows=257 cols=4096 weight=1";
constexpr const char* kSoftmax = "softmax dtype=f32 rows=128 cols=3000";

EvalOptions row_test_options() {
  EvalOptions o;
  o.timing_budget = 200ms;
  o.min_timed_runs = 10;
  o.max_timed_runs = 60;
  o.serving_budget = 300ms;
  return o;
}

worker::WorkerSpawn row_gate_worker(const test::TempDir& dir) {
  worker::WorkerSpawn spawn;
  spawn.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "--kd-worker", "--device", "0",
                "--roofline-dir", (dir.path() / "roofline").string()};
  return spawn;
}

Verdict evaluate_source(worker::WorkerParent& parent, const std::string& source, const std::string& name,
                        const std::string& key, const std::string& arch) {
  const search::CompileOutput out = search::compile_cuda({.source = source, .name = name + ".cu", .arch = arch});
  EXPECT_EQ(out.status, search::CompileStatus::ok) << name << ": " << out.log;
  auto plan = parse_plan_from_source(source);
  EXPECT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << name;
  EvalRequest r;
  r.key_line = key;
  r.cubin = out.cubin;
  if (auto* p = std::get_if<LaunchPlan>(&plan)) r.plan = *p;
  r.options = row_test_options();
  return parent.evaluate(r, 60s);
}

// Every test here: a GPU, and a worker of its own over a temporary cache, started.
class GpuEvalRowGate : public ::testing::Test {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    dev_ = query_device(0);
    worker_.emplace(row_gate_worker(dir_));
    worker_->ensure_started();
  }
  worker::WorkerParent& parent() { return *worker_; }

  DeviceInfo dev_;

private:
  test::TempDir dir_;
  std::optional<worker::WorkerParent> worker_;
};

TEST_F(GpuEvalRowGate, RuleBreakersAreRejectedByNameAndCorrectKernelsPass) {
  worker::WorkerParent& parent = this->parent();
  struct Case {
    const char* kernel;
    const char* key;
    std::optional<Rule> expect;
    const char* detail_has = "";
  };
  const std::vector<Case> cases = {
      {"row_layernorm_f32", kLayerNorm, std::nullopt},
      {"row_layernorm_f32", kLayerNormPlain, std::nullopt},
      {"row_rmsnorm_f32", kRmsNorm, std::nullopt},
      {"row_softmax_f32", kSoftmax, std::nullopt},
      {"row_single_pass_layernorm", kLayerNorm, Rule::wrong_result, "mean 1000, std 0.1"},
      {"row_skips_last_row", kLayerNorm, Rule::unwritten_output, "1000 of 300000"},
      {"row_writes_past_rows", kLayerNorm, Rule::guard_band_overwritten, ""},
      {"row_modifies_input", kLayerNorm, Rule::input_modified, "x"},
  };
  std::printf("\n%-28s %-56s %-24s %s\n", "kernel", "key", "verdict", "detail");
  for (const Case& c : cases) {
    const Verdict v = evaluate_source(parent, std::string(test::test_kernel(c.kernel)), c.kernel, c.key, dev_.arch);
    std::printf("%-28s %-56s %-24s %s\n", c.kernel, c.key, std::string(to_string(v.rule)).c_str(),
                v.detail.substr(0, 140).c_str());
    if (c.expect) {
      EXPECT_EQ(v.rule, *c.expect) << c.kernel << " on " << c.key << ": " << v.detail;
      EXPECT_NE(v.detail.find(c.detail_has), std::string::npos) << c.kernel << ": " << v.detail;
    } else {
      EXPECT_TRUE(v.correct()) << c.kernel << " on " << c.key << ": " << to_string(v.rule) << " " << v.detail;
      std::printf("  worst error max_rel %.3g norm_rel %.3g (baseline %.3g %.3g)\n", v.candidate_error.max_rel,
                  v.candidate_error.norm_rel, v.vendor_error.max_rel, v.vendor_error.norm_rel);
    }
  }
  EXPECT_EQ(parent.restarts(), 0);
}

// `text` cut at `sep`, empty pieces dropped.
std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(sep, at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Parameter sets of the form NAME=V,NAME=V, separated by ';'.
std::vector<builtin::Params> parse_sets(const std::string& text) {
  std::vector<builtin::Params> out;
  for (const std::string& set : split_on(text, ';')) {
    builtin::Params p;
    for (const std::string& kv : split_on(set, ',')) {
      const std::size_t eq = kv.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("not NAME=V: " + kv);
      p[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Puts each of `sets` (completed for the shape) through the whole gate on `line`, prints one table
// row each (serving-regime time against the baseline, PyTorch's kernel where the machine has torch,
// else the evaluator's stand-in, which the last column names; the share of the measured copy
// bandwidth its minimum bytes reach) and expects every one correct. A set invalid for the shape is
// printed as such, or fails the test when `must_be_valid`. Returns how many were evaluated.
int gate_row_sets(worker::WorkerParent& parent, const DeviceInfo& dev, const std::string& line,
                  const std::vector<builtin::Params>& sets, bool must_be_valid) {
  const builtin::Target target = builtin::Target::from(dev);
  const auto parsed = parse_op_key(line);
  EXPECT_TRUE(std::holds_alternative<OpKey>(parsed)) << line;
  if (!std::holds_alternative<OpKey>(parsed)) return 0;
  const RowShape shape = std::get<RowKey>(std::get<OpKey>(parsed)).shape();
  EXPECT_FALSE(builtin::row_rejects(shape).has_value()) << line;
  int evaluated = 0;
  for (const builtin::Params& set : sets) {
    const builtin::Params p = builtin::row_complete(shape, target, set);
    if (!builtin::row_valid(shape, target, p)) {
      EXPECT_FALSE(must_be_valid) << builtin::describe(p) << " on " << line;
      std::printf("%-58s %-70s invalid here\n", line.c_str(), builtin::describe(p).c_str());
      continue;
    }
    const std::string source = builtin::row_render(shape, target, p);
    const Verdict v = evaluate_source(parent, source, "row_reduce", line, dev.arch);
    const double cand = v.candidate_time ? v.candidate_time->median_us : 0.0;
    const double base = v.baseline_time ? v.baseline_time->median_us : 0.0;
    const double bw = cand > 0.0 && v.floor_us > 0.0 ? 100.0 * v.floor_us / cand : 0.0;
    // The same bytes at the rate a streaming read of x (and the weight) reaches in the same regime:
    // the bandwidth a kernel of this size can reach there, launch and tail included.
    const double read_bytes = static_cast<double>(shape.rows * shape.cols + (shape.weight ? shape.cols : 0)) *
                              static_cast<double>(dtype_bytes(shape.dtype));
    const double stream = cand > 0.0 && v.stream_us > 0.0
                              ? 100.0 * (static_cast<double>(row_min_bytes(shape)) / cand) / (read_bytes / v.stream_us)
                              : 0.0;
    std::printf("%-58s %-70s %-12s %9.2f %9.2f %6.2fx %5.0f%% %5.0f%%  %s\n", line.c_str(),
                builtin::describe(p).c_str(), std::string(to_string(v.rule)).c_str(), cand, base,
                cand > 0.0 ? base / cand : 0.0, bw, stream, v.baseline_name.c_str());
    EXPECT_TRUE(v.correct()) << builtin::describe(p) << " on " << line << ": " << to_string(v.rule) << " "
                             << v.detail;
    ++evaluated;
  }
  return evaluated;
}

void print_table_header() {
  std::printf("\n%-58s %-70s %-12s %9s %9s %7s %6s %6s\n", "key", "params", "verdict", "cand us", "base us", "ratio",
              "%bw", "%strm");
}

// The builtin row_reduce family: every seed through the whole gate at the shapes and its
// KernelBench LayerNorm (16 x 64*256*256 in f32), in a table.
// For tuning the family on a device: KD_ROW_GATE_LINES (key lines separated by ';') replaces the
// shapes, and KD_ROW_GATE_EXTRA (parameter sets separated by ';', each `NAME=V,NAME=V`) adds those
// sets, completed, to every shape they are valid for.
TEST_F(GpuEvalRowGate, RowReduceSeedsPassTheGate) {
  const builtin::Target target = builtin::Target::from(dev_);
  worker::WorkerParent& parent = this->parent();
  // The shapes (rows 1-16384, hidden 1024-8192, softmax over 128-65536, bf16 and f32), the
  // decode-sized ones, and the KernelBench LayerNorm.
  std::vector<std::string> lines = {
      "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1",
      "rmsnorm dtype=bf16 rows=4096 cols=4096 weight=1",
      "rmsnorm dtype=bf16 rows=16384 cols=8192 weight=1",
      "rmsnorm dtype=f32 rows=3 cols=1000 weight=0",
      "rmsnorm dtype=f32 rows=16384 cols=1024 weight=1",
      "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1",
      "layernorm dtype=f32 rows=8192 cols=4096 weight=1 bias=1",
      "layernorm dtype=bf16 rows=16384 cols=1024 weight=1 bias=1",
      "layernorm dtype=bf16 rows=16384 cols=8192 weight=1 bias=1",
      "layernorm dtype=f32 rows=16 cols=4194304 weight=1 bias=1",
      "softmax dtype=f16 rows=2048 cols=128",
      "softmax dtype=f32 rows=65536 cols=128",
      "softmax dtype=f32 rows=16384 cols=1024",
      "softmax dtype=bf16 rows=8192 cols=4096",
      "softmax dtype=bf16 rows=1024 cols=32768",
      "softmax dtype=f32 rows=4096 cols=65536",
  };
  const char* only = std::getenv("KD_ROW_GATE_LINES");
  if (only != nullptr) lines = split_on(only, ';');
  const char* extra_text = std::getenv("KD_ROW_GATE_EXTRA");
  const std::vector<builtin::Params> extra = extra_text != nullptr ? parse_sets(extra_text) : std::vector<builtin::Params>{};
  int evaluated = 0;
  print_table_header();
  for (const std::string& line : lines) {
    const auto parsed = parse_op_key(line);
    ASSERT_TRUE(std::holds_alternative<OpKey>(parsed)) << line;
    std::vector<builtin::Params> sets = builtin::row_seeds(std::get<RowKey>(std::get<OpKey>(parsed)).shape(), target);
    const std::size_t seeds = sets.size();
    evaluated += gate_row_sets(parent, dev_, line, sets, /*must_be_valid=*/true);
    sets.assign(extra.begin(), extra.end());
    evaluated += gate_row_sets(parent, dev_, line, sets, /*must_be_valid=*/false);
    EXPECT_GE(seeds, 1u) << line;
  }
  if (only == nullptr) {
    EXPECT_GE(evaluated, 18);
  }
  EXPECT_EQ(parent.restarts(), 0);
}

// The family's options that no seed takes but the search's moves reach: a TMA-fed shared-memory ring
// (one at 48 KiB beside the kernel's static memory, which needs the loader's opt-in), weights held in
// registers across rows, clusters holding a row (layernorm's Chan merge across blocks, softmax's
// online merge) with and without a ring. Each passed the gate on an H200 in session 25 as a tuning
// extra; here they stay correct.
TEST_F(GpuEvalRowGate, RowReduceOptionsPassTheGate) {
  worker::WorkerParent& parent = this->parent();
  const std::pair<const char*, const char*> cases[] = {
      {"layernorm dtype=bf16 rows=4096 cols=8192 weight=1 bias=1", "KD_THREADS=256,KD_ROW_THREADS=256,KD_STAGES=2"},
      {"softmax dtype=f32 rows=16384 cols=1024", "KD_THREADS=256,KD_ROW_THREADS=64,KD_STAGES=3"},
      {"layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1", "KD_THREADS=256,KD_ROW_THREADS=128,KD_HOLD_WB=1"},
      {"softmax dtype=bf16 rows=1024 cols=32768", "KD_THREADS=512,KD_ROW_THREADS=512,KD_CLUSTER=4,KD_STAGES=1"},
      {"layernorm dtype=bf16 rows=4096 cols=8192 weight=1 bias=1", "KD_THREADS=1024,KD_ROW_THREADS=1024,KD_CLUSTER=2"},
  };
  print_table_header();
  int evaluated = 0;
  for (const auto& [line, set] : cases) evaluated += gate_row_sets(parent, dev_, line, parse_sets(set), true);
  EXPECT_EQ(evaluated, 5);
  EXPECT_EQ(parent.restarts(), 0);
}

}  // namespace
}  // namespace kd::eval
