#include "llm/proposer_context.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kd::llm {
namespace {

// One line of at most `max_chars` characters: newlines become spaces.
std::string one_line(std::string_view text, std::size_t max_chars) {
  std::string out(text.substr(0, max_chars));
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (text.size() > max_chars) out += " ...";
  return out;
}

std::string baseline_sentence(const ProposerContext& context) {
  return context.baseline_time_us
             ? fmt::format("{} takes {:.1f} us for this call", context.baseline_name, *context.baseline_time_us)
             : fmt::format("{} (not measured yet: the first round measures it)", context.baseline_name);
}

}  // namespace

std::string render_tree(const ProposerContext& context, const TreeLimits& limits) {
  const auto& tree = context.tree;
  if (tree.empty()) return "Nothing yet: this is the first round.";
  std::string out;
  const std::size_t first = tree.size() > limits.max_entries ? tree.size() - limits.max_entries : 0;
  if (first > 0) out += fmt::format("({} older entries not shown)\n", first);
  for (std::size_t i = first; i < tree.size(); ++i) {
    const TreeEntry& entry = tree[i];
    const std::string time =
        entry.time_us ? fmt::format(", {:.1f} us", *entry.time_us) : std::string();
    out += fmt::format("{}. [{}{}] {}\n", i + 1, entry.verdict.empty() ? "pending" : entry.verdict,
                       time, one_line(entry.idea, limits.max_idea_chars));
    if (!entry.compile_error_excerpt.empty()) {
      out += fmt::format("   error: {}\n",
                         one_line(entry.compile_error_excerpt, limits.max_error_chars));
    }
    if (!entry.gate_detail.empty()) {
      out += fmt::format("   gate: {}\n", one_line(entry.gate_detail, limits.max_error_chars));
    }
  }
  if (context.baseline_time_us) out += fmt::format("\n{}.", baseline_sentence(context));
  return out;
}

PromptVars context_vars(const ProposerContext& context, const TreeLimits& limits) {
  PromptVars vars{
      {"semantics", context.semantics},
      {"key", context.key_line},
      {"gpu_arch", context.gpu.arch},
      {"gpu_sms", std::to_string(context.gpu.sms)},
      {"gpu_bandwidth_gb_per_s", fmt::format("{:.0f}", context.gpu.bandwidth_gb_per_s)},
      {"gpu_peak_tflop_per_s", fmt::format("{:.1f}", context.gpu.peak_tflop_per_s)},
      {"contract", context.contract},
      {"roofline_floor_us", fmt::format("{:.2f}", context.roofline_floor_us)},
      {"baseline", baseline_sentence(context)},
      {"tree", render_tree(context, limits)},
  };
  vars.insert(context.operator_vars.begin(), context.operator_vars.end());
  return vars;
}

}  // namespace kd::llm
