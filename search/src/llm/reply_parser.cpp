#include "llm/reply_parser.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kd::llm {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxIdeaChars = 2000;
constexpr std::array<std::string_view, 11> kKernelLanguages = {
    "", "cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc", "c", "hpp", "h"};
constexpr std::array<const char*, 4> kIdeaFields = {"idea", "description", "title", "text"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

struct Fence {
  char mark;
  std::size_t length;
};

// A fence line: optional indentation, then 3 or more ` or ~.
std::optional<Fence> fence_of(std::string_view line) {
  line = trim(line);
  if (line.size() < 3 || (line[0] != '`' && line[0] != '~')) return std::nullopt;
  const std::size_t length = line.find_first_not_of(line[0]);
  const std::size_t run = length == std::string_view::npos ? line.size() : length;
  if (run < 3) return std::nullopt;
  return Fence{line[0], run};
}

bool is_kernel_block(const CodeBlock& block) {
  if (std::find(kKernelLanguages.begin(), kKernelLanguages.end(), block.language) ==
      kKernelLanguages.end()) {
    return false;
  }
  return block.code.find("__global__") != std::string::npos ||
         block.code.find("kdispatch:plan") != std::string::npos;
}

std::string normalized(std::string_view idea) {
  std::string out;
  bool space = false;
  for (const char c : idea) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  while (!out.empty() && (out.back() == '.' || out.back() == ';')) out.pop_back();
  return out;
}

class IdeaList {
public:
  explicit IdeaList(std::size_t max_ideas) : max_(max_ideas) {}
  void add(std::string_view idea) {
    idea = trim(idea);
    if (idea.empty() || ideas_.size() >= max_) return;
    std::string text(idea.substr(0, kMaxIdeaChars));
    if (seen_.insert(normalized(text)).second) ideas_.push_back(std::move(text));
  }
  std::vector<std::string> take() { return std::move(ideas_); }
  bool empty() const { return ideas_.empty(); }

private:
  std::size_t max_;
  std::set<std::string> seen_;
  std::vector<std::string> ideas_;
};

void add_json_element(const json& element, IdeaList& ideas) {
  if (element.is_string()) {
    ideas.add(element.get<std::string>());
    return;
  }
  if (!element.is_object()) return;
  for (const char* field : kIdeaFields) {
    const auto it = element.find(field);
    if (it != element.end() && it->is_string()) {
      ideas.add(it->get<std::string>());
      return;
    }
  }
}

bool read_json_array(std::string_view text, IdeaList& ideas) {
  const std::size_t open = text.find('[');
  const std::size_t close = text.rfind(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
  const json parsed = json::parse(text.substr(open, close - open + 1), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) return false;
  for (const json& element : parsed) add_json_element(element, ideas);
  return !ideas.empty();
}

// The complete string literals after the first '[' of a JSON array cut off mid-way.
bool salvage_json_strings(std::string_view text, IdeaList& ideas) {
  std::size_t pos = text.find('[');
  if (pos == std::string_view::npos) return false;
  while ((pos = text.find('"', pos)) != std::string_view::npos) {
    std::size_t end = pos + 1;
    while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
    if (end >= text.size()) break;  // the cut-off string
    const json literal = json::parse(text.substr(pos, end - pos + 1), nullptr, false);
    if (literal.is_string()) ideas.add(literal.get<std::string>());
    pos = end + 1;
  }
  return !ideas.empty();
}

// "1. text", "2) text", "- text", "* text", "+ text"; nullopt for other lines.
std::optional<std::string_view> list_item(std::string_view line) {
  line = trim(line);
  std::size_t i = 0;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i > 0) {
    if (i >= line.size() || (line[i] != '.' && line[i] != ')')) return std::nullopt;
    ++i;
  } else if (!line.empty() && (line[0] == '-' || line[0] == '*' || line[0] == '+')) {
    i = 1;
  } else {
    return std::nullopt;
  }
  if (i >= line.size() || !std::isspace(static_cast<unsigned char>(line[i]))) return std::nullopt;
  return trim(line.substr(i));
}

bool read_list(std::string_view text, IdeaList& ideas) {
  std::optional<std::string> current;
  for (const std::string_view line : split_lines(text)) {
    if (const auto item = list_item(line)) {
      if (current) ideas.add(*current);
      current = std::string(*item);
    } else if (current && !trim(line).empty() && !trim(line).starts_with('#')) {
      *current += ' ';
      *current += trim(line);  // a continuation line of the item
    } else if (current) {
      ideas.add(*current);
      current.reset();
    }
  }
  if (current) ideas.add(*current);
  return !ideas.empty();
}

}  // namespace

