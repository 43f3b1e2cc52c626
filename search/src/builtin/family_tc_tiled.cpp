#include "builtin/family_tc_tiled.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "builtin/embedded_kernels.hpp"
#include "builtin/family_rules.hpp"
#include "builtin/param_names.hpp"

namespace kd::builtin {
namespace {

using namespace param_names;

long long elem_bytes(const GemmKey& key) { return static_cast<long long>(dtype_bytes(key.a)); }

constexpr long long kMaxSplit = 16;

long long warps_of(const Params& p) { return (param(p, kBm) / param(p, kWm)) * (param(p, kBn) / param(p, kWn)); }
long long tiles_of(const GemmKey& key, const Params& p) {
  return ceil_div(key.m, param(p, kBm)) * ceil_div(key.n, param(p, kBn)) * key.batch;
}
// f32 with ta = T: both operands k-contiguous, read in 16-byte fragments (tc_tiled.cu's kF32Vec).
bool f32_vec(const GemmKey& key) { return key.a == DType::f32 && key.ta == Transpose::T; }
// Bytes of one ring stage; mirrors kPadK/kALd/kATile/kBTile in tc_tiled.cu (k-contiguous rows padded
// by 16 bytes, or to 16 mod 32 words for f32 with ta = T; m-contiguous rows by 8 elements).
long long stage_bytes(const GemmKey& key, const Params& p) {
  const long long e = elem_bytes(key), bk = param(p, kBk);
  const long long pad_k = f32_vec(key) ? (48 - bk % 32) % 32 : 16 / e;
  const long long a = key.ta == Transpose::T ? param(p, kBm) * (bk + pad_k) : bk * (param(p, kBm) + 8);
  return (a + param(p, kBn) * (bk + pad_k)) * e;
}
long long workspace_bytes(const GemmKey& key, const Params& p) {
  const long long split = param(p, kSplit);
  return split > 1 ? split * key.batch * key.m * key.n * 4 : 0;
}

// The smallest power-of-two split (at most 16, keeping >= 8 k tiles per split) that gives at
// least one CTA per SM.
long long split_to_fill(const GemmKey& key, const Target& t, const Params& p) {
  const long long tiles = tiles_of(key, p), ktiles = ceil_div(key.k, param(p, kBk));
  long long s = 1;
  while (tiles * s < t.sms && s * 2 <= kMaxSplit && ktiles / (s * 2) >= 8) s *= 2;
  return s;
}

std::optional<std::string> tc_rejects(const GemmKey& key) {
  if (key.tb != Transpose::N) return "needs tb=N (k-contiguous B)";
  if (key.a != key.b) return "needs equal A and B types";
  const long long vec = 16 / elem_bytes(key);
  if (key.lda % vec || key.ldb % vec)
    return fmt::format("lda and ldb must be multiples of {} for 16-byte copies", vec);
  if (key.batch > 1 && (key.stride_a % vec || key.stride_b % vec))
    return "batch strides must keep 16-byte alignment";
  return std::nullopt;
}

Params tile(long long bm, long long bn, long long bk, long long wm, long long wn, long long stages) {
  return {{kBm, bm}, {kBn, bn}, {kBk, bk}, {kWm, wm}, {kWn, wn}, {kStages, stages}, {kSplit, 1}, {kMinCtas, 1}};
}
Params tile_f32(long long bm, long long bn, long long bk, long long wm, long long wn, long long stages,
                long long promote) {
  Params p = tile(bm, bn, bk, wm, wn, stages);
  p[kPromote] = promote;
  return p;
}

std::vector<Params> tc_seeds(const GemmKey& key, const Target& t) {
  std::vector<Params> out;
  const bool f32 = key.a == DType::f32;
  const bool big = key.n >= 512 && key.m >= 512;
  if (f32) {
    // The best 3xTF32 tiles of the kernel lab (tools/dev/lab_tc_f32.json, H200): 64x32 warp tiles,
    // two k8 steps per FADD; 4096^3 (ta = N) 128x64x16 at 1.22x cuBLAS, 4096x128x4096 (ta = T)
    // 128x128x32 split 4 at 1.20x.
    if (big) {
      out = {tile_f32(128, 64, 16, 64, 32, 4, 2), tile_f32(128, 128, 32, 64, 32, 3, 2),
             tile_f32(128, 128, 16, 64, 32, 4, 2)};
    } else {
      if (key.n > 64)
        out = {tile_f32(128, 128, 32, 64, 32, 3, 2), tile_f32(64, 64, 32, 32, 32, 4, 4),
               tile_f32(128, 128, 16, 64, 32, 4, 2)};
      else
        out = {tile_f32(128, 64, 16, 64, 32, 4, 2), tile_f32(64, 64, 32, 32, 32, 4, 4),
               tile_f32(64, 64, 16, 32, 32, 6, 2)};
    }
  } else if (big) {
    out = {tile(128, 128, 32, 64, 32, 4), tile(128, 256, 32, 64, 64, 3), tile(128, 128, 64, 64, 32, 3)};
  } else {
    const long long bn = key.n <= 64 ? 64 : 128;
    out = {tile(128, bn, 64, 64, 32, 4), tile(64, bn, 64, 32, 32, 4), tile(128, bn, 32, 32, 32, 6)};
  }
  for (Params& p : out) p[kSplit] = split_to_fill(key, t, p);
  return out;
}

Params tc_complete(const GemmKey& key, const Target&, Params p) {
  // f32 inputs on a strict-fp32 call need the error-compensated path; a TF32 call may skip it.
  if (key.a != DType::f32) p.erase(kPromote);
  else if (param(p, kPromote) < 1) p[kPromote] = 1;
  if (key.a != DType::f32) p[k3x] = 0;
  else if (key.precision == PrecisionClass::f32) p[k3x] = 1;
  else if (!p.contains(k3x)) p[k3x] = 0;
  if (param(p, kSplit) < 1) p[kSplit] = 1;
  if (param(p, kMinCtas) < 1) p[kMinCtas] = 1;
  return p;
}

bool tc_valid(const GemmKey& key, const Target& t, const Params& p) {
  const long long bm = param(p, kBm), bn = param(p, kBn), bk = param(p, kBk), wm = param(p, kWm), wn = param(p, kWn);
  const long long stages = param(p, kStages), split = param(p, kSplit), ctas = param(p, kMinCtas);
  const bool f32 = key.a == DType::f32;
  const long long vec = 16 / elem_bytes(key);
  if (bm < 16 || bn < 8 || bm > 256 || bn > 256 || bk < 8 || bk > 128) return false;
  if (wm < 16 || wn < 8 || wm % 16 || wn % (f32 ? 8 : 16) || bm % wm || bn % wn) return false;
  if (bk % (f32 ? 8 : 16) || bk % vec || bm % vec) return false;
  if (f32_vec(key) && bk % 16) return false;
  if (f32) {
    // ptxas -v on sm_90: a 64-element warp tile (64x32) fits beside one group's hi/lo fragments
    // only with two k8 steps per group (KD_PROMOTE 1 with ta = T loads two anyway and spills); one
    // of 32 elements takes any group.
    const long long promote = param(p, kPromote);
    if ((promote != 1 && promote != 2 && promote != 4) || bk % (8 * promote)) return false;
    // A 64-element tile also spills with BK 64, and with BK 32 in a CTA of fewer than 8 warps.
    const long long acc_f32 = wm * wn / 32;
    if (acc_f32 > 64 || (acc_f32 > 32 && promote != 2 && !(promote == 1 && !f32_vec(key)))) return false;
    if (acc_f32 > 32 && (bk > 32 || (bk > 16 && warps_of(p) < 8))) return false;
  } else if (p.contains(kPromote)) {
    return false;
  }
  const long long warps = warps_of(p);
  if (warps < 1 || warps > 16 || stages < 2 || stages > 6 || ctas < 1 || ctas > 4) return false;
  // Registers: the accumulators are wm*wn/32 per thread; 64x64 is the most that fits beside the
  // 16-bit fragments (f32: see above).
  const long long acc = wm * wn / 32;
  // 16-bit: 64x64 warp tiles spill with BK 64 (NVRTC, -lineinfo), so acc * BK/16 <= 256.
  if (acc > 128 || (!f32 && acc * (bk / 16) > 256)) return false;
  // Register file: 64 K per SM; the estimate follows ptxas -v on sm_90 (16-bit: 64x32 141,
  // 64x64 250; 3xTF32 241-255).
  const long long regs = f32 ? 255 : std::min(255LL, 72 + 3 * acc / 2);
  if (warps * 32 * ctas * regs > 65536) return false;
  if (f32 && param(p, k3x) == 0 && key.precision == PrecisionClass::f32) return false;
  if (split < 1 || split > kMaxSplit || split > ceil_div(key.k, bk)) return false;
  if (ceil_div(key.n, bn) > 65535 || key.batch * split > 65535 || ceil_div(key.m, bm) > 0x7fffffffLL) return false;
  if (workspace_bytes(key, p) > (4LL << 30)) return false;
  return stages * stage_bytes(key, p) + 1024 <= t.smem_optin_bytes / ctas;
}

LaunchPlan tc_plan(const GemmKey& key, const Target& t, const Params& p) {
  LaunchPlan plan;
  LaunchSpec main;
  main.entry = "kd_tc_tiled";
  main.grid = {u32(ceil_div(key.m, param(p, kBm))), u32(ceil_div(key.n, param(p, kBn))),
               u32(key.batch * param(p, kSplit))};
  main.block = {u32(32 * warps_of(p)), 1, 1};
  main.smem_bytes = u32(param(p, kStages) * stage_bytes(key, p));
  plan.launches.push_back(main);
  if (param(p, kSplit) > 1) {
    plan.launches.push_back(splitk_reduce_launch(key, t, "kd_tc_tiled_reduce"));
    plan.workspace_bytes = static_cast<std::uint64_t>(workspace_bytes(key, p));
  }
  return plan;
}

// ---- ideas ------------------------------------------------------------------------------------

std::string split_double(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("split K across {} CTAs: {} tiles of {}x{} cannot fill {} SMs", 2 * param(p, kSplit),
                     tiles_of(key, p), param(p, kBm), param(p, kBn), t.sms);
}
std::string split_half(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("halve the K split to {}: the reduction pass moves {} MB of f32 partials", param(p, kSplit) / 2,
                     2 * workspace_bytes(key, p) / 1000000);
}
std::string bk_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("double BK to {} to halve the barriers and pipeline waits per output tile", 2 * param(p, kBk));
}
std::string bk_half(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("halve BK to {}: {}-byte stages leave room for a deeper ring and fewer fragment registers",
                     param(p, kBk) / 2, stage_bytes(key, p) / 2);
}
std::string stages_up(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("deepen the cp.async ring to {} stages: more bytes in flight per SM to cover DRAM latency",
                     param(p, kStages) + 1);
}
std::string stages_down(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("shorten the ring to {} stages: less shared memory, room for a second CTA per SM",
                     param(p, kStages) - 1);
}
std::optional<Params> bm_half(const GemmKey&, const Target&, const Params& p) {
  if (param(p, kBm) < 32) return std::nullopt;
  Params out = p;
  out[kBm] = param(p, kBm) / 2;
  out[kWm] = std::min(param(p, kWm), out[kBm]);
  return out;
}
std::string bm_half_text(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("halve BM to {}: {} tiles instead of {} for {} SMs, at the price of re-reading B more often",
                     param(p, kBm) / 2, 2 * tiles_of(key, p), tiles_of(key, p), t.sms);
}
std::optional<Params> bn_double(const GemmKey& key, const Target&, const Params& p) {
  if (param(p, kBn) >= key.n) return std::nullopt;
  Params out = p;
  out[kBn] = param(p, kBn) * 2;
  return out;
}
std::string bn_double_text(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("double BN to {}: A ({} MB) is streamed {} times instead of {}", 2 * param(p, kBn),
                     key.m * key.k * elem_bytes(key) / 1000000, ceil_div(key.n, 2 * param(p, kBn)),
                     ceil_div(key.n, param(p, kBn)));
}
std::string wn_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("grow the warp tile to {}x{}: more mma per ldmatrix, fewer warps", param(p, kWm), 2 * param(p, kWn));
}
std::string wm_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("shrink the warp tile to {}x{}: twice the warps to hide mma and load latency",
                     param(p, kWm) / 2, param(p, kWn));
}
std::string promote_up(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("chain {} k8 steps of 3xTF32 mma before each FADD into the f32 sum: fewer FADDs per mma, "
                     "the chain still short enough for the strict-fp32 gate", 2 * param(p, kPromote));
}
std::string promote_down(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("promote every {} k8 steps: fewer live fragment registers per chain", param(p, kPromote) / 2);
}
std::string two_ctas(const GemmKey&, const Target&, const Params&) {
  return "two CTAs per SM: one CTA's epilogue and pipeline fill overlap the other's main loop";
}

