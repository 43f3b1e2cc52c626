#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "builtin/embedded_kernels.hpp"
#include "builtin/family_rules.hpp"
#include "builtin/row_family.hpp"
#include "family_checks.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {
namespace {

using namespace row_param;

RowShape shape(RowOp op, DType dtype, long long rows, long long cols, bool weight = false, bool bias = false) {
  RowShape s;
  s.op = op;
  s.dtype = dtype;
  s.rows = rows;
  s.cols = cols;
  s.weight = weight;
  s.bias = bias;
  return s;
}

// The shapes: small and large rows, few and many, every op and dtype.
const RowShape kRmsBf16 = shape(RowOp::rmsnorm, DType::bf16, 16, 4096, true);
const RowShape kKernelBench = shape(RowOp::layernorm, DType::f32, 16, 4194304, true, true);
const RowShape kLnBf16 = shape(RowOp::layernorm, DType::bf16, 4096, 8192, true, true);
const RowShape kSoftmaxF32 = shape(RowOp::softmax, DType::f32, 4096, 65536);
const RowShape kSoftmaxF16 = shape(RowOp::softmax, DType::f16, 1, 128);
const RowShape kRmsF32 = shape(RowOp::rmsnorm, DType::f32, 3, 1000);
const RowShape kOddF16 = shape(RowOp::layernorm, DType::f16, 5, 1001, true);  // only 2-byte accesses
const RowShape kShapes[] = {kRmsBf16, kKernelBench, kLnBf16, kSoftmaxF32, kSoftmaxF16, kRmsF32, kOddF16};

std::vector<Params> completed_seeds(const RowShape& s, const Target& t) {
  std::vector<Params> out;
  for (const Params& p : row_seeds(s, t)) out.push_back(row_complete(s, t, p));
  return out;
}

std::string name_of(const RowShape& s) {
  return std::to_string(static_cast<int>(s.op)) + "/" + std::to_string(static_cast<int>(s.dtype)) + " " +
         std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

TEST(RowReduce, KernelSourceIsEmbeddedWithItsEntries) {
  const std::string_view src = embedded_kernel("row_reduce.cu");
  for (const char* entry : {"kd_row_main(", "kd_row_partial(", "kd_row_finish(", "<kdispatch/rowop.cuh>"})
    EXPECT_NE(src.find(entry), std::string_view::npos) << entry;
}

TEST(RowReduce, RejectsOnlyWhatTheOperatorDoesNotDefine) {
  for (const RowShape& s : kShapes) EXPECT_FALSE(row_rejects(s).has_value()) << name_of(s);
  EXPECT_TRUE(row_rejects(shape(RowOp::softmax, DType::f32, 4, 64, true)).has_value());
  EXPECT_TRUE(row_rejects(shape(RowOp::rmsnorm, DType::f32, 4, 64, true, true)).has_value());
  EXPECT_TRUE(row_rejects(shape(RowOp::layernorm, DType::f32, 0, 64)).has_value());
}

// Every seed is complete and valid, and its plan, parsed back from the rendered source, covers the
// rows: one launch without workspace, or a split's two launches over [split, rows] with one float4 of
// workspace per chunk; all of them programmatic dependents on sm_90.
TEST(RowReduce, SeedsAreValidAndTheirPlansCoverTheRows) {
  const Target t;
  for (const RowShape& s : kShapes) {
    const auto seeds = completed_seeds(s, t);
    EXPECT_GE(seeds.size(), 3u) << name_of(s);
    EXPECT_LE(seeds.size(), 6u) << name_of(s);
    for (const Params& p : seeds) {
      const std::string what = name_of(s) + " " + describe(p);
      ASSERT_TRUE(row_valid(s, t, p)) << what;
      EXPECT_EQ(row_complete(s, t, p), p) << what;
      EXPECT_EQ(p.at(kPdl), 1) << what;
      EXPECT_EQ(s.cols % p.at(kVec), 0) << what;
      const std::string src = row_render(s, t, p);
      EXPECT_EQ(src, row_render(s, t, p));
      const auto parsed = parse_plan_from_source(src);
      ASSERT_TRUE(std::holds_alternative<LaunchPlan>(parsed)) << what;
      const LaunchPlan& plan = std::get<LaunchPlan>(parsed);
      EXPECT_EQ(plan, row_plan(s, t, p)) << what;
      const long long split = p.at(kSplit);
      EXPECT_EQ(plan.workspace_bytes > 0, split > 1) << what;
      for (const LaunchSpec& l : plan.launches) {
        EXPECT_EQ(l.block[0], p.at(kThreads)) << what;
        EXPECT_TRUE(l.pdl) << what;
      }
      if (split > 1) {
        ASSERT_EQ(plan.launches.size(), 2u) << what;
        EXPECT_EQ(plan.launches[0].entry, "kd_row_partial");
        EXPECT_EQ(plan.launches[1].entry, "kd_row_finish");
        for (const LaunchSpec& l : plan.launches) {
          EXPECT_EQ(l.grid[0], split) << what;
          EXPECT_EQ(l.grid[1], s.rows) << what;
        }
        EXPECT_EQ(plan.workspace_bytes, static_cast<std::uint64_t>(s.rows * split * 16)) << what;
        EXPECT_GE(s.cols / p.at(kVec) / split, p.at(kThreads)) << what << ": a chunk gives every thread an access";
      } else {
        ASSERT_EQ(plan.launches.size(), 1u) << what;
        EXPECT_EQ(plan.launches[0].entry, "kd_row_main");
        const long long rows_per_block = p.at(kThreads) / p.at(kRowThreads);
        const long long blocks = plan.launches[0].grid[0];
        EXPECT_GE(blocks, 1) << what;
        EXPECT_LE(blocks, ceil_div(s.rows, rows_per_block)) << what << ": no block without a row";
        EXPECT_LE(blocks, 4 * t.sms * 32) << what;
      }
    }
  }
}

bool holds_row(const RowShape& s, const Params& p) {
  const long long cluster = p.contains(kCluster) ? p.at(kCluster) : 1;
  return s.cols <= cluster * p.at(kRowThreads) * p.at(kVec) * p.at(kCache);
}

TEST(RowReduce, SeedsFollowTheRowLength) {
  const Target t;
  // The KernelBench shape: 16 rows of 16 MiB leave a block per row on 16 SMs; every seed but the
  // last splits rows into a few waves of blocks.
  const auto kb = completed_seeds(kKernelBench, t);
  ASSERT_GE(kb.size(), 3u);
  for (std::size_t i = 0; i + 1 < kb.size(); ++i) {
    EXPECT_GT(kb[i].at(kSplit), 1) << describe(kb[i]);
    const long long blocks = kKernelBench.rows * kb[i].at(kSplit);
    const long long resident = t.sms * (2048 / kb[i].at(kThreads));
    EXPECT_GE(blocks, resident) << describe(kb[i]);
    EXPECT_LE(blocks, 4 * resident) << describe(kb[i]);
  }
  EXPECT_EQ(kb.back().at(kSplit), 1);
  // Short rows: several rows per block first, each held by the smallest group that can (4 lanes for
  // 128 f16 columns, 16 accesses of 8 at most 4 per lane; 1000 f32 columns take 6 accesses of 4 in 42
  // threads, so 64).
  for (auto [s, group] : {std::pair{kSoftmaxF16, 4}, std::pair{kRmsF32, 64}}) {
    s.rows = 4096;  // many rows (few go to a block per row, below)
    const Params first = completed_seeds(s, t).front();
    EXPECT_EQ(first.at(kRowThreads), group) << name_of(s);
    EXPECT_GT(first.at(kThreads), first.at(kRowThreads)) << name_of(s);
    EXPECT_TRUE(holds_row(s, first)) << name_of(s);
  }
  // Few rows a block holds (decode): a block per row, the widest first (one access per thread).
  const auto decode = completed_seeds(kRmsBf16, t);  // 16 x 4096 bf16: 512 vectors
  ASSERT_EQ(decode.size(), 3u);
  for (std::size_t i = 0; i < decode.size(); ++i) {
    EXPECT_EQ(decode[i].at(kThreads), 512 >> i);
    EXPECT_EQ(decode[i].at(kRowThreads), decode[i].at(kThreads));
    EXPECT_TRUE(holds_row(kRmsBf16, decode[i]));
  }
  // Rows of 16 KiB, 16-byte accesses: 4096 of them go first to the smallest group holding one (256
  // threads of 4 accesses, 32 values), with a small group reading x twice among the seeds; 64 of them
  // to a block per row holding it.
  const auto ln = completed_seeds(kLnBf16, t);
  EXPECT_EQ(ln.front().at(kRowThreads), 256);
  EXPECT_EQ(ln.front().at(kVec), 8);
  EXPECT_EQ(ln.front().at(kCache), 4);
  EXPECT_TRUE(holds_row(kLnBf16, ln.front()));
  EXPECT_TRUE(row_one_tile(kLnBf16, ln.front()));
  EXPECT_TRUE(std::any_of(ln.begin(), ln.end(), [](const Params& p) { return !holds_row(kLnBf16, p); }));
  RowShape few = kLnBf16;
  few.rows = 64;
  const Params held = completed_seeds(few, t).front();
  EXPECT_EQ(held.at(kRowThreads), held.at(kThreads));
  EXPECT_TRUE(holds_row(few, held));
  // Rows of 256 KiB fit no block's register cache: read twice by one block, or held by a cluster of 8
  // (the last seed); no split with 4096 rows.
  const auto sm = completed_seeds(kSoftmaxF32, t);
  for (std::size_t i = 0; i < sm.size(); ++i) {
    EXPECT_EQ(sm[i].at(kSplit), 1) << describe(sm[i]);
    EXPECT_EQ(holds_row(kSoftmaxF32, sm[i]), i + 1 == sm.size()) << describe(sm[i]);
  }
  EXPECT_EQ(sm.back().at(kCluster), 8);
  EXPECT_EQ(row_plan(kSoftmaxF32, t, sm.back()).launches.at(0).grid[0] % 8, 0u);
  // 1001 columns of f16: one element per access.
  EXPECT_EQ(completed_seeds(kOddF16, t).front().at(kVec), 1);
}

TEST(RowReduce, ValidRejectsIllegalParameters) {
  const Target t;
  Params good = completed_seeds(kLnBf16, t).front();
  good[kPrefetch] = 0;  // the first seed prefetches; a ring (below) may not
  ASSERT_TRUE(row_valid(kLnBf16, t, good));
  auto with = [&](const char* name, long long value) {
    Params p = good;
    p[name] = value;
    return p;
  };
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kThreads, 2048)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kRowThreads, 48)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kVec, 16))) << "32-byte accesses";
  EXPECT_FALSE(row_valid(kOddF16, t, row_complete(kOddF16, t, {{kVec, 2}}))) << "2 does not divide 1001";
  Params split = with(kSplit, 4);
  split[kRowThreads] = 32;
  EXPECT_FALSE(row_valid(kLnBf16, t, split)) << "a split row takes whole blocks";
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kSplit, 100000)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kPdl, 2)));
  // The register cache: at most 64 elements of a 16-bit dtype per thread (8 accesses of 8 bf16), 32
  // of f32 (deep tiles; the seeds' default depth is 32 and 24).
  EXPECT_TRUE(row_valid(kLnBf16, t, with(kCache, 8)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kCache, 9)));
  const Params f32 = completed_seeds(kSoftmaxF32, t).front();
  Params deep = f32;
  deep[kCache] = 8;
  EXPECT_TRUE(row_valid(kSoftmaxF32, t, deep)) << "32 f32 values";
  deep[kCache] = 9;
  EXPECT_FALSE(row_valid(kSoftmaxF32, t, deep)) << "36 f32 values";
  // The L2 prefetch of the next row: 0 or 1, sm_90, one launch without a ring.
  EXPECT_TRUE(row_valid(kLnBf16, t, with(kPrefetch, 1)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kPrefetch, 2)));
  Params ring_prefetch = with(kPrefetch, 1);
  ring_prefetch[kStages] = 2;
  EXPECT_FALSE(row_valid(kLnBf16, t, ring_prefetch)) << "a ring streams its rows itself";
  EXPECT_TRUE(row_valid(kLnBf16, t, with(kNoL1, 1)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kNoL1, 2)));
  // Clusters: 2, 4 or 8 whole blocks per row, never split; a ring within kRowRingBytes, 16-byte
  // accesses only; held weights only where the row is one tile and they fit 64 bytes.
  Params cl = with(kCluster, 2);
  cl[kRowThreads] = cl.at(kThreads);
  EXPECT_TRUE(row_valid(kLnBf16, t, row_complete(kLnBf16, t, cl)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kCluster, 3)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kCluster, 16)));
  Params cl_split = cl;
  cl_split[kSplit] = 2;
  EXPECT_FALSE(row_valid(kLnBf16, t, cl_split)) << "a cluster row is one launch";
  EXPECT_TRUE(row_valid(kLnBf16, t, with(kStages, 2)));
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kStages, 9)));
  EXPECT_FALSE(row_valid(kOddF16, t, row_complete(kOddF16, t, {{kStages, 1}}))) << "2-byte accesses";
  EXPECT_FALSE(row_valid(kSoftmaxF32, t, row_complete(kSoftmaxF32, t, {{kThreads, 1024}, {kStages, 1}})))
      << "256 KiB rows overflow the ring";
  EXPECT_FALSE(row_valid(kSoftmaxF32, t, row_complete(kSoftmaxF32, t, {{kThreads, 1024}, {kHoldWb, 1}})))
      << "softmax has no weights";
  EXPECT_FALSE(row_valid(kLnBf16, t, with(kHoldWb, 1))) << "32 bf16 of weight and bias take 128 bytes";
  // A ring's plan asks its shared memory and runs one wave of resident blocks.
  const Params ring = row_complete(kLnBf16, t, {{kThreads, 256}, {kStages, 2}});
  ASSERT_TRUE(row_valid(kLnBf16, t, ring));
  const LaunchPlan rp = row_plan(kLnBf16, t, ring);
  EXPECT_EQ(rp.launches.at(0).smem_bytes, 2u * 1024 * 16);
  EXPECT_LE(rp.launches.at(0).grid[0], static_cast<std::uint32_t>(t.sms * 8));

  Target ampere;
  ampere.arch = "sm_80";
  ampere.cc_major = 8;
  ampere.sms = 108;
  EXPECT_FALSE(row_valid(kLnBf16, ampere, good)) << "griddepcontrol needs sm_90";
  for (const Params& p : completed_seeds(kKernelBench, ampere)) {
    EXPECT_EQ(p.at(kPdl), 0);
    EXPECT_TRUE(row_valid(kKernelBench, ampere, p)) << describe(p);
    for (const LaunchSpec& l : row_plan(kKernelBench, ampere, p).launches) EXPECT_FALSE(l.pdl);
  }
}

