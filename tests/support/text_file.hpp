// Whole files as strings, for tests.
#pragma once

#include <filesystem>
#include <string>

namespace kd::test {

// The file's bytes; empty when it cannot be read (a test then fails on what it expected there).
std::string read_text(const std::filesystem::path& file);
// Replaces the file's content; throws std::runtime_error when it cannot be written.
void write_text(const std::filesystem::path& file, const std::string& text);

}  // namespace kd::test
