#include "support/text_file.hpp"

#include <fstream>
#include <stdexcept>

namespace kd::test {

// One read of the whole file: a character iterator costs about 100 ns a byte in an -O0 build
// (KD_TESTS_O0), and the cache tests read whole data.mdb files.
std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  std::string text(static_cast<std::size_t>(size > 0 ? size : 0), '\0');
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

}  // namespace kd::test
