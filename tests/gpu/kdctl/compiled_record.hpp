// The records the kdctl GPU tests store: a kernel source compiled by NVRTC for this GPU, under its
// key with this GPU's device part, as a user's kernel timed 10 us against the baseline's 12 us.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <variant>

#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "plan/launch_plan.hpp"
#include "store/record.hpp"

namespace kd::test {

// The key line of `shape` (any operator's: a GEMM's or a row operator's) on `dev` (its device part
// added).
inline std::string on_device(const std::string& shape, const DeviceInfo& dev) {
  const auto parsed = parse_op_key(shape);
  return std::visit([&](const auto& key) { return key.with_device({dev.arch, dev.name, dev.sms}).full_line(); },
                    std::get<OpKey>(parsed));
}

// `source` compiled for `arch` as the record of `key_line`, stored by the test `search_id`. A
// compile failure is a test failure (with NVRTC's log) and leaves the record without a cubin.
inline Record compiled_record(const std::string& key_line, const std::string& source, const std::string& arch,
                              const std::string& search_id) {
  const search::CompileOutput out = search::compile_cuda({.source = source, .name = "kernel.cu", .arch = arch});
  EXPECT_EQ(out.status, search::CompileStatus::ok) << out.log;
  Record r;
  r.key_line = key_line;
  r.cubin = out.cubin;
  r.ptx = out.ptx;
  r.source = source;
  r.plan = std::get<LaunchPlan>(parse_plan_from_source(source));
  r.candidate_us = 10.0;
  r.baseline_us = 12.0;
  r.search_id = search_id;
  r.proposer = "user";
  r.created_unix_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  return r;
}

}  // namespace kd::test
