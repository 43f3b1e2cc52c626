// The versioned prompts of the LLM proposer (search/prompts/<name>.v<N>.md, compiled in) and
// their rendering. A prompt file is markdown with {{placeholders}}; HTML comments are dropped; the
// line `<!-- user -->` separates the system message (before) from the user message (after).
// A prompt's name (e.g. "ideas.v1") is recorded with every reply, so a changed prompt gets a new
// version and a new file rather than an edit.
//
// Each step has one file per operator class, which it describes in its own terms (contract header,
// semantics, the gate's rules, the roofline): GEMM's `<step>.v<N>.md` and the row operators'
// `<step>.row.v<N>.md` (issue 33). The proposer picks the file by ProposerContext::op and
// otherwise runs one path for both.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace kd::llm {

enum class PromptId : std::uint8_t { ideas, implement, repair };

// The operator class a prompt file is written for.
enum class PromptOperator : std::uint8_t {
  gemm,  // <kdispatch/gemm.cuh>, cuBLAS semantics, the vendor library as baseline
  row,   // <kdispatch/rowop.cuh>: rmsnorm, layernorm, softmax; the framework's kernel as baseline
};

struct PromptFile {
  PromptId id;
  PromptOperator op;
  std::string_view name;       // "ideas.v1", "ideas.row.v1": stored with each reply
  std::string_view file_name;  // "ideas.v1.md" under search/prompts/
  std::string_view text;       // the file's exact contents
};

// Every prompt in use, for `kdctl show prompts`.
std::span<const PromptFile> prompt_files();
// The file of step `id` for operator class `op`. Every (id, op) pair has one.
const PromptFile& prompt_file(PromptId id, PromptOperator op);

using PromptVars = std::map<std::string, std::string, std::less<>>;

struct RenderedPrompt {
  std::string_view name;  // the prompt's versioned name
  std::string system;
  std::string user;
};

// `text` with each {{name}} replaced by vars[name]. Values are inserted verbatim and not scanned
// again, so a kernel source holding "{{" stays as it is. Throws kd::Error (usage) naming the first
// placeholder with no value: that is a bug in the caller, not a bad reply.
std::string render_template(std::string_view text, const PromptVars& vars);

// prompt_file(id, op) split into system and user messages, comments dropped, placeholders filled.
// Throws as render_template.
RenderedPrompt render_prompt(PromptId id, PromptOperator op, const PromptVars& vars);

}  // namespace kd::llm
