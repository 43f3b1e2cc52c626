#include "unit_file.hpp"

#include <fstream>
#include <stdexcept>

namespace kd::test {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

UnitFile::UnitFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::string section;
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    const std::string line = trim(raw);
    const auto where = path.string() + ":" + std::to_string(number);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.back() == '\\') throw std::runtime_error(where + ": line continuations are not read");
    if (line.front() == '[') {
      if (line.back() != ']') throw std::runtime_error(where + ": bad section header");
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos || section.empty())
      throw std::runtime_error(where + ": expected Key=value inside a section");
    entries_.push_back({section, {trim(line.substr(0, eq)), trim(line.substr(eq + 1))}});
  }
}

std::optional<std::string> UnitFile::get(const std::string& section, const std::string& key) const {
  const auto values = all(section, key);
  if (values.empty()) return std::nullopt;
  return values.back();
}

std::vector<std::string> UnitFile::all(const std::string& section, const std::string& key) const {
  std::vector<std::string> out;
  for (const auto& [s, kv] : entries_)
    if (s == section && kv.first == key) out.push_back(kv.second);
  return out;
}

std::string expand_specifiers(const std::string& text, const std::map<char, std::string>& roots) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 1 == text.size()) throw std::runtime_error("a lone % ends '" + text + "'");
    const char spec = text[++i];
    if (spec == '%') {
      out += '%';
    } else if (const auto it = roots.find(spec); it != roots.end()) {
      out += it->second;
    } else {
      throw std::runtime_error(std::string("specifier %") + spec + " in '" + text +
                               "' is not reproduced by this test");
    }
  }
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (quote != 0) {
      if (ch == quote) quote = 0;
      else word += ch;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (quote != 0) throw std::runtime_error("unterminated quote in '" + text + "'");
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace kd::test
