// A table of functions resolved from a shared library once per process (dlopen, then dlsym for
// each), or why it cannot be used: cuda/driver.cpp keeps one for libcuda, cublaslt/library.cpp one
// for libcublasLt, each in a function-local static.
#pragma once

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kd {

template <class Table>
struct LoadedLibrary {
  Table table;
  bool ok = false;
  std::string reason;  // why the table cannot be used, when not ok

  const Table* usable() const noexcept { return ok ? &table : nullptr; }
  std::string unavailable_reason() const { return ok ? std::string() : reason; }
  // Throws Error (ErrorDomain::cuda) with `reason` when the table cannot be used.
  const Table& require() const {
    if (!ok) throw Error(ErrorDomain::cuda, 0, reason);
    return table;
  }
};

// What `Load` (a function returning a LoadedLibrary) returned on the first call, made once per
// process.
template <auto Load>
const auto& loaded_once() {
  static const auto state = Load();
  return state;
}

// loaded_once<Load>().usable(), and nullptr also where loading threw. Never throws.
template <auto Load>
auto usable_once() noexcept -> decltype(loaded_once<Load>().usable()) {
  try {
    return loaded_once<Load>().usable();
  } catch (...) {
    return nullptr;
  }
}

// `soname` as this process has it loaded already (RTLD_NOLOAD first: inside an application it
// normally is), else loaded now (RTLD_NOW | RTLD_LOCAL). nullptr when it cannot be loaded, with
// `reason` "no <what>: cannot load <soname> (<dlerror's text>)".
void* open_library(const char* soname, std::string_view what, std::string& reason);

// The address of `symbol` in `lib` (from open_library). nullptr when the library lacks it, with
// `reason` "<what> too old: <soname> lacks <symbol>".
void* library_symbol(void* lib, const char* symbol, std::string_view what, const char* soname,
                     std::string& reason);

}  // namespace kd
