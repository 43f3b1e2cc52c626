// kdctl export: the records of one GPU model into a portable archive (format in archive.hpp): GEMM
// and row-operator records alike.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "archive.hpp"
#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "kdctl.hpp"

namespace kd::kdctl {
namespace {

struct ExportArgs {
  std::string cache_dir;
  std::string gpu;  // exact GPU name, or text contained in exactly one GPU's name
  std::string output;
};

// The stored bytes of every decodable record, grouped by device part; damaged ones are reported.
struct ByDevice {
  std::vector<std::pair<DevicePart, std::vector<std::string>>> groups;
  std::size_t damaged = 0;
};

ByDevice group_records(const CacheSnapshot& cache) {
  ByDevice out;
  for (const StoredRecord& s : cache.records()) {
    const auto parts = split_op_key(s.key_line);  // any operator's record (issue 33: row operators too)
    if (!std::holds_alternative<Record>(s.record) || !parts) {
      ++out.damaged;
      std::fprintf(stderr, "kdctl export: skipping damaged record %s\n", s.key_line.c_str());
      continue;
    }
    const DevicePart& d = parts->device;
    auto it = std::find_if(out.groups.begin(), out.groups.end(), [&](const auto& g) { return g.first == d; });
    if (it == out.groups.end()) it = out.groups.emplace(out.groups.end(), d, std::vector<std::string>{});
    // Re-serialized from the decoded record: identical bytes for a record of this schema.
    it->second.push_back(serialize_record(std::get<Record>(s.record)));
  }
  return out;
}

std::string describe_groups(const ByDevice& by) {
  std::string text;
  for (const auto& [d, records] : by.groups) {
    text += fmt::format("\n  \"{}\" ({}, {} SMs): {} record(s)", d.gpu, d.arch, d.sms, records.size());
  }
  return text;
}

int run_export(const ExportArgs& a) {
  const CacheSnapshot cache(resolve_cache_dir(a.cache_dir));
  const ByDevice by = group_records(cache);
  if (by.groups.empty()) {
    std::fprintf(stderr, "kdctl export: the cache at %s holds no records\n", cache.dir().c_str());
    return kFailure;
  }
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < by.groups.size(); ++i) {
    const std::string& name = by.groups[i].first.gpu;
    if (a.gpu.empty() || name.find(a.gpu) != std::string::npos) chosen.push_back(i);
  }
  if (!a.gpu.empty()) {  // an exact name wins over names that merely contain it
    std::vector<std::size_t> exact;
    for (const std::size_t i : chosen) {
      if (by.groups[i].first.gpu == a.gpu) exact.push_back(i);
    }
    if (!exact.empty()) chosen = exact;
  }
  if (chosen.size() != 1) {
    std::fprintf(stderr, "kdctl export: %s; the cache holds:%s\n",
                 chosen.empty() ? fmt::format("no GPU matches \"{}\"", a.gpu).c_str()
                                : "pick one GPU model with --gpu",
                 describe_groups(by).c_str());
    return kUsage;
  }
  const auto& [device, records] = by.groups[chosen.front()];
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string archive = write_archive(device, now_s, records);
  std::ofstream out(a.output, std::ios::binary | std::ios::trunc);
  out.write(archive.data(), static_cast<std::streamsize>(archive.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "kdctl export: cannot write %s\n", a.output.c_str());
    return kFailure;
  }
  std::printf("exported %zu record(s) for \"%s\" (%s, %d SMs) to %s\n", records.size(),
              device.gpu.c_str(), device.arch.c_str(), device.sms, a.output.c_str());
  if (by.damaged > 0) {
    std::fprintf(stderr, "kdctl export: %zu damaged record(s) were not exported\n", by.damaged);
    return kFailure;
  }
  return kOk;
}

}  // namespace

void setup_export(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_export);
  add_cache_dir_flag(sub, a->cache_dir);
  sub.add_option("--gpu", a->gpu,
                 "GPU model to export (its name, or text in exactly one name); default: the cache's only GPU");
  sub.add_option("-o,--output", a->output, "Archive file to write")->required();
  sub.footer("Exit codes: 0 ok, 1 no cache, no records, unwritable file or damaged records skipped,\n"
             "2 usage (no or several GPUs match).\n");
}

}  // namespace kd::kdctl
