// The prompt files of search/prompts/, compiled into the library so that an installed daemon needs
// no data directory. tests/unit/search/llm/prompts_test.cpp fails when a copy differs from its file.
#pragma once

#include <string_view>

namespace kd::llm::embedded {

extern const std::string_view kIdeasV1;      // search/prompts/ideas.v1.md
extern const std::string_view kImplementV1;  // search/prompts/implement.v1.md
extern const std::string_view kRepairV1;     // search/prompts/repair.v1.md
extern const std::string_view kIdeasRowV1;      // search/prompts/ideas.row.v1.md
extern const std::string_view kImplementRowV1;  // search/prompts/implement.row.v1.md
extern const std::string_view kRepairRowV1;     // search/prompts/repair.row.v1.md

}  // namespace kd::llm::embedded
