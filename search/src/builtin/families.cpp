#include "builtin/family.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "builtin/embedded_kernels.hpp"
#include "builtin/family_rules.hpp"
#include "builtin/family_tc_tiled.hpp"
#include "builtin/family_wg_tiled.hpp"
#include "builtin/family_wg_tma.hpp"

namespace kd::builtin {
namespace {

std::string_view type_name(DType t) {
  switch (t) {
    case DType::f16: return "__half";
    case DType::bf16: return "__nv_bfloat16";
    case DType::f32: return "float";
  }
  return "float";
}

// The linear layout (ta=T tb=N) with 16-byte rows: what the skinny families stream.
std::optional<std::string> rejects_linear_layout(const GemmKey& key, int max_n) {
  if (key.ta != Transpose::T || key.tb != Transpose::N) return "needs ta=T tb=N (the nn.Linear layout)";
  if (key.n > max_n) return fmt::format("n={} is not skinny (at most {})", key.n, max_n);
  if (key.a != key.b) return "needs equal A and B types";
  const long long vec = 16 / static_cast<long long>(dtype_bytes(key.a));
  if (key.k % vec || key.lda % vec || key.ldb % vec)
    return fmt::format("k, lda and ldb must be multiples of {} for 16-byte loads", vec);
  if (key.batch > 1 && (key.stride_a % vec || key.stride_b % vec))
    return "batch strides must keep 16-byte alignment";
  return std::nullopt;
}

// ---- skinny_bulk ------------------------------------------------------------------------------
constexpr int kBulkRowPad = 64;
long long bulk_scratch(const GemmKey& key, const Params& p) {
  return param(p, "KD_WARPS") * (param(p, "KD_ROWS") / 16) * ceil_div(key.n, 8) * 4 * 32 * 4;
}
long long bulk_stage(const GemmKey& key, const Params& p) {
  return param(p, "KD_ROWS") * (param(p, "KD_KC") * static_cast<long long>(dtype_bytes(key.a)) + kBulkRowPad);
}
// B's columns in shared memory with KD_BSMEM: n rows of k elements plus the row pad.
long long bulk_b_bytes(const GemmKey& key, const Params& p) {
  return param(p, "KD_BSMEM") ? key.n * (key.k * static_cast<long long>(dtype_bytes(key.b)) + kBulkRowPad) : 0;
}
// Whether B fits one mbarrier transaction (tx counts stop below 2^20) and leaves two stages.
bool bulk_b_fits(const GemmKey& key, const Target& t, const Params& p) {
  const long long cps = std::max(1LL, param(p, "KD_CTAS_PER_SM"));
  return key.n * key.k * dtype_bytes(key.b) < (1LL << 20) &&
         bulk_b_bytes(key, p) + 2 * bulk_stage(key, p) + bulk_scratch(key, p) + 1024 <= t.smem_optin_bytes / cps;
}
// Fills KD_STAGES (as deep as the shared memory of KD_CTAS_PER_SM blocks allows, at most 6) and KD_NT.
Params bulk_complete(const GemmKey& key, const Target& t, Params p) {
  const long long cps = std::max(1LL, param(p, "KD_CTAS_PER_SM"));
  p["KD_NT"] = ceil_div(key.n, 8);
  const long long budget = t.smem_optin_bytes / cps - 1024 - bulk_scratch(key, p) - bulk_b_bytes(key, p);
  p["KD_STAGES"] = std::min(6LL, budget / std::max(1LL, bulk_stage(key, p)));
  return p;
}
std::optional<std::string> bulk_rejects(const GemmKey& key) { return rejects_linear_layout(key, 32); }
std::vector<Params> bulk_seeds(const GemmKey& key, const Target& t) {
  std::vector<Params> out;
  auto add = [&](long long rows, long long kc, long long warps, long long cps, long long bsmem = 0) {
    Params p{{"KD_ROWS", rows}, {"KD_KC", kc}, {"KD_WARPS", warps}, {"KD_CTAS_PER_SM", cps}};
    if (bsmem) p["KD_BSMEM"] = 1;  // absent means 0, as in the kernel
    if (bsmem == 0 || bulk_b_fits(key, t, p)) out.push_back(bulk_complete(key, t, p));
  };
  if (key.a == DType::f32) {
    add(32, 512, 8, 1);
    add(16, 1024, 8, 1);
  } else if (key.n <= 8) {
    add(16, 1024, 8, 1);
    add(32, 1024, 8, 1);
    add(32, 512, 4, 2);
  } else {
    add(32, 512, 4, 2);
    add(32, 1024, 8, 1);
    // B held in shared memory (session 27, H100 lab, cold L2: 128256 x 16 x 4096 at 98% of the copy
    // bandwidth against 95% re-reading B, cuBLAS 91%); two 1024-wide stages beside it.
    add(16, 1024, 8, 1, 1);
  }
  return out;
}
bool bulk_valid(const GemmKey& key, const Target& t, const Params& p) {
  const long long rows = param(p, "KD_ROWS"), kc = param(p, "KD_KC"), warps = param(p, "KD_WARPS");
  const long long stages = param(p, "KD_STAGES"), cps = param(p, "KD_CTAS_PER_SM");
  if (rows % 16 || rows < 16 || rows > 64 || kc % 32 || kc < 128 || kc > 4096) return false;
  if (warps < 1 || warps > 16 || stages < 2 || stages > 6 || cps < 1 || cps > 4) return false;
  if (param(p, "KD_NT") != ceil_div(key.n, 8)) return false;
  const long long bsmem = param(p, "KD_BSMEM");
  if (bsmem < 0 || bsmem > 1 || (bsmem && !bulk_b_fits(key, t, p))) return false;
  return stages * bulk_stage(key, p) + bulk_scratch(key, p) + bulk_b_bytes(key, p) + 1024 <= t.smem_optin_bytes / cps;
}
LaunchPlan bulk_plan(const GemmKey& key, const Target& t, const Params& p) {
  const long long blocks = ceil_div(key.m, param(p, "KD_ROWS"));
  LaunchSpec s;
  s.entry = "kd_skinny_bulk";
  s.grid = {u32(std::min(blocks, t.sms * param(p, "KD_CTAS_PER_SM"))), 1, u32(key.batch)};
  s.block = {u32(32 * (param(p, "KD_WARPS") + 1)), 1, 1};
  s.smem_bytes = u32(param(p, "KD_STAGES") * bulk_stage(key, p) + bulk_scratch(key, p) + bulk_b_bytes(key, p));
  return LaunchPlan{{s}, 0};
}

// ---- simt_gemv --------------------------------------------------------------------------------
// At most four columns of B: each element of A costs KD_NMAX fmaf plus its conversion, and past
// four the CUDA cores, not HBM, would set the pace.
constexpr long long kGemvMaxN = 4;
std::optional<std::string> gemv_rejects(const GemmKey& key) { return rejects_linear_layout(key, kGemvMaxN); }
// Session 28, H100 lab in the serving regime: k split over 4 warps with 2 loads in flight per lane
// led every n = 1 shape (14336x1x4096 bf16 at 93% of a streaming read, 1.06x cuBLAS; f32 at 97%,
// 1.10x; 4096x1x14336 bf16 1.11x); whole rows per warp kept too few loads in flight for small m.
// KD_NMAX is the key's n (a range key's last), fixed at seeding, so one record serves every n of a
// range (the default buckets 2 and 3..4).
std::vector<Params> gemv_seeds(const GemmKey& key, const Target&) {
  auto seed = [&](long long warps, long long ksplit, long long unroll) {
    return Params{{"KD_WARPS", warps}, {"KD_KSPLIT", ksplit}, {"KD_RPW", 1}, {"KD_UNROLL", unroll},
                  {"KD_NMAX", std::max<long long>(1, key.n_last())}};
  };
  return {seed(8, 4, 2), seed(4, 4, 2), seed(8, 2, 2), seed(16, 4, 2), seed(8, 1, 2)};
}
bool gemv_valid(const GemmKey& key, const Target&, const Params& p) {
  const long long warps = param(p, "KD_WARPS"), ksplit = param(p, "KD_KSPLIT"), rpw = param(p, "KD_RPW");
  const long long unroll = param(p, "KD_UNROLL"), nmax = param(p, "KD_NMAX");
  if (warps < 1 || warps > 16 || ksplit < 1 || ksplit > 8 || warps % ksplit) return false;
  if (rpw < 1 || rpw > 2 || unroll < 1 || unroll > 16 || rpw * unroll > 16) return false;
  return key.n >= 1 && key.n <= nmax && nmax <= kGemvMaxN;
}
LaunchPlan gemv_plan(const GemmKey& key, const Target&, const Params& p) {
  const long long rows_per_cta = param(p, "KD_WARPS") / param(p, "KD_KSPLIT") * param(p, "KD_RPW");
  LaunchSpec s;
  s.entry = "kd_simt_gemv";
  // One CTA per row group: the grid-wide row loop runs once unless m passes the grid's x limit.
  s.grid = {u32(std::min(ceil_div(key.m, rows_per_cta), 0x7fffffffLL)), 1, u32(key.batch)};
  s.block = {u32(32 * param(p, "KD_WARPS")), 1, 1};
  return LaunchPlan{{s}, 0};
}

// ---- skinny_ws --------------------------------------------------------------------------------
// Up to 16 columns of B, the tokens as the m16n8k16 mma's M; k in 512-wide slices over 8 consumer
// warps, whose tokens' fragments stay in registers when k <= 4096.
// A trial family (KDISPATCH_TRIAL_FAMILIES=skinny_ws): its consumers add their partial sums with
// shared-memory atomics, so the order of the 8 terms per output, and the last bits of C, change from
// run to run, where cuBLAS and every other family give the same bits every time; the gate rejects it
// as nondeterministic on most keys. A version that summed in consumer order measured 91-94 us against
// 83-85 at 28672 x 16 x 4096 on the H100 (session 29), and the family ties cuBLAS there either way; it
// stays registered, opt-in, until it is both reproducible and faster.
constexpr long long kWsMaxN = 16;
constexpr long long kWsMaxK = 8 * 512;
long long ws_smem(const Params& p) {
  const long long stage_k = param(p, "KD_STAGE_K"), stages = param(p, "KD_STAGES");
  return 8 * stages * 8 * (2 * stage_k + 64) + 4 * param(p, "KD_OCTETS") * 512 + 64 + 16 * 8 * stages;
}
std::optional<std::string> ws_rejects(const GemmKey& key) {
  if (key.a == DType::f32) return "f16/bf16 inputs only (tensor-core products of 16-bit values)";
  return rejects_linear_layout(key, kWsMaxN);
}
// Exact keys it is not searched for: the lab measured it only where it could win (session 29).
std::optional<std::string> ws_declines(const GemmKey& key) {
  if (key.n <= kGemvMaxN) return "n <= 4: simt_gemv streams these at the plain read's rate";
  if (key.k > kWsMaxK)
    return fmt::format("k={} > {}: each consumer would reload its tokens for every row block (4096 x 16 x 14336: "
                       "0.94x cuBLAS in the lab)", key.k, kWsMaxK);
  return std::nullopt;
}
// Session 29, H100 lab in the serving regime: half-unit stages, two deep, one octet per block led
// (28672 x 16 x 4096 bf16 1.04x cuBLAS at 89% of a streaming read, 128256 x 16 1.10x at 97-98%);
// deeper rings and larger blocks tied or lost.
std::vector<Params> ws_seeds(const GemmKey&, const Target&) {
  auto seed = [](long long stage_k, long long stages, long long octets) {
    return Params{{"KD_STAGE_K", stage_k}, {"KD_STAGES", stages}, {"KD_OCTETS", octets}};
  };
  return {seed(256, 2, 1), seed(512, 2, 1), seed(256, 3, 1), seed(256, 2, 2)};
}
bool ws_valid(const GemmKey& key, const Target& t, const Params& p) {
  // setmaxnreg and the mbarrier waits need sm_90a.
  if (t.arch != "sm_90" && t.arch != "sm_90a") return false;
  const long long stage_k = param(p, "KD_STAGE_K"), stages = param(p, "KD_STAGES"), octets = param(p, "KD_OCTETS");
  if ((stage_k != 256 && stage_k != 512) || stages < 2 || stages > 4 || octets < 1 || octets > 4) return false;
  return key.n >= 1 && key.n <= kWsMaxN && ws_smem(p) <= t.smem_optin_bytes;
}
LaunchPlan ws_plan(const GemmKey& key, const Target& t, const Params& p) {
  LaunchSpec s;
  s.entry = "kd_skinny_ws";
  s.grid = {u32(std::min(ceil_div(key.m, 8 * param(p, "KD_OCTETS")), static_cast<long long>(t.sms))), 1,
            u32(key.batch)};
  s.block = {512, 1, 1};
  s.smem_bytes = u32(ws_smem(p));
  return LaunchPlan{{s}, 0};
}

// ---- skinny_mma -------------------------------------------------------------------------------
std::optional<std::string> mma_rejects(const GemmKey& key) {
  if (key.a == DType::f32) return "f16/bf16 inputs only (f32 goes to skinny_bulk's 3xTF32)";
  return rejects_linear_layout(key, 32);
}
std::vector<Params> mma_seeds(const GemmKey& key, const Target&) {
  const long long nt = ceil_div(key.n, 8);
  return {{{"KD_MT", 1}, {"KD_NT", nt}, {"KD_WARPS_K", 8}, {"KD_UNROLL", 8}},
          {{"KD_MT", 2}, {"KD_NT", nt}, {"KD_WARPS_K", 16}, {"KD_UNROLL", 4}}};
}
bool mma_valid(const GemmKey& key, const Target&, const Params& p) {
  const long long mt = param(p, "KD_MT"), wk = param(p, "KD_WARPS_K"), un = param(p, "KD_UNROLL");
  return (mt == 1 || mt == 2) && wk >= 1 && wk <= 16 && un >= 1 && un <= 8 &&
         param(p, "KD_NT") == ceil_div(key.n, 8) && mt * un <= 16;
}
LaunchPlan mma_plan(const GemmKey& key, const Target&, const Params& p) {
  LaunchSpec s;
  s.entry = "kd_skinny_mma";
  s.grid = {u32(ceil_div(key.m, 16 * param(p, "KD_MT"))), 1, u32(key.batch)};
  s.block = {u32(32 * param(p, "KD_WARPS_K")), 1, 1};
  return LaunchPlan{{s}, 0};
}

// ---- simt_tiled -------------------------------------------------------------------------------
std::optional<std::string> simt_rejects(const GemmKey&) { return std::nullopt; }
std::vector<Params> simt_seeds(const GemmKey& key, const Target&) {
  auto tile = [](long long bm, long long bn, long long bk, long long tm, long long tn) {
    return Params{{"KD_BM", bm}, {"KD_BN", bn}, {"KD_BK", bk}, {"KD_TM", tm}, {"KD_TN", tn}};
  };
  if (key.n <= 32) return {tile(128, 32, 16, 8, 2), tile(64, 16, 32, 4, 1), tile(64, 64, 16, 4, 4)};
  if (key.m * key.n >= 2048LL * 2048) return {tile(128, 128, 8, 8, 8), tile(128, 64, 16, 8, 4), tile(64, 64, 16, 4, 4)};
  return {tile(64, 64, 16, 4, 4), tile(128, 64, 16, 8, 4), tile(32, 32, 16, 2, 2)};
}
bool simt_valid(const GemmKey&, const Target&, const Params& p) {
  const long long bm = param(p, "KD_BM"), bn = param(p, "KD_BN"), bk = param(p, "KD_BK");
  const long long tm = param(p, "KD_TM"), tn = param(p, "KD_TN");
  if (bm < 8 || bn < 8 || bk < 4 || tm < 1 || tn < 1 || bm % tm || bn % tn) return false;
  if (bm > 256 || bn > 256 || bk > 64 || tm > 16 || tn > 16 || tm * tn > 128) return false;
  const long long threads = (bm / tm) * (bn / tn);
  if (threads < 32 || threads > 1024) return false;
  return 2 * bk * (bm + 4 + bn + 4) * 4 <= 48 * 1024;
}
LaunchPlan simt_plan(const GemmKey& key, const Target&, const Params& p) {
  LaunchSpec s;
  s.entry = "kd_simt_tiled";
  s.grid = {u32(ceil_div(key.m, param(p, "KD_BM"))), u32(ceil_div(key.n, param(p, "KD_BN"))), u32(key.batch)};
  s.block = {u32((param(p, "KD_BM") / param(p, "KD_TM")) * (param(p, "KD_BN") / param(p, "KD_TN"))), 1, 1};
  return LaunchPlan{{s}, 0};
}

Params mma_complete(const GemmKey& key, const Target&, Params p) {
  p["KD_NT"] = ceil_div(key.n, 8);
  return p;
}
// For the families whose parameters are all chosen (nothing derived from the others).
Params nothing_derived(const GemmKey&, const Target&, Params p) { return p; }

const Family kFamilies[] = {
    {"simt_gemv", "kd_simt_gemv", {}, gemv_rejects, gemv_seeds, nothing_derived, gemv_valid, gemv_plan, false, true},
    // A trial: its sums are not bitwise reproducible run to run (see ws_rejects's note).
    {"skinny_ws", "kd_skinny_ws", {}, ws_rejects, ws_seeds, nothing_derived, ws_valid, ws_plan, true, true,
     ws_declines},
    {"skinny_bulk", "kd_skinny_bulk", {}, bulk_rejects, bulk_seeds, bulk_complete, bulk_valid, bulk_plan,
     false, true},
    {"skinny_mma", "kd_skinny_mma", {}, mma_rejects, mma_seeds, mma_complete, mma_valid, mma_plan, false, true},
    {"simt_tiled", "kd_simt_tiled", {}, simt_rejects, simt_seeds, nothing_derived, simt_valid, simt_plan, false,
     true},
};

// Row order is seed order, and seeds are evaluated in order: a round that reaches the wall-time
// budget leaves the rest unevaluated. simt_gemv and skinny_ws come first, then the tensor-core families (on large
// shapes one evaluation of a scalar seed costs what several of theirs do); wg_tiled needs sm_90 and rejects
// what it cannot serve, so elsewhere tc_tiled leads. wg_tma (a trial, see Family::trial) leads the 16-bit
// keys it serves when enabled; wg_tma_f32 leads the TF32 class and wg_tma_f16s strict f32 of 48 rows and
// columns or more (each rejects every other key).
std::vector<Family> with_sources() {
  auto embedded = [](Family f) {
    f.source = embedded_kernel(std::string(f.name) + ".cu");
    return f;
  };
  // simt_gemv leads the keys it serves (n <= 4), where it streamed A fastest (session 28), then
  // skinny_ws when enabled (a trial; 16-bit, 5..16 columns, k <= 4096: session 29); both reject or
  // decline the others at once. These rows carry their sources.
  std::vector<Family> out = {embedded(kFamilies[0]), embedded(kFamilies[1]), wg_tma_family(), wg_tma_f32_family(),
                             wg_tma_f16s_family(), wg_tiled_family(),
                             tc_tiled_family()};
  for (std::size_t i = 2; i < std::size(kFamilies); ++i) out.push_back(embedded(kFamilies[i]));
  return out;
}

// Type macros every family reads, from the key.
std::string type_defines(const GemmKey& key) {
  return fmt::format(
      "#define KD_IN_T {0}\n#define KD_OUT_T {2}\n#define KD_A_T {0}\n#define KD_B_T {1}\n"
      "#define KD_C_T {2}\n#define KD_TA {3}\n#define KD_TB {4}\n#define KD_BETA_ZERO {5}\n"
      "#define KD_BIAS {6}\n",
      type_name(key.a), type_name(key.b), type_name(key.c), key.ta == Transpose::T ? 1 : 0,
      key.tb == Transpose::T ? 1 : 0, key.beta_zero ? 1 : 0, key.epilogue == Epilogue::bias ? 1 : 0);
}

}  // namespace

std::span<const Family> families() {
  static const std::vector<Family> table = with_sources();
  return table;
}

bool family_enabled(const Family& family) {
  if (!family.trial) return true;
  const char* env = std::getenv("KDISPATCH_TRIAL_FAMILIES");
  if (env == nullptr) return false;
  std::string_view list(env);
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (item == "all" || item == family.name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<std::string> not_searched_for(const Family& family, const GemmKey& key) {
  if (auto why = family.rejects(key)) return why;
  return family.declines != nullptr ? family.declines(key) : std::nullopt;
}

const Family* find_family(std::string_view name) {
  for (const Family& f : families())
    if (f.name == name) return &f;
  return nullptr;
}

std::string describe(const Params& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", name, value);
  }
  return out;
}

LaunchPlan rendered_plan(const Family& family, const GemmKey& key, const Target& target, const Params& params) {
  LaunchPlan plan = family.plan(key, target, params);
  if (family.pdl_first && param(params, "KD_PDL") == 1 && !plan.launches.empty()) plan.launches.front().pdl = true;
  return plan;
}

std::string render(const Family& family, const GemmKey& key, const Target& target,
                   const Params& params) {
  std::ostringstream src;
  src << "// kdispatch builtin family " << family.name << ": " << describe(params) << "\n";
  src << "// key: " << key.shape_line() << "\n";
  src << "// kdispatch:plan " << plan_to_json(rendered_plan(family, key, target, params)) << "\n";
  src << type_defines(key);
  for (const auto& [name, value] : params) src << "#define " << name << " " << value << "\n";
  src << family.source;
  return src.str();
}

}  // namespace kd::builtin