TEST(RowReduce, RenderDefinesTheShapeAndParameters) {
  const Target t;
  const Params p = completed_seeds(kKernelBench, t).front();
  const std::string src = row_render(kKernelBench, t, p);
  EXPECT_EQ(src.rfind("// kdispatch builtin family row_reduce: ", 0), 0u);
  for (const char* line : {"#define KD_OP 1\n", "#define KD_DT 2\n", "#define KD_HAS_W 1\n", "#define KD_HAS_B 1\n"})
    EXPECT_NE(src.find(line), std::string::npos) << line;
  EXPECT_NE(src.find("#define KD_SPLIT " + std::to_string(p.at(kSplit)) + "\n"), std::string::npos);
  EXPECT_NE(src.find(std::string(embedded_kernel("row_reduce.cu"))), std::string::npos);
  EXPECT_NE(src.find("#define KD_FULL_TILE 0\n"), std::string::npos) << "split rows are read tile by tile";
  // A row chunk of exactly one full tile drops the kernel's bounds checks; a shorter one keeps them.
  const Params ln = completed_seeds(kLnBf16, t).front();  // 8192 bf16: 256 threads x 4 accesses of 8
  ASSERT_EQ(kLnBf16.cols, ln.at(kRowThreads) * ln.at(kCache) * ln.at(kVec));
  EXPECT_NE(row_render(kLnBf16, t, ln).find("#define KD_FULL_TILE 1\n"), std::string::npos);
  RowShape shorter = kLnBf16;
  shorter.cols -= 8;
  EXPECT_NE(row_render(shorter, t, ln).find("#define KD_FULL_TILE 0\n"), std::string::npos);
}

