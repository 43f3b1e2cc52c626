// What the LLM proposer is told about the problem and the search so far. The search fills it; it
// holds plain values only, so the search's own classes stay out of this component.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "llm/prompts.hpp"

namespace kd::llm {

struct GpuDescription {
  std::string arch;                  // "sm_90"
  int sms = 0;                       // streaming multiprocessors
  double bandwidth_gb_per_s = 0.0;   // measured device bandwidth
  double peak_tflop_per_s = 0.0;     // for the key's precision class
};

// One node of the search tree as the model sees it.
struct TreeEntry {
  std::string idea;                     // the idea text ("seed: ..." for a seed)
  std::string verdict;                  // a ReplyFate, CandidateStatus or evaluator verdict name
  std::optional<double> time_us;        // measured median, when it ran
  std::string compile_error_excerpt;    // empty unless it failed to compile or check
  // Why the validation gate rejected it ("trial 5 (mean 1000, std 0.1): max_rel ..."): empty unless
  // it ran and was rejected. The model learns what broke, not only that something did.
  std::string gate_detail{};  // (a default, so entries written before it need not name it)
};

struct ProposerContext {
  PromptOperator op = PromptOperator::gemm;  // which prompt files the proposer renders
  std::string semantics;        // the operator's semantics in prose (e.g. cuBLAS GEMM rules)
  std::string key_line;         // the exact canonical key line
  GpuDescription gpu;
  // The operator's contract header verbatim (libdispatch/include/kdispatch/gemm.cuh or rowop.cuh),
  // then grid_dependency.cuh, which it includes.
  std::string contract;
  double roofline_floor_us = 0.0;
  std::optional<double> baseline_time_us;  // the baseline's time, when measured
  // Who the baseline is, as a sentence's subject: "The vendor library" (GEMM: the intercepted
  // cuBLAS call), or the framework's kernel for a row operator.
  std::string baseline_name = "The vendor library";
  // Placeholders only this operator class's prompt files use (the row prompts' rows, cols, dtype,
  // ...: llm/operator_context.hpp); every prompt's own placeholders take precedence.
  PromptVars operator_vars;
  std::vector<TreeEntry> tree;  // oldest first
};

// How much of the tree goes into a prompt: the newest entries, each shortened, so that a long
// search does not outgrow the model's context.
struct TreeLimits {
  std::size_t max_entries = 60;
  std::size_t max_idea_chars = 400;
  std::size_t max_error_chars = 600;
};

// The tree as markdown lines: "1. [verdict, 12.3 us] idea" plus an indented compile error excerpt.
std::string render_tree(const ProposerContext& context, const TreeLimits& limits = {});

// The placeholders every prompt shares: semantics, key, gpu_arch, gpu_sms,
// gpu_bandwidth_gb_per_s, gpu_peak_tflop_per_s, contract, roofline_floor_us, baseline ("<name>
// takes 12.3 us for this call", or that it is not measured yet), tree; then context.operator_vars.
PromptVars context_vars(const ProposerContext& context, const TreeLimits& limits = {});

}  // namespace kd::llm
