#include "support/temp_dir.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>

namespace kd::test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kdtest-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

}  // namespace kd::test