// Every seed of two shapes (the KernelBench split layernorm in f32, the warp-per-row softmax in f16)
// and the first of the bf16 rmsnorm: every op, dtype and entry point, sub-warp groups too; then
// session 26's paths: a long row read twice with its L2 policy, a full tile prefetching its next
// row, x read past L1, and a deep f32 tile. At most 16 NVRTC programs.
TEST(RowReduce, SeedsCompileWithNvrtcWithoutSpills) {
  const Target t;
  std::vector<std::string> sources;
  for (const RowShape& s : {kKernelBench, kSoftmaxF16})
    for (const Params& p : completed_seeds(s, t)) sources.push_back(row_render(s, t, p));
  sources.push_back(row_render(kRmsBf16, t, completed_seeds(kRmsBf16, t).front()));
  sources.push_back(row_render(kSoftmaxF32, t, completed_seeds(kSoftmaxF32, t).front()));
  const Params ln = completed_seeds(kLnBf16, t).front();
  ASSERT_EQ(ln.at(kPrefetch), 1);
  sources.push_back(row_render(kLnBf16, t, ln));
  const RowShape short_rows = shape(RowOp::layernorm, DType::bf16, 16384, 1024, true, true);
  const Params past_l1 = row_complete(short_rows, t, {{kThreads, 128}, {kRowThreads, 32}, {kNoL1, 1}});
  ASSERT_TRUE(row_valid(short_rows, t, past_l1));
  sources.push_back(row_render(short_rows, t, past_l1));
  const RowShape ln_f32 = shape(RowOp::layernorm, DType::f32, 4096, 1024, true, true);
  const Params deep = row_complete(ln_f32, t, {{kThreads, 256}, {kRowThreads, 32}, {kCache, 8}});
  ASSERT_TRUE(row_valid(ln_f32, t, deep));
  sources.push_back(row_render(ln_f32, t, deep));
  EXPECT_LE(sources.size(), 16u);
  test::expect_nvrtc_clean(sources, /*no_wgmma_serialization=*/false);
}

