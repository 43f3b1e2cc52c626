#include "builtin/embedded_kernels.hpp"

#include <map>
#include <mutex>
#include <string>

namespace kd::builtin {
namespace {

std::string expand(std::string_view text, int depth) {
  constexpr std::string_view kInclude = "#include \"";
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(at, eol - at);
    std::string_view inner;
    if (depth < 4 && line.size() > kInclude.size() + 1 && line.rfind(kInclude, 0) == 0 && line.back() == '"') {
      inner = embedded_kernel_file(line.substr(kInclude.size(), line.size() - kInclude.size() - 1));
    }
    if (!inner.empty()) {
      out += expand(inner, depth + 1);
      if (!out.empty() && out.back() != '\n') out += '\n';
    } else {
      out += line;
      if (eol < text.size()) out += '\n';
    }
    at = eol + 1;
  }
  return out;
}

}  // namespace

std::string_view embedded_kernel(std::string_view file) {
  static std::mutex mu;
  static std::map<std::string, std::string, std::less<>> expanded;
  const std::lock_guard<std::mutex> lock(mu);
  if (const auto it = expanded.find(file); it != expanded.end()) return it->second;
  const std::string_view raw = embedded_kernel_file(file);
  if (raw.empty()) return {};
  return expanded.emplace(std::string(file), expand(raw, 0)).first->second;
}

}  // namespace kd::builtin
