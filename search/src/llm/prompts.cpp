#include "llm/prompts.hpp"

#include <array>

#include "common/error.hpp"
#include "llm/embedded_prompts.hpp"

namespace kd::llm {
namespace {

constexpr std::string_view kUserMarker = "<!-- user -->";

const std::array<PromptFile, 6>& files() {
  static const std::array<PromptFile, 6> table = {{
      {PromptId::ideas, PromptOperator::gemm, "ideas.v1", "ideas.v1.md", embedded::kIdeasV1},
      {PromptId::implement, PromptOperator::gemm, "implement.v1", "implement.v1.md", embedded::kImplementV1},
      {PromptId::repair, PromptOperator::gemm, "repair.v1", "repair.v1.md", embedded::kRepairV1},
      {PromptId::ideas, PromptOperator::row, "ideas.row.v1", "ideas.row.v1.md", embedded::kIdeasRowV1},
      {PromptId::implement, PromptOperator::row, "implement.row.v1", "implement.row.v1.md", embedded::kImplementRowV1},
      {PromptId::repair, PromptOperator::row, "repair.row.v1", "repair.row.v1.md", embedded::kRepairRowV1},
  }};
  return table;
}

std::string without_comments(std::string_view text) {
  std::string out;
  for (;;) {
    const std::size_t open = text.find("<!--");
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find("-->", open);
    if (close == std::string_view::npos) break;
    out.append(text.substr(0, open));
    text.remove_prefix(close + 3);
    if (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  }
  out.append(text);
  const std::size_t first = out.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const std::size_t last = out.find_last_not_of(" \t\r\n");
  return out.substr(first, last - first + 1);
}

}  // namespace

std::span<const PromptFile> prompt_files() { return files(); }

const PromptFile& prompt_file(PromptId id, PromptOperator op) {
  for (const PromptFile& file : files()) {
    if (file.id == id && file.op == op) return file;
  }
  throw Error(ErrorDomain::usage, 0, "llm: unknown prompt id");
}

std::string render_template(std::string_view text, const PromptVars& vars) {
  std::string out;
  out.reserve(text.size());
  for (;;) {
    const std::size_t open = text.find("{{");
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    const std::string_view name = text.substr(open + 2, close - open - 2);
    const auto value = vars.find(name);
    if (value == vars.end()) {
      throw Error(ErrorDomain::usage, 0,
                  "llm prompt: no value for placeholder {{" + std::string(name) + "}}");
    }
    out.append(text.substr(0, open));
    out.append(value->second);
    text.remove_prefix(close + 2);
  }
  out.append(text);
  return out;
}

RenderedPrompt render_prompt(PromptId id, PromptOperator op, const PromptVars& vars) {
  const PromptFile& file = prompt_file(id, op);
  const std::size_t marker = file.text.find(kUserMarker);
  if (marker == std::string_view::npos) {
    throw Error(ErrorDomain::data, 0,
                "llm prompt " + std::string(file.file_name) + ": no `<!-- user -->` line");
  }
  const std::string system = without_comments(file.text.substr(0, marker));
  const std::string user = without_comments(file.text.substr(marker + kUserMarker.size()));
  return RenderedPrompt{file.name, render_template(system, vars), render_template(user, vars)};
}

}  // namespace kd::llm
