// The roofline floor: no GEMM can run faster than moving its minimum bytes at the device's
// bandwidth, nor faster than its flops at the device's peak for its precision. Both are measured
// once per GPU (roofline_measure.hpp) and stored as a small JSON file in a caller-given directory
// (the daemon's cache dir), reused when present.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "key/gemm_key.hpp"

namespace kd::eval {

struct Roofline {
  std::string gpu;                          // the device's identity (see roofline_file_name)
  double bandwidth_bytes_per_s = 0.0;       // device copy: bytes read + written per second
  std::map<std::string, double> peak_flops_per_s;  // by peak_class(), e.g. "bf16/f32"
  bool operator==(const Roofline&) const = default;
};

// The peak a key is held to: input type and precision class, "bf16/f32", "f32/tf32", "f16/f16".
std::string peak_class(const GemmKey& key);

// The stored file's format and measuring rules; a file of another version is measured again.
// 2: the strict-f32 peak counts 3xTF32 tensor-core GEMMs (roofline_measure.hpp).
// 3: ... and three f16 products (f16 splits with scales), at f16's rate.
// 4: the TF32 peak is the larger of TF32's and f16's (one product of scaled f16 operands).
inline constexpr int kRooflineVersion = 4;

// Measured figures are what the copy engine and cuBLAS reach, not hardware limits; a candidate
// may beat them by a little. A time is impossible only below this fraction of the floor.
inline constexpr double kRooflineSlack = 0.75;

// Seconds: max(min_bytes / bandwidth, flops / peak) * slack. A missing peak counts as no limit.
double roofline_floor_s(const GemmKey& key, const Roofline& r, double slack = kRooflineSlack);

nlohmann::json to_json(const Roofline& r);
Roofline roofline_from_json(const nlohmann::json& j);  // throws kd::Error (data)

// "roofline-<gpu with [^A-Za-z0-9] as _>.json"
std::string roofline_file_name(const std::string& gpu);
// nullopt when absent or unreadable (a damaged file is re-measured, not fatal).
std::optional<Roofline> load_roofline(const std::filesystem::path& dir, const std::string& gpu);
// Writes atomically (temp file + rename); throws kd::Error (system) on failure.
void save_roofline(const std::filesystem::path& dir, const Roofline& r);

}  // namespace kd::eval
