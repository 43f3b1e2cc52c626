#include "cublaslt/library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace kd {
namespace {

constexpr const char* kLibraryName = "libcublasLt.so.13";

struct LibraryState {
  CublasLtLibrary table;
  bool ok = false;
  std::string reason;
};

LibraryState load_library() {
  LibraryState s;
  // RTLD_NOLOAD first: an application (or the worker) usually has it loaded already.
  void* lib = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    s.reason = fmt::format("no cuBLASLt: cannot load {} ({})", kLibraryName, err ? err : "unknown");
    return s;
  }
#define KD_LT_RESOLVE(fn)                                                              \
  s.table.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, KD_STRINGIFY(fn)));          \
  if (s.table.fn == nullptr) {                                                         \
    s.reason = fmt::format("cuBLASLt too old: {} lacks {}", kLibraryName, KD_STRINGIFY(fn)); \
    return s;                                                                          \
  }
  KD_LT_FUNCTIONS(KD_LT_RESOLVE)
#undef KD_LT_RESOLVE
  s.table.version = s.table.cublasLtGetVersion();
  s.ok = true;
  return s;
}

const LibraryState& state() {
  static const LibraryState s = load_library();
  return s;
}

}  // namespace

const CublasLtLibrary* cublaslt_library() noexcept {
  try {
    const LibraryState& s = state();
    return s.ok ? &s.table : nullptr;
  } catch (...) {
    return nullptr;
  }
}

std::string cublaslt_unavailable_reason() {
  const LibraryState& s = state();
  return s.ok ? std::string() : s.reason;
}

const CublasLtLibrary& loaded_cublaslt() {
  const LibraryState& s = state();
  if (!s.ok) throw Error(ErrorDomain::cuda, 0, s.reason);
  return s.table;
}

std::string cublaslt_status_text(cublasStatus_t status) {
  const CublasLtLibrary* lt = cublaslt_library();
  if (lt == nullptr) return fmt::format("cublasStatus_t {}", static_cast<int>(status));
  return fmt::format("{}: {}", lt->cublasLtGetStatusName(status), lt->cublasLtGetStatusString(status));
}

void throw_cublaslt_error(cublasStatus_t status, std::string_view call, std::string_view object,
                          std::string_view where) {
  throw Error(ErrorDomain::cuda, static_cast<int>(status),
              fmt::format("{} failed on {}: {} ({})", call, object, cublaslt_status_text(status), where));
}

}  // namespace kd
