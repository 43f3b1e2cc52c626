// Post-compile half of the contract checks: what NVRTC's PTX and cubin say about the plan's entries.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "contract/arch_limits.hpp"
#include "contract/candidate_checks.hpp"
#include "contract/cubin_resources.hpp"

namespace kd::search {
namespace {

// kd_gemm_args passed by value: the contract's only parameter.

struct PtxEntry {
  std::vector<std::string> params;  // each `.param ...` declaration, trimmed
  std::vector<std::uint32_t> maxntid;  // from `.maxntid x[, y[, z]]`, empty when absent
  std::vector<std::uint32_t> reqntid;  // from `.reqntid`, empty when absent
  // Its body (up to the next entry) executes griddepcontrol.wait, or calls a function, which may.
  bool may_wait_on_grid = false;
  // Every thread executes griddepcontrol.wait before any global memory access: the wait comes in
  // the entry's first basic block, before any branch, call or memory instruction outside the
  // param, shared and local state spaces.
  bool waits_before_memory = false;
};

constexpr std::string_view kGridWait = "griddepcontrol.wait";

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

// "128, 1, 1" -> {128, 1, 1}; anything but digits separates numbers.
std::vector<std::uint32_t> parse_dims(std::string_view text) {
  // A plain flag and value rather than std::optional: GCC 12 at -O1 reports the optional's payload
  // as maybe-uninitialized here (a false positive that -Werror turns into a build failure).
  std::vector<std::uint32_t> dims;
  bool in_number = false;
  std::uint64_t current = 0;
  for (const char c : text) {
    if (c >= '0' && c <= '9') {
      current = std::min<std::uint64_t>(current * 10 + static_cast<std::uint64_t>(c - '0'), UINT32_MAX);
      in_number = true;
    } else if (in_number) {
      dims.push_back(static_cast<std::uint32_t>(current));
      current = 0;
      in_number = false;
    }
  }
  if (in_number) dims.push_back(static_cast<std::uint32_t>(current));
  return dims;
}

// Whether the PTX instruction `line` (its first token, after a guard predicate) may touch global
// memory or leave the first basic block. Conservative: generic-address loads and stores count as
// global, and so does every copy, texture, surface, tensor-map and prefetch instruction.
bool ends_wait_window(std::string_view line) {
  if (line.ends_with(":")) return true;  // a label: control can arrive from elsewhere
  if (line.starts_with("@")) {
    const std::size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) return true;
    line = line.substr(line.find_first_not_of(" \t", sp));
  }
  const std::string_view op = line.substr(0, line.find_first_of(" \t;"));
  static constexpr std::string_view kControl[] = {"bra", "brx", "call", "ret", "exit", "trap"};
  for (const std::string_view c : kControl)
    if (op == c || op.starts_with(std::string(c) + ".")) return true;
  static constexpr std::string_view kAnyMemory[] = {"cp.",  "prefetch", "tex.",      "tld4",          "suld",
                                                    "sust", "sured",    "multimem", "tensormap",      "applypriority",
                                                    "discard", "st.async", "red.async"};
  for (const std::string_view m : kAnyMemory)
    if (op.starts_with(m)) return true;
  static constexpr std::string_view kSpaced[] = {"ld", "ldu", "st", "atom", "red"};
  for (const std::string_view m : kSpaced) {
    if (op != m && !op.starts_with(std::string(m) + ".")) continue;
    for (const std::string_view space : {".param", ".shared", ".local", ".const"})
      if (op.starts_with(std::string(m) + std::string(space))) return false;
    return true;
  }
  return false;
}

// Walks an entry body from its opening brace: true when griddepcontrol.wait comes before anything
// that ends the wait window (ends_wait_window); declarations and comments are skipped.
bool waits_first(std::string_view body) {
  std::size_t at = body.find('{');
  if (at == std::string_view::npos) return false;
  ++at;
  while (at < body.size()) {
    const std::size_t eol = std::min(body.find('\n', at), body.size());
    const std::string line = trim(body.substr(at, eol - at));
    at = eol + 1;
    if (line.empty() || line.starts_with("//") || line.starts_with(".") || line == "{" || line == "}") continue;
    if (line.starts_with(kGridWait)) return true;
    if (ends_wait_window(line)) return false;
  }
  return false;
}

// Entries of a PTX module by name: `.entry NAME( params ) [performance directives] {`.
std::map<std::string, PtxEntry> parse_entries(std::string_view ptx) {
  std::map<std::string, PtxEntry> entries;
  constexpr std::string_view kEntry = ".entry ";
  for (std::size_t at = ptx.find(kEntry); at != std::string_view::npos; at = ptx.find(kEntry, at + 1)) {
    const std::size_t open = ptx.find('(', at);
    const std::size_t close = ptx.find(')', open);
    const std::size_t body = ptx.find('{', close);
    if (open == std::string_view::npos || close == std::string_view::npos ||
        body == std::string_view::npos) {
      break;
    }
    PtxEntry entry;
    const std::string_view params = ptx.substr(open + 1, close - open - 1);
    std::size_t i = 0;
    while (i <= params.size()) {
      const std::size_t comma = std::min(params.find(',', i), params.size());
      if (std::string param = trim(params.substr(i, comma - i)); !param.empty()) {
        entry.params.push_back(std::move(param));
      }
      i = comma + 1;
    }
    const std::string_view directives = ptx.substr(close + 1, body - close - 1);
    for (auto [field, name] : {std::pair{&entry.maxntid, std::string_view(".maxntid")},
                               std::pair{&entry.reqntid, std::string_view(".reqntid")}}) {
      if (const std::size_t d = directives.find(name); d != std::string_view::npos) {
        const std::size_t eol = std::min(directives.find('\n', d), directives.size());
        *field = parse_dims(trim(directives.substr(d + name.size(), eol - d - name.size())));
      }
    }
    const std::string_view span = ptx.substr(body, ptx.find(kEntry, body) - body);
    entry.may_wait_on_grid = span.find(kGridWait) != std::string_view::npos ||
                             (span.find("call") != std::string_view::npos &&
                              ptx.find(kGridWait) != std::string_view::npos);
    entry.waits_before_memory = waits_first(span);
    entries[trim(ptx.substr(at + kEntry.size(), open - at - kEntry.size()))] = std::move(entry);
  }
  return entries;
}

bool is_args_param(const std::string& param, std::uint64_t args_bytes) {
  static const std::regex kArgs(R"(\.param\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\])");
  std::smatch match;
  return std::regex_match(param, match, kArgs) && std::stoull(match[1].str()) == args_bytes;
}

std::uint64_t product(const std::vector<std::uint32_t>& dims) {
  std::uint64_t p = 1;
  for (const std::uint32_t d : dims) p *= d;
  return p;
}

std::optional<Rejection> check_entry(const LaunchSpec& launch, bool first,
                                     const std::map<std::string, PtxEntry>& entries, std::uint64_t args_bytes) {
  const auto found = entries.find(launch.entry);
  if (found == entries.end()) {
    // A C++ mangled name: _Z <length> <name> ...
    const std::string mangled = fmt::format("_Z{}{}", launch.entry.size(), launch.entry);
    for (const auto& [name, entry] : entries) {
      if (name.starts_with(mangled)) {
        return Rejection{CandidateStatus::bad_entry_signature,
                         fmt::format("entry '{}' is not extern \"C\" (compiled as {})", launch.entry, name)};
      }
    }
    return Rejection{CandidateStatus::missing_entry,
                     fmt::format("plan entry '{}' is not a kernel in the PTX", launch.entry)};
  }
  const PtxEntry& entry = found->second;
  if (entry.params.size() != 1 || !is_args_param(entry.params.front(), args_bytes)) {
    return Rejection{CandidateStatus::bad_entry_signature,
                     fmt::format("entry '{}' must take exactly one {} by value ({} bytes); PTX has ({})", launch.entry,
                                 args_bytes == CompileRequest::kRowArgsBytes ? "kd_row_args" : "kd_gemm_args", args_bytes,
                                 fmt::join(entry.params, ", "))};
  }
  const std::vector<std::uint32_t> block(launch.block.begin(), launch.block.end());
  if (!entry.maxntid.empty() && product(block) > product(entry.maxntid)) {
    return Rejection{CandidateStatus::plan_exceeds_launch_bounds,
                     fmt::format("plan block {} of '{}' has more threads than its .maxntid {}",
                                 block, launch.entry, entry.maxntid)};
  }
  if (launch.pdl && first && !entry.waits_before_memory) {
    return Rejection{CandidateStatus::bad_plan,
                     fmt::format("plan's first launch of '{}' is a programmatic dependent (\"pdl\") but the entry "
                                 "does not execute griddepcontrol.wait before its first global memory access or "
                                 "branch: it could read inputs the application's previous kernel is still writing. "
                                 "Put the wait first in the kernel",
                                 launch.entry)};
  }
  if (launch.pdl && !entry.may_wait_on_grid) {
    return Rejection{CandidateStatus::bad_plan,
                     fmt::format("plan launch of '{}' is a programmatic dependent (\"pdl\") but the entry never "
                                 "executes griddepcontrol.wait: it could read the previous launch's output before "
                                 "that launch completes",
                                 launch.entry)};
  }
  if (!entry.reqntid.empty()) {
    std::vector<std::uint32_t> required = entry.reqntid;
    required.resize(3, 1);
    if (required != block) {
      return Rejection{CandidateStatus::plan_exceeds_launch_bounds,
                       fmt::format("plan block {} of '{}' differs from its .reqntid {}", block,
                                   launch.entry, entry.reqntid)};
    }
  }
  return std::nullopt;
}

std::optional<Rejection> check_shared_memory(const LaunchPlan& plan, std::string_view cubin,
                                             std::string_view arch) {
  const std::optional<ArchLimits> limits = arch_limits(arch);
  if (!limits) return std::nullopt;
  const auto shared = cubin_static_shared_bytes(cubin);
  if (!shared) {
    return Rejection{CandidateStatus::compiler_crash, "the cubin is not a readable ELF image"};
  }
  for (const LaunchSpec& launch : plan.launches) {
    const auto found = shared->find(launch.entry);
    const std::uint64_t in_cubin = found == shared->end() ? 0 : found->second;
    const std::uint64_t static_bytes =
        in_cubin > limits->cubin_reserved_shared_bytes ? in_cubin - limits->cubin_reserved_shared_bytes : 0;
    if (static_bytes + launch.smem_bytes > limits->max_shared_per_block_bytes) {
      return Rejection{CandidateStatus::shared_memory_over_limit,
                       fmt::format("entry '{}': {} static + {} dynamic shared bytes exceed {}'s {}",
                                   launch.entry, static_bytes, launch.smem_bytes, arch,
                                   limits->max_shared_per_block_bytes)};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Rejection> check_compiled(const LaunchPlan& plan, std::string_view ptx,
                                        std::string_view cubin, std::string_view arch, std::uint64_t args_bytes) {
  const std::map<std::string, PtxEntry> entries = parse_entries(ptx);
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    if (auto rejection = check_entry(plan.launches[i], i == 0, entries, args_bytes)) return rejection;
  }
  return check_shared_memory(plan, cubin, arch);
}

}  // namespace kd::search