const IdeaMove kIdeas[] = {
    {"tc_tiled", "tc.split_double", split_double, scale_param<kSplit, 2, 1, 1, kMaxSplit>},
    {"tc_tiled", "tc.split_half", split_half, scale_param<kSplit, 1, 2, 1, kMaxSplit>},
    {"tc_tiled", "tc.bk_double", bk_double, scale_param<kBk, 2, 1, 8, 128>},
    {"tc_tiled", "tc.bk_half", bk_half, scale_param<kBk, 1, 2, 8, 128>},
    {"tc_tiled", "tc.stages_up", stages_up, step_param<kStages, 1, 2, 6>},
    {"tc_tiled", "tc.stages_down", stages_down, step_param<kStages, -1, 2, 6>},
    {"tc_tiled", "tc.bm_half", bm_half_text, bm_half},
    {"tc_tiled", "tc.bn_double", bn_double_text, bn_double},
    {"tc_tiled", "tc.wn_double", wn_double, scale_param<kWn, 2, 1, 8, 128>},
    {"tc_tiled", "tc.wm_half", wm_half, scale_param<kWm, 1, 2, 16, 128>},
    {"tc_tiled", "tc.two_ctas", two_ctas, scale_param<kMinCtas, 2, 1, 1, 2>},
    {"tc_tiled", "tc.promote_up", promote_up, scale_param<kPromote, 2, 1, 1, 4>},
    {"tc_tiled", "tc.promote_down", promote_down, scale_param<kPromote, 1, 2, 1, 4>},
};

Family make_family() {
  return {"tc_tiled", "kd_tc_tiled", embedded_kernel("tc_tiled.cu"), tc_rejects, tc_seeds,
          tc_complete, tc_valid, tc_plan, false, true};
}

}  // namespace

const Family& tc_tiled_family() {
  static const Family family = make_family();
  return family;
}

std::span<const IdeaMove> tc_tiled_ideas() { return kIdeas; }

}  // namespace kd::builtin