std::vector<CodeBlock> extract_code_blocks(std::string_view text) {
  std::vector<CodeBlock> blocks;
  std::optional<Fence> open;
  CodeBlock block;
  for (const std::string_view line : split_lines(text)) {
    if (!open) {
      if (auto fence = fence_of(line)) {
        open = fence;
        const std::string_view info = trim(trim(line).substr(fence->length));
        block = CodeBlock{lower(info.substr(0, info.find_first_of(" \t{"))), {}, true};
      }
      continue;
    }
    const auto fence = fence_of(line);
    if (fence && fence->mark == open->mark && fence->length >= open->length &&
        trim(line).size() == fence->length) {
      blocks.push_back(std::move(block));
      open.reset();
      continue;
    }
    // A closing fence glued to the last line of code: "}```".
    const std::string closing(open->length, open->mark);
    const std::string_view trimmed = trim(line);
    if (trimmed.size() > closing.size() && trimmed.ends_with(closing)) {
      block.code.append(trimmed.substr(0, trimmed.size() - closing.size()));
      block.code += '\n';
      blocks.push_back(std::move(block));
      open.reset();
      continue;
    }
    block.code.append(line);
    block.code += '\n';
  }
  if (open) {
    block.closed = false;
    blocks.push_back(std::move(block));
  }
  return blocks;
}

std::variant<std::vector<KernelText>, ParseFailure> extract_kernels(std::string_view text,
                                                                   FinishReason finish) {
  const bool cut = finish == FinishReason::length;
  const std::vector<CodeBlock> blocks = extract_code_blocks(text);
  std::vector<KernelText> kernels;
  std::set<std::string> seen;
  for (const CodeBlock& block : blocks) {
    if (!is_kernel_block(block)) continue;
    // An unclosed last block is whole unless max_tokens cut it: models do forget closing fences.
    const bool complete = block.closed || !cut;
    if (seen.insert(block.code).second) kernels.push_back(KernelText{block.code, complete});
  }
  if (blocks.empty() && text.find("__global__") != std::string_view::npos) {
    kernels.push_back(KernelText{std::string(text), !cut});
  }
  if (!kernels.empty()) return kernels;
  if (cut) {
    return ParseFailure{ReplyFate::truncated,
                        fmt::format("reply cut at max_tokens after {} characters, before any "
                                    "complete kernel",
                                    text.size())};
  }
  if (blocks.empty()) {
    return ParseFailure{ReplyFate::no_code,
                        fmt::format("reply is prose with no code block ({} characters)", text.size())};
  }
  return ParseFailure{ReplyFate::no_code,
                      fmt::format("reply has {} code block(s) but none holds a __global__ kernel "
                                  "or a kdispatch:plan",
                                  blocks.size())};
}

std::variant<std::vector<std::string>, ParseFailure> parse_ideas(std::string_view text,
                                                                FinishReason finish,
                                                                std::size_t max_ideas) {
  IdeaList ideas(max_ideas);
  for (const CodeBlock& block : extract_code_blocks(text)) {
    if (read_json_array(block.code, ideas)) return ideas.take();
  }
  if (read_json_array(text, ideas)) return ideas.take();
  if (finish == FinishReason::length && salvage_json_strings(text, ideas)) return ideas.take();
  if (read_list(text, ideas)) return ideas.take();
  if (finish == FinishReason::length) {
    return ParseFailure{ReplyFate::truncated,
                        fmt::format("ideas reply cut at max_tokens after {} characters, before "
                                    "any complete idea",
                                    text.size())};
  }
  return ParseFailure{ReplyFate::no_ideas,
                      "ideas reply is neither a JSON array of strings nor a numbered list"};
}

}  // namespace kd::llm
