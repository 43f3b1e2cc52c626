// Static (pre-compile) half of the contract checks; the PTX/cubin half is in compiled_checks.cpp.
#include "contract/candidate_checks.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>

#include "contract/source_scan.hpp"

namespace kd::search {
namespace {

constexpr std::string_view kPlanMarker = "kdispatch:plan";

// Headers that only make sense in host code. Device headers (cuda_fp16.h, mma.h, cuda/barrier,
// cuda_pipeline.h, ...) are fine.
constexpr std::array<std::string_view, 27> kHostHeaders = {
    "iostream", "istream",  "ostream",         "fstream",          "sstream",   "iomanip",
    "cstdio",   "stdio.h",  "cstdlib",         "stdlib.h",         "thread",    "mutex",
    "future",   "chrono",   "condition_variable", "filesystem",    "unistd.h",  "pthread.h",
    "cuda.h",   "cuda_runtime.h", "cuda_runtime_api.h", "cublas_v2.h", "cublas.h", "cublasLt.h",
    "nvrtc.h",  "sys/mman.h", "dlfcn.h",
};

// Runtime API calls are identifiers `cudaXxx(`; these few are device functions.
constexpr std::array<std::string_view, 2> kDeviceRuntimeCalls = {
    "cudaGridDependencySynchronize", "cudaTriggerProgrammaticLaunchCompletion"};

// Driver API call families (cuComplex's cuCadd etc. are device code and do not match).
constexpr std::array<std::string_view, 10> kDriverCallPrefixes = {
    "cuInit", "cuMem", "cuModule", "cuLaunch", "cuCtx", "cuStream", "cuEvent", "cuDevice",
    "cuGraph", "cuLink"};

bool is_c_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is(const Token& t, std::string_view text) { return t.text == text; }

bool followed_by_call(const std::vector<Token>& tokens, std::size_t i) {
  return i + 1 < tokens.size() && is(tokens[i + 1], "(");
}

Rejection host_code(std::size_t line, std::string_view what) {
  return {CandidateStatus::host_code, fmt::format("line {}: {}", line, what)};
}

// `#include <name>` or `#include "name"` on tokens of one directive starting at `i` ('#').
std::optional<Rejection> check_include(const std::vector<Token>& tokens, std::size_t i) {
  if (i + 2 >= tokens.size() || !is(tokens[i + 1], "include")) return std::nullopt;
  std::string header;
  if (tokens[i + 2].kind == TokenKind::string) {
    header = std::string(tokens[i + 2].text.substr(1, tokens[i + 2].text.size() - 2));
  } else if (is(tokens[i + 2], "<")) {
    for (std::size_t j = i + 3; j < tokens.size() && tokens[j].in_directive && !is(tokens[j], ">"); ++j) {
      header += tokens[j].text;
    }
  }
  if (std::find(kHostHeaders.begin(), kHostHeaders.end(), header) == kHostHeaders.end()) {
    return std::nullopt;
  }
  return host_code(tokens[i].line, fmt::format("host header <{}>", header));
}

bool is_runtime_or_driver_call(std::string_view name) {
  if (name.size() > 4 && name.starts_with("cuda") && std::isupper(static_cast<unsigned char>(name[4]))) {
    return std::find(kDeviceRuntimeCalls.begin(), kDeviceRuntimeCalls.end(), name) ==
           kDeviceRuntimeCalls.end();
  }
  return std::any_of(kDriverCallPrefixes.begin(), kDriverCallPrefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

// `__host__` is host code unless `__device__` sits beside it (`__host__ __forceinline__ __device__`).
bool host_without_device(const std::vector<Token>& tokens, std::size_t i) {
  const std::size_t from = i >= 3 ? i - 3 : 0;
  const std::size_t to = std::min(tokens.size(), i + 4);
  for (std::size_t j = from; j < to; ++j) {
    if (is(tokens[j], "__device__")) return false;
  }
  return true;
}

// `source_tokens` keep string literals (for #include "x"); `tokens` of `stripped` have them blanked.
std::optional<Rejection> find_host_code(const std::vector<Token>& source_tokens,
                                        const std::string& stripped, const std::vector<Token>& tokens) {
  for (std::size_t i = 0; i < source_tokens.size(); ++i) {
    if (source_tokens[i].in_directive && is(source_tokens[i], "#")) {
      if (auto rejection = check_include(source_tokens, i)) return rejection;
    }
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.in_directive) continue;
    if (t.kind == TokenKind::identifier) {
      if (is(t, "main") && followed_by_call(tokens, i) && i > 0 &&
          (is(tokens[i - 1], "int") || is(tokens[i - 1], "void") || is(tokens[i - 1], "auto"))) {
        return host_code(t.line, "a main() function");
      }
      if (is(t, "__host__") && host_without_device(tokens, i)) {
        return host_code(t.line, "__host__ code");
      }
      if (followed_by_call(tokens, i) && is_runtime_or_driver_call(t.text)) {
        return host_code(t.line, fmt::format("host API call {}()", t.text));
      }
    } else if (is(t, "<")) {
      const std::size_t offset = static_cast<std::size_t>(t.text.data() - stripped.data());
      if (stripped.compare(offset, 3, "<<<") == 0) return host_code(t.line, "a <<<...>>> kernel launch");
    }
  }
  return std::nullopt;
}

enum class EntryDeclaration { extern_c_global, global_not_extern_c, absent };

// How `name` is declared: scans every `name (` outside directives, looking back to the start of
// its declaration (the previous ; { or }) for __global__ and extern "C", or an enclosing
// extern "C" { } block.
EntryDeclaration find_entry_declaration(const std::vector<Token>& tokens, std::string_view name) {
  EntryDeclaration best = EntryDeclaration::absent;
  std::vector<bool> braces_extern_c;  // one per open brace: opened by extern "C" {
  std::size_t decl_start = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.in_directive) continue;
    if (is(t, "{")) {
      braces_extern_c.push_back(i >= 2 && is(tokens[i - 2], "extern") && is(tokens[i - 1], "\"C\""));
      decl_start = i + 1;
    } else if (is(t, "}")) {
      if (!braces_extern_c.empty()) braces_extern_c.pop_back();
      decl_start = i + 1;
    } else if (is(t, ";")) {
      decl_start = i + 1;
    } else if (is(t, name) && followed_by_call(tokens, i)) {
      bool global = false;
      bool extern_c = std::find(braces_extern_c.begin(), braces_extern_c.end(), true) !=
                      braces_extern_c.end();
      for (std::size_t j = decl_start; j < i; ++j) {
        global = global || is(tokens[j], "__global__");
        extern_c = extern_c || (is(tokens[j], "extern") && j + 1 < i && is(tokens[j + 1], "\"C\""));
      }
      if (global && extern_c) return EntryDeclaration::extern_c_global;
      if (global) best = EntryDeclaration::global_not_extern_c;
    }
  }
  return best;
}

// A macro that names the entry or that defines kernels may make the entry: the PTX decides.
bool macro_may_define(const std::vector<Token>& tokens, std::string_view name) {
  return std::any_of(tokens.begin(), tokens.end(), [&](const Token& t) {
    return t.in_directive && (t.text == name || t.text == "__global__");
  });
}

std::optional<Rejection> check_entries(const LaunchPlan& plan, const std::vector<Token>& tokens) {
  for (const LaunchSpec& launch : plan.launches) {
    switch (find_entry_declaration(tokens, launch.entry)) {
      case EntryDeclaration::extern_c_global:
        break;
      case EntryDeclaration::global_not_extern_c:
        return Rejection{CandidateStatus::bad_entry_signature,
                         fmt::format("plan entry '{}' is __global__ but not extern \"C\"", launch.entry)};
      case EntryDeclaration::absent:
        if (macro_may_define(tokens, launch.entry)) break;
        return Rejection{CandidateStatus::missing_entry,
                         fmt::format("plan entry '{}' has no extern \"C\" __global__ definition",
                                     launch.entry)};
    }
  }
  return std::nullopt;
}

std::variant<LaunchPlan, Rejection> parse_plan(std::string_view source) {
  if (source.find(kPlanMarker) == std::string_view::npos) {
    return Rejection{CandidateStatus::no_plan, "no `kdispatch:plan` comment in the source"};
  }
  auto parsed = parse_plan_from_source(source);
  if (auto* error = std::get_if<PlanError>(&parsed)) {
    return Rejection{CandidateStatus::bad_plan, error->message};
  }
  LaunchPlan plan = std::get<LaunchPlan>(std::move(parsed));
  for (const LaunchSpec& launch : plan.launches) {
    if (!is_c_identifier(launch.entry)) {
      return Rejection{CandidateStatus::bad_plan,
                       fmt::format("plan entry '{}' is not a C identifier", launch.entry)};
    }
  }
  return plan;
}

}  // namespace

std::variant<LaunchPlan, Rejection> check_source(std::string_view source, const SourceLimits& limits) {
  if (source.size() > limits.max_source_bytes) {
    return Rejection{CandidateStatus::too_large,
                     fmt::format("source is {} bytes; the limit is {}", source.size(),
                                 limits.max_source_bytes)};
  }
  auto plan = parse_plan(source);
  if (std::holds_alternative<Rejection>(plan)) return plan;

  const std::string with_literals = strip_comments(source, StringLiterals::keep);
  const std::string stripped = strip_comments(source, StringLiterals::blank);
  const std::vector<Token> tokens = tokenize(stripped);
  if (auto rejection = find_host_code(tokenize(with_literals), stripped, tokens)) {
    return *std::move(rejection);
  }
  if (auto rejection = check_entries(std::get<LaunchPlan>(plan), tokens)) return *std::move(rejection);
  return plan;
}

}  // namespace kd::search
