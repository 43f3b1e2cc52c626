#include "builtin/ideas.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "builtin/family_rules.hpp"
#include "builtin/family_tc_tiled.hpp"
#include "builtin/family_wg_tiled.hpp"
#include "builtin/family_wg_tma.hpp"
#include "builtin/param_names.hpp"

namespace kd::builtin {
namespace {

using namespace param_names;

std::string bulk_kc_double(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("double the k chunk to {}: {}-byte bulk copies per row, half the stage "
                     "hand-offs per row block", 2 * param(p, kKc), 2 * param(p, kKc) * dtype_bytes(key.a));
}
std::string bulk_kc_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("halve the k chunk to {}: smaller stages make a deeper ring, keeping more "
                     "requests in flight per SM", param(p, kKc) / 2);
}
std::string bulk_rows_double(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("double the rows per block to {}: B ({} columns) is re-read from L2 half as "
                     "often per byte of A", 2 * param(p, kRows), key.n);
}
std::string bulk_rows_half(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("halve the rows per block to {}: {} row blocks instead of {} for {} SMs",
                     param(p, kRows) / 2, ceil_div(key.m, param(p, kRows) / 2),
                     ceil_div(key.m, param(p, kRows)), t.sms);
}
std::string bulk_bsmem_on(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("copy B's {} columns into shared memory once per block: each of the {}-row blocks "
                     "re-reads {} KB of B from L2 today", key.n, param(p, kRows),
                     key.n * key.k * dtype_bytes(key.b) / 1024);
}
std::string bulk_bsmem_off(const GemmKey&, const Target&, const Params&) {
  return "read B from L2 again: its shared memory goes back to a deeper ring of A stages";
}
std::string bulk_warps_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("double the consumer warps to {}: more shared-memory load bandwidth per stage",
                     2 * param(p, kWarps));
}
std::string bulk_warps_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("halve the consumer warps to {}: less cross-warp reduction per row block",
                     param(p, kWarps) / 2);
}
std::string bulk_ctas_two(const GemmKey&, const Target&, const Params&) {
  return "two blocks per SM: one block's reduction and epilogue overlap the other's streaming";
}
std::string bulk_ctas_one(const GemmKey&, const Target&, const Params&) {
  return "one block per SM: a single ring as deep as shared memory allows";
}
std::string mma_unroll_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("double the unroll to {}: twice the bytes in flight per warp before the "
                     "first mma", 2 * param(p, kUnroll));
}
std::string mma_unroll_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("halve the unroll to {}: fewer registers, more resident warps", param(p, kUnroll) / 2);
}
std::string mma_splitk_double(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("split K over {} warps: {} blocks of {} rows are few warps for {} SMs",
                     2 * param(p, kWarpsK), ceil_div(key.m, 16 * param(p, kMt)), 16 * param(p, kMt), t.sms);
}
std::string mma_splitk_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("split K over {} warps: less shared-memory reduction per output", param(p, kWarpsK) / 2);
}
std::string mma_mt_double(const GemmKey&, const Target&, const Params&) {
  return "two m16 tiles per warp: each B fragment feeds twice the rows";
}
std::string gemv_ksplit_double(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("split each row's k over {} warps: more loads in flight for {} rows", 2 * param(p, kKsplit),
                     key.m);
}
std::string gemv_ksplit_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("split each row's k over {} warps: fewer shared-memory sums per row", param(p, kKsplit) / 2);
}
std::string gemv_unroll_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("{} loads in flight per lane: more bytes per warp before its first use", 2 * param(p, kUnroll));
}
std::string gemv_unroll_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("{} loads in flight per lane: fewer registers, more resident warps", param(p, kUnroll) / 2);
}
std::string gemv_warps_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("{} warps per block: fewer, larger blocks", 2 * param(p, kWarps));
}
std::string gemv_warps_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("{} warps per block: finer blocks for the last wave", param(p, kWarps) / 2);
}
std::string gemv_rpw_two(const GemmKey&, const Target&, const Params&) {
  return "two rows per warp: each load of B feeds both rows";
}
std::string ws_stages_up(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("{} stages per producer-consumer pair: more slack between a slice's loads and its mmas",
                     param(p, kStages) + 1);
}
std::string ws_stages_down(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("{} stages per pair: less shared memory, more of L1 for the loads in flight",
                     param(p, kStages) - 1);
}
std::string ws_octets_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("row blocks of {} rows: half the block finishes per row", 16 * param(p, kOctets));
}
std::string ws_octets_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("row blocks of {} rows: finer blocks for the last ones", 4 * param(p, kOctets));
}
std::string ws_stage_k_swap(const GemmKey&, const Target&, const Params& p) {
  return param(p, kStageK) == 256 ? "whole 512-k units per stage: one handoff per unit instead of two"
                                  : "half units (256 k) per stage: half the shared memory per stage";
}
std::optional<Params> ws_stage_k_swap_move(const GemmKey&, const Target&, const Params& p) {
  Params out = p;
  out[kStageK] = param(p, kStageK) == 256 ? 512 : 256;
  return out;
}
std::string simt_bk_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("double BK to {} to halve the barriers per output tile", 2 * param(p, kBk));
}
std::string simt_bk_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("halve BK to {}: less shared memory per block, more resident blocks", param(p, kBk) / 2);
}
std::string simt_tm_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("grow the thread tile to {}x{}: more FMAs per shared-memory load",
                     2 * param(p, kTm), param(p, kTn));
}
std::string simt_tn_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("grow the thread tile to {}x{}: more FMAs per shared-memory load",
                     param(p, kTm), 2 * param(p, kTn));
}
std::optional<Params> simt_tile_half(const GemmKey&, const Target&, const Params& p) {
  if (param(p, "KD_BM") < 32 || param(p, "KD_BN") < 16) return std::nullopt;
  Params out = p;
  out["KD_BM"] = param(p, "KD_BM") / 2;
  out["KD_BN"] = param(p, "KD_BN") / 2;
  out["KD_TM"] = std::max(1LL, param(p, kTm) / 2);
  out["KD_TN"] = std::max(1LL, param(p, kTn) / 2);
  return out;
}
std::string simt_tile_half_text(const GemmKey& key, const Target& t, const Params& p) {
  const long long tiles = ceil_div(key.m, param(p, "KD_BM")) * ceil_div(key.n, param(p, "KD_BN")) * key.batch;
  return fmt::format("halve the block tile to {}x{}: {} tiles cannot fill {} SMs", param(p, "KD_BM") / 2,
                     param(p, "KD_BN") / 2, tiles, t.sms);
}
std::optional<Params> simt_tile_double(const GemmKey&, const Target&, const Params& p) {
  Params out = p;
  out["KD_BM"] = param(p, "KD_BM") * 2;
  out["KD_BN"] = param(p, "KD_BN") * 2;
  out["KD_TM"] = param(p, kTm) * 2;
  out["KD_TN"] = param(p, kTn) * 2;
  return out;
}
std::string simt_tile_double_text(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("double the block tile to {}x{}: half the global loads per output", 2 * param(p, "KD_BM"),
                     2 * param(p, "KD_BN"));
}

