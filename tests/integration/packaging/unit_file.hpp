// Reads a systemd unit file as systemd does for the settings the deployment test uses: sections,
// `Key=value` assignments in order (a key may repeat), comments (# and ;), specifiers (%C, %t, %%)
// and the quoting of ExecStart= and Environment=. Anything it does not understand (a line
// continuation, an ExecStart prefix such as `-` or `+`, another specifier) throws, so a unit
// changed beyond what the test can reproduce fails the test instead of being run differently.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kd::test {

class UnitFile {
public:
  // Throws std::runtime_error when the file cannot be read or has a line it does not understand.
  explicit UnitFile(const std::filesystem::path& path);

  // The last value of `key` in `section` (systemd's rule for single-valued settings).
  std::optional<std::string> get(const std::string& section, const std::string& key) const;
  // Every value of `key` in `section`, in file order.
  std::vector<std::string> all(const std::string& section, const std::string& key) const;

private:
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> entries_;  // section, key, value
};

// Replaces %C (cache root), %t (runtime root) and %% in `text`; throws on any other specifier.
std::string expand_specifiers(const std::string& text, const std::map<char, std::string>& roots);

// Splits a command line or an Environment= value into words: blanks separate, "double" and
// 'single' quotes group, backslash escapes the next character. Throws on an unterminated quote.
std::vector<std::string> split_words(const std::string& text);

}  // namespace kd::test
