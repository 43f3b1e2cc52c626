// Turning a model's reply text into ideas or kernel sources, robustly: fenced blocks in any
// number, a missing language tag, a missing closing fence, a reply cut at max_tokens, prose with
// no code, a JSON array or a numbered list of ideas. Every failure carries a ReplyFate and a
// one-line reason. Pure functions over text; nothing here throws for a bad reply.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "llm/chat_api.hpp"
#include "llm/reply_fate.hpp"

namespace kd::llm {

struct CodeBlock {
  std::string language;  // the fence's info word, lower case ("cuda", "cpp", "" when none)
  std::string code;
  bool closed = true;    // false: the text ended inside the block
};

// Every ``` or ~~~ fenced block, in order.
std::vector<CodeBlock> extract_code_blocks(std::string_view text);

struct KernelText {
  std::string source;
  bool complete = true;  // false: cut off by max_tokens inside its block
};

struct ParseFailure {
  ReplyFate fate;       // no_code, truncated or no_ideas
  std::string message;  // e.g. "reply has 2 code blocks but none holds a __global__ kernel"
};

// The kernel sources of an implementation reply, in order, duplicates dropped. A block counts as a
// kernel when it holds `__global__` or `kdispatch:plan` in a C/C++/CUDA fence (or a bare one);
// other blocks (a JSON plan shown alone, a shell command, a fragment) are ignored. A reply with no
// fences at all that holds `__global__` is taken whole. Failures: truncated (cut at max_tokens
// before any kernel), no_code.
std::variant<std::vector<KernelText>, ParseFailure> extract_kernels(std::string_view text,
                                                                   FinishReason finish);

// At most `max_ideas` distinct ideas (case and spacing ignored), each trimmed to one paragraph of
// at most 2000 characters. Read as a JSON array of strings (or of objects with an "idea",
// "description", "title" or "text" string) inside a fence or bare; else as a numbered or bulleted
// list. A JSON array cut at max_tokens gives the strings that were complete. Failures: no_ideas,
// truncated (cut before any idea).
std::variant<std::vector<std::string>, ParseFailure> parse_ideas(std::string_view text,
                                                                FinishReason finish,
                                                                std::size_t max_ideas);

}  // namespace kd::llm