// Programmatic dependent launch of the first launch, for every family with Family::pdl_first.
std::string pdl_on_text(const GemmKey&, const Target&, const Params&) {
  return "launch as a programmatic dependent of the previous kernel on the stream: blocks are scheduled while it "
         "drains and wait on the grid first, hiding the launch gap between back-to-back calls in a CUDA graph";
}
std::string pdl_off_text(const GemmKey&, const Target&, const Params&) {
  return "launch in plain stream order: no grid-dependency wait at the start of the kernel";
}
std::optional<Params> pdl_on(const GemmKey&, const Target& t, const Params& p) {
  if (t.cc_major < 9 || param(p, kPdl) == 1) return std::nullopt;
  Params out = p;
  out[kPdl] = 1;
  return out;
}
std::optional<Params> pdl_off(const GemmKey&, const Target&, const Params& p) {
  if (param(p, kPdl) == 0) return std::nullopt;
  Params out = p;
  out[kPdl] = 0;
  return out;
}
// Ids are per family: implement() finds a move by its id alone.
const IdeaMove kPdlIdeas[] = {
    {"simt_gemv", "gemv.pdl_on", pdl_on_text, pdl_on},     {"simt_gemv", "gemv.pdl_off", pdl_off_text, pdl_off},
    {"skinny_bulk", "bulk.pdl_on", pdl_on_text, pdl_on},   {"skinny_bulk", "bulk.pdl_off", pdl_off_text, pdl_off},
    {"skinny_ws", "ws.pdl_on", pdl_on_text, pdl_on},       {"skinny_ws", "ws.pdl_off", pdl_off_text, pdl_off},
    {"skinny_mma", "mma.pdl_on", pdl_on_text, pdl_on},     {"skinny_mma", "mma.pdl_off", pdl_off_text, pdl_off},
    {"simt_tiled", "simt.pdl_on", pdl_on_text, pdl_on},    {"simt_tiled", "simt.pdl_off", pdl_off_text, pdl_off},
    {"tc_tiled", "tc.pdl_on", pdl_on_text, pdl_on},        {"tc_tiled", "tc.pdl_off", pdl_off_text, pdl_off},
    {"wg_tiled", "wg.pdl_on", pdl_on_text, pdl_on},        {"wg_tiled", "wg.pdl_off", pdl_off_text, pdl_off},
    {"wg_tma_f32", "tma32.pdl_on", pdl_on_text, pdl_on},   {"wg_tma_f32", "tma32.pdl_off", pdl_off_text, pdl_off},
    {"wg_tma_f16s", "tma16s.pdl_on", pdl_on_text, pdl_on}, {"wg_tma_f16s", "tma16s.pdl_off", pdl_off_text, pdl_off},
};

