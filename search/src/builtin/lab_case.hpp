// The key a kernel-lab case stands for (tools/dev/kernel_lab.py's JSON: "dtype", "m", "n", "k", "ta",
// "tb", "batch", "tf32" and the KD_BETA_ZERO / KD_BIAS defines): packed operands of either transpose, a
// batch's entries one after another. kd_kernel_dump writes such cases (--lab) and reads the committed
// ones back (tools/dev/lab_*.json), and the families' unit tests check those against the rules; all
// three go through here, so that what the lab runs and what is checked stay one key.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "key/gemm_key.hpp"

namespace kd::builtin {

GemmKey lab_case_key(const nlohmann::json& lab_case);

// Why kernel_lab.py cannot run `key` (strided or padded operands, a batch whose entries are not one
// after another, two operand types), or nullopt.
std::optional<std::string> lab_refuses(const GemmKey& key);

}  // namespace kd::builtin
