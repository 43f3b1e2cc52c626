// kdctl ls: the cache's records, one per line, filtered by op, dtype and GPU.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "baseline_label.hpp"
#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "kdctl.hpp"
#include "table.hpp"

namespace kd::kdctl {
namespace {

struct LsArgs {
  std::string cache_dir;
  std::string op;
  std::string dtype;
  std::string gpu;  // substring of the device part's gpu name
  bool json = false;
};

bool matches(const LsArgs& a, const OpKeyParts& k) {
  if (!a.op.empty() && k.op != a.op) return false;
  if (!a.dtype.empty() && to_string(k.dtype) != a.dtype) return false;
  if (!a.gpu.empty() && k.device.gpu.find(a.gpu) == std::string::npos) return false;
  return true;
}

// The values --op and --dtype accept: what a stored key's first token and input type can be.
const std::vector<std::string> kOps = {"gemm", "rmsnorm", "layernorm", "softmax"};
std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const DType t : {DType::f16, DType::bf16, DType::f32}) names.emplace_back(to_string(t));
  return names;
}

int run_ls(const LsArgs& a) {
  const CacheSnapshot cache(resolve_cache_dir(a.cache_dir));
  Table table({{"KEY"}, {"GPU"}, {"PROPOSER"}, {"SPEEDUP", Align::right}, {"BASELINE_US", Align::right},
               {"KERNEL_US", Align::right}, {"AGE", Align::right}});
  nlohmann::json listed = nlohmann::json::array();
  std::size_t damaged = 0;
  for (const StoredRecord& s : cache.records()) {
    const auto* record = std::get_if<Record>(&s.record);
    const auto parts = split_op_key(s.key_line);
    if (record == nullptr || !parts) {
      ++damaged;
      std::fprintf(stderr, "kdctl ls: skipping damaged record %s: %s\n", s.key_line.c_str(),
                   record == nullptr ? std::string(to_string(std::get<RecordError>(s.record))).c_str()
                                     : "key line does not parse or has no device part");
      continue;
    }
    if (!matches(a, *parts)) continue;
    const auto age = age_of(record->created_unix_s);
    if (a.json) {
      listed.push_back({{"key", s.key_line}, {"shape", parts->shape_line},
                        {"gpu", parts->device.gpu}, {"arch", parts->device.arch},
                        {"sms", parts->device.sms}, {"kind", to_string(record->kind)},
                        {"proposer", record->proposer}, {"baseline", baseline_of(parts->key, *record)},
                        {"baseline_us", record->baseline_us}, {"candidate_us", record->candidate_us},
                        {"created_unix_s", record->created_unix_s}, {"age_s", age.count()},
                        {"bytes", s.stored_bytes}});
    } else {
      // A vendor verdict's kernel time is its best loser's: no speedup to show. BASELINE_US is
      // cuBLAS's, or a row operator's framework kernel's (issue 33).
      table.add({parts->shape_line, parts->device.gpu, record->proposer,
                 record->kind == RecordKind::vendor ? fmt::format("kept {}", baseline_of(parts->key))
                                                    : format_speedup(record->baseline_us, record->candidate_us),
                 fmt::format("{:.1f}", record->baseline_us), fmt::format("{:.1f}", record->candidate_us),
                 format_age(age)});
    }
  }
  if (a.json) {
    std::printf("%s\n", listed.dump(2).c_str());
  } else {
    std::fputs(table.render().c_str(), stdout);
    std::printf("%zu record(s)%s\n", table.size(),
                damaged > 0 ? fmt::format(", {} damaged skipped", damaged).c_str() : "");
  }
  return kOk;
}

}  // namespace

void setup_ls(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_ls);
  add_cache_dir_flag(sub, a->cache_dir);
  // A filter value no record can have is a usage error naming the valid ones, not an empty list.
  sub.add_option("--op", a->op, "Only this operator")->check(CLI::IsMember(kOps));
  sub.add_option("--dtype", a->dtype, "Only this input dtype")->check(CLI::IsMember(dtype_names()));
  sub.add_option("--gpu", a->gpu, "Only GPUs whose name contains this text");
  sub.add_flag("--json", a->json, "Print a JSON array instead of a table");
  sub.footer("Lists GEMM and row-operator (rmsnorm, layernorm, softmax) records. BASELINE_US is cuBLAS's time for a\n"
             "GEMM, the framework's kernel's for a row operator (--json: \"baseline\" names it); \"kept ...\" marks\n"
             "a verdict: the search found nothing faster.\n"
             "Exit codes: 0 ok, 1 no cache or unreadable cache, 2 usage (also an --op or --dtype\n"
             "value no record can have).\n");
}

}  // namespace kd::kdctl
