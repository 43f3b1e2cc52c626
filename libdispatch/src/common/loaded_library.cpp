#include "common/loaded_library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace kd {

void* open_library(const char* soname, std::string_view what, std::string& reason) {
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    reason = fmt::format("no {}: cannot load {} ({})", what, soname, err ? err : "unknown");
  }
  return lib;
}

void* library_symbol(void* lib, const char* symbol, std::string_view what, const char* soname,
                     std::string& reason) {
  void* address = dlsym(lib, symbol);
  if (address == nullptr) reason = fmt::format("{} too old: {} lacks {}", what, soname, symbol);
  return address;
}

}  // namespace kd
