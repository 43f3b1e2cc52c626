#include "cublaslt/library.hpp"

#include <fmt/format.h>

#include "common/loaded_library.hpp"

namespace kd {
namespace {

constexpr const char* kLibraryName = "libcublasLt.so.13";

using LibraryState = LoadedLibrary<CublasLtLibrary>;

LibraryState load_library() {
  LibraryState s;
  void* lib = open_library(kLibraryName, "cuBLASLt", s.reason);  // usually loaded already (application, worker)
  if (lib == nullptr) return s;
#define KD_LT_RESOLVE(fn)                                                                                   \
  s.table.fn = reinterpret_cast<decltype(&::fn)>(library_symbol(lib, KD_STRINGIFY(fn), "cuBLASLt", kLibraryName, \
                                                                s.reason));                                 \
  if (s.table.fn == nullptr) return s;
  KD_LT_FUNCTIONS(KD_LT_RESOLVE)
#undef KD_LT_RESOLVE
  s.table.version = s.table.cublasLtGetVersion();
  s.ok = true;
  return s;
}

const LibraryState& state() { return loaded_once<load_library>(); }

}  // namespace

const CublasLtLibrary* cublaslt_library() noexcept { return usable_once<load_library>(); }

std::string cublaslt_unavailable_reason() { return state().unavailable_reason(); }

const CublasLtLibrary& loaded_cublaslt() { return state().require(); }

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
