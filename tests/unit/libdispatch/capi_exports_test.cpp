// libkdispatch.so exports its C API and nothing else (libdispatch/kdispatch.map): every function
// kdispatch.h declares with KD_API, and no other symbol, in particular none of the C++ standard
// library's template instantiations, which a process loading the library could otherwise bind its
// own copies to. Read from the built library's dynamic symbol table (nm -D --defined-only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/text_file.hpp"

namespace {

// Names the header declares with KD_API (a line that starts with it): the last identifier before
// the parameter list.
std::vector<std::string> declared_functions(const std::string& header) {
  std::vector<std::string> names;
  const std::regex decl(R"(^KD_API\s[^(]*?(\w+)\s*\()");
  std::istringstream in(header);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, decl)) names.push_back(m[1].str());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Defined dynamic symbols of `library`, version suffixes stripped ("kd_init@@V" -> "kd_init");
// ok is false when nm could not run.
std::vector<std::string> exported_symbols(const char* library, bool& ok) {
  const std::string cmd = std::string("nm -D --defined-only '") + library + "' 2>/dev/null";
  std::vector<std::string> names;
  FILE* p = popen(cmd.c_str(), "r");
  ok = p != nullptr;
  if (p == nullptr) return names;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    std::istringstream line(buf);
    std::vector<std::string> f;
    for (std::string w; line >> w;) f.push_back(w);
    if (f.empty()) continue;
    std::string name = f.back();
    name = name.substr(0, name.find('@'));
    names.push_back(name);
  }
  ok = pclose(p) == 0;
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CApiExports, OnlyTheFunctionsKdispatchHDeclares) {
  const std::vector<std::string> declared = declared_functions(kd::test::read_text(KD_HEADER_PATH));
  ASSERT_GE(declared.size(), 10u) << "the header's KD_API declarations were not found";
  bool ok = false;
  const std::vector<std::string> exported = exported_symbols(KD_LIBKDISPATCH_PATH, ok);
  if (!ok) GTEST_SKIP() << "nm not available";
  EXPECT_EQ(exported, declared);
}

}  // namespace