// The option sets GpuEvalRowGate.RowReduceOptionsPassTheGate puts through the gate (a ring, one at
// 48 KiB, held weights, clusters with and without a ring) are valid on sm_90, and their plans ask the
// ring's shared memory and whole clusters.
TEST(RowReduce, OptionSetsOfTheGpuTestAreValid) {
  const Target t;
  struct Case {
    RowShape shape;
    Params set;
    std::uint32_t smem;
    long long cluster;
  };
  const Case cases[] = {
      {shape(RowOp::layernorm, DType::bf16, 4096, 8192, true, true), {{kThreads, 256}, {kRowThreads, 256}, {kStages, 2}},
       2 * 1024 * 16, 1},
      {shape(RowOp::softmax, DType::f32, 16384, 1024), {{kThreads, 256}, {kRowThreads, 64}, {kStages, 3}},
       3 * 4 * 256 * 16, 1},
      {shape(RowOp::layernorm, DType::f32, 4096, 1024, true, true), {{kThreads, 256}, {kRowThreads, 128}, {kHoldWb, 1}},
       0, 1},
      {shape(RowOp::softmax, DType::bf16, 1024, 32768), {{kThreads, 512}, {kRowThreads, 512}, {kCluster, 4}, {kStages, 1}},
       1024 * 16, 4},
      {shape(RowOp::layernorm, DType::bf16, 4096, 8192, true, true),
       {{kThreads, 1024}, {kRowThreads, 1024}, {kCluster, 2}}, 0, 2},
  };
  for (const Case& c : cases) {
    const Params p = row_complete(c.shape, t, c.set);
    ASSERT_TRUE(row_valid(c.shape, t, p)) << name_of(c.shape) << " " << describe(p);
    const LaunchPlan plan = row_plan(c.shape, t, p);
    EXPECT_EQ(plan.launches.at(0).smem_bytes, c.smem) << describe(p);
    EXPECT_EQ(plan.launches.at(0).grid[0] % c.cluster, 0u) << describe(p);
    EXPECT_TRUE(row_one_tile(c.shape, p)) << describe(p);
  }
}

}  // namespace
}  // namespace kd::builtin