const IdeaMove kIdeas[] = {
    {"simt_gemv", "gemv.ksplit_double", gemv_ksplit_double, scale_param<kKsplit, 2, 1, 1, 8>},
    {"simt_gemv", "gemv.ksplit_half", gemv_ksplit_half, scale_param<kKsplit, 1, 2, 1, 8>},
    {"simt_gemv", "gemv.unroll_double", gemv_unroll_double, scale_param<kUnroll, 2, 1, 1, 16>},
    {"simt_gemv", "gemv.unroll_half", gemv_unroll_half, scale_param<kUnroll, 1, 2, 1, 16>},
    {"simt_gemv", "gemv.warps_double", gemv_warps_double, scale_param<kWarps, 2, 1, 1, 16>},
    {"simt_gemv", "gemv.warps_half", gemv_warps_half, scale_param<kWarps, 1, 2, 1, 16>},
    {"simt_gemv", "gemv.rpw_two", gemv_rpw_two, scale_param<kRpw, 2, 1, 1, 2>},
    {"skinny_ws", "ws.stages_up", ws_stages_up, step_param<kStages, 1, 2, 4>},
    {"skinny_ws", "ws.stages_down", ws_stages_down, step_param<kStages, -1, 2, 4>},
    {"skinny_ws", "ws.octets_double", ws_octets_double, scale_param<kOctets, 2, 1, 1, 4>},
    {"skinny_ws", "ws.octets_half", ws_octets_half, scale_param<kOctets, 1, 2, 1, 4>},
    {"skinny_ws", "ws.stage_k_swap", ws_stage_k_swap, ws_stage_k_swap_move},
    {"skinny_bulk", "bulk.kc_double", bulk_kc_double, scale_param<kKc, 2, 1, 128, 4096>},
    {"skinny_bulk", "bulk.kc_half", bulk_kc_half, scale_param<kKc, 1, 2, 128, 4096>},
    {"skinny_bulk", "bulk.rows_double", bulk_rows_double, scale_param<kRows, 2, 1, 16, 64>},
    {"skinny_bulk", "bulk.rows_half", bulk_rows_half, scale_param<kRows, 1, 2, 16, 64>},
    {"skinny_bulk", "bulk.warps_double", bulk_warps_double, scale_param<kWarps, 2, 1, 1, 16>},
    {"skinny_bulk", "bulk.warps_half", bulk_warps_half, scale_param<kWarps, 1, 2, 1, 16>},
    {"skinny_bulk", "bulk.ctas_two", bulk_ctas_two, scale_param<kCtasPerSm, 2, 1, 1, 2>},
    {"skinny_bulk", "bulk.ctas_one", bulk_ctas_one, scale_param<kCtasPerSm, 1, 2, 1, 2>},
    {"skinny_bulk", "bulk.bsmem_on", bulk_bsmem_on, step_param<kBsmem, 1, 0, 1>},
    {"skinny_bulk", "bulk.bsmem_off", bulk_bsmem_off, step_param<kBsmem, -1, 0, 1>},
    {"skinny_mma", "mma.unroll_double", mma_unroll_double, scale_param<kUnroll, 2, 1, 1, 8>},
    {"skinny_mma", "mma.unroll_half", mma_unroll_half, scale_param<kUnroll, 1, 2, 1, 8>},
    {"skinny_mma", "mma.splitk_double", mma_splitk_double, scale_param<kWarpsK, 2, 1, 1, 16>},
    {"skinny_mma", "mma.splitk_half", mma_splitk_half, scale_param<kWarpsK, 1, 2, 1, 16>},
    {"skinny_mma", "mma.mt_double", mma_mt_double, scale_param<kMt, 2, 1, 1, 2>},
    {"simt_tiled", "simt.bk_double", simt_bk_double, scale_param<kBk, 2, 1, 4, 64>},
    {"simt_tiled", "simt.bk_half", simt_bk_half, scale_param<kBk, 1, 2, 4, 64>},
    {"simt_tiled", "simt.tm_double", simt_tm_double, scale_param<kTm, 2, 1, 1, 16>},
    {"simt_tiled", "simt.tn_double", simt_tn_double, scale_param<kTn, 2, 1, 1, 16>},
    {"simt_tiled", "simt.tile_half", simt_tile_half_text, simt_tile_half},
    {"simt_tiled", "simt.tile_double", simt_tile_double_text, simt_tile_double},
};

}  // namespace

std::span<const IdeaMove> idea_catalogue() {
  static const std::vector<IdeaMove> all = [] {
    std::vector<IdeaMove> v(std::begin(kIdeas), std::end(kIdeas));
    for (const IdeaMove& m : tc_tiled_ideas()) v.push_back(m);
    for (const IdeaMove& m : wg_tiled_ideas()) v.push_back(m);
    for (const IdeaMove& m : wg_tma_ideas()) v.push_back(m);
    for (const IdeaMove& m : wg_tma_f32_ideas()) v.push_back(m);
    for (const IdeaMove& m : wg_tma_f16s_ideas()) v.push_back(m);
    for (const IdeaMove& m : kPdlIdeas) v.push_back(m);
    return v;
  }();
  return all;
}

std::optional<Params> apply_idea(const IdeaMove& move, const Family& family, const GemmKey& key,
                                 const Target& target, const Params& params) {
  if (move.family != family.name) return std::nullopt;
  std::optional<Params> moved = move.apply(key, target, params);
  if (!moved) return std::nullopt;
  Params done = family.complete(key, target, std::move(*moved));
  if (done == params || !family.valid(key, target, done)) return std::nullopt;
  return done;
}

}  // namespace kd::builtin
