// The versioned prompts of the LLM proposer (search/prompts/<name>.v<N>.md, compiled in) and
// their rendering. A prompt file is markdown with {{placeholders}}; HTML comments are dropped; the
// line `<!-- user -->` separates the system message (before) from the user message (after).
// A prompt's name (e.g. "ideas.v1") is recorded with every reply, so a changed prompt gets a new
// version and a new file rather than an edit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace kd::llm {

enum class PromptId : std::uint8_t { ideas, implement, repair };

struct PromptFile {
  PromptId id;
  std::string_view name;       // "ideas.v1": stored with each reply
  std::string_view file_name;  // "ideas.v1.md" under search/prompts/
  std::string_view text;       // the file's exact contents
};

// Every prompt in use, for `kdctl show prompts`.
std::span<const PromptFile> prompt_files();
const PromptFile& prompt_file(PromptId id);

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

// The prompt split into system and user messages, comments dropped, placeholders filled.
// Throws as render_template.
RenderedPrompt render_prompt(PromptId id, const PromptVars& vars);

}  // namespace kd::llm
