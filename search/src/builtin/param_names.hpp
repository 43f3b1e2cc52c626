// The named parameters (the kernels' KD_* macros) as the host rules and the idea moves name them,
// once for every family: char arrays with linkage, so that scale_param and step_param
// (family_rules.hpp) can take them as template arguments.
#pragma once

namespace kd::builtin::param_names {

// Tiles and pipelines.
inline constexpr char kBm[] = "KD_BM";
inline constexpr char kBn[] = "KD_BN";
inline constexpr char kBk[] = "KD_BK";
inline constexpr char kWm[] = "KD_WM";
inline constexpr char kWn[] = "KD_WN";
inline constexpr char kTm[] = "KD_TM";
inline constexpr char kTn[] = "KD_TN";
inline constexpr char kMt[] = "KD_MT";
inline constexpr char kStages[] = "KD_STAGES";
inline constexpr char kSplit[] = "KD_SPLITK";
inline constexpr char kMinCtas[] = "KD_MIN_CTAS";
// f32 on tensor cores.
inline constexpr char k3x[] = "KD_3XTF32";
inline constexpr char kPromote[] = "KD_PROMOTE";
// Warpgroup families.
inline constexpr char kWg[] = "KD_WG";
inline constexpr char kMw[] = "KD_MW";
inline constexpr char kCluster[] = "KD_CLUSTER";
inline constexpr char kCtas[] = "KD_CTAS";
inline constexpr char kLate[] = "KD_LATE";
inline constexpr char kWs[] = "KD_WS";
inline constexpr char kBlo[] = "KD_BLO";
inline constexpr char kTail[] = "KD_TAIL";
inline constexpr char kSk[] = "KD_SK";
inline constexpr char kSkb[] = "KD_SKB";
inline constexpr char kPp[] = "KD_PP";
inline constexpr char kTmast[] = "KD_TMAST";
inline constexpr char kTmal[] = "KD_TMAL";
inline constexpr char kF16s[] = "KD_F16S";
inline constexpr char kSplit16[] = "KD_SPLIT16";
inline constexpr char kCopyCluster[] = "KD_COPY_CLUSTER";
inline constexpr char kSharedMaps[] = "KD_SHARED_MAPS";
inline constexpr char kCopyRows[] = "KD_COPY_ROWS";
// Skinny families.
inline constexpr char kKc[] = "KD_KC";
inline constexpr char kRows[] = "KD_ROWS";
inline constexpr char kWarps[] = "KD_WARPS";
inline constexpr char kCtasPerSm[] = "KD_CTAS_PER_SM";
inline constexpr char kBsmem[] = "KD_BSMEM";
inline constexpr char kUnroll[] = "KD_UNROLL";
inline constexpr char kWarpsK[] = "KD_WARPS_K";
inline constexpr char kKsplit[] = "KD_KSPLIT";
inline constexpr char kRpw[] = "KD_RPW";
inline constexpr char kNmax[] = "KD_NMAX";
inline constexpr char kStageK[] = "KD_STAGE_K";
inline constexpr char kOctets[] = "KD_OCTETS";
// Every family.
inline constexpr char kPdl[] = "KD_PDL";

}  // namespace kd::builtin::param_names
