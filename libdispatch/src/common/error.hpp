// Error types and the one family of check macros for CUDA driver, LMDB and POSIX calls
// (KD_NVRTC_CHECK, in the same form, lives with the compiler in search/: the application side never
// loads NVRTC).
//
// Inside the project, failures of external calls throw kd::Error. Its what() is the message for
// users: the object acted on (a path, a key, a kernel name), the failing function's name and the
// problem in words, never source text or source paths. The call's source text and file:line go to
// detail(), for debug logs. Only the C API (capi.cpp) and the cuBLAS shim entry points catch:
// nothing thrown crosses an extern "C" function.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kd {

enum class ErrorDomain { cuda, nvrtc, lmdb, system, usage, data };

class Error : public std::runtime_error {
public:
  Error(ErrorDomain domain, int code, const std::string& what, std::string detail = {})
      : std::runtime_error(what), domain_(domain), code_(code), detail_(std::move(detail)) {}
  ErrorDomain domain() const noexcept { return domain_; }
  // The library's own return code (CUresult, nvrtcResult, LMDB rc, errno); 0 when not applicable.
  int code() const noexcept { return code_; }
  // For debug logs only: the failing call's source text and file:line ("" for errors raised by
  // hand). Never shown to users.
  const std::string& detail() const noexcept { return detail_; }

private:
  ErrorDomain domain_;
  int code_;
  std::string detail_;
};

// The function a call's source text calls: the identifier before the parenthesis that the text's
// last ')' closes ("cu().cuModuleLoadData(&m, image)" -> "cuModuleLoadData"); empty when the text
// is not a call (a variable holding a return code).
std::string_view called_function(std::string_view call_text);

// Builders used by the macros below; `call` is the call's source text, `object` names what it
// acted on (a path, a key, a kernel name), `where` is file:line. The message reads
// "<function> failed on <object>: <problem>" (LMDB: "<object>: <problem>", with the fix where the
// code has a usual one, such as permissions or a damaged file).
[[noreturn]] void throw_cuda_error(int result, std::string_view call, std::string_view object,
                                   std::string_view where);
[[noreturn]] void throw_lmdb_error(int rc, std::string_view call, std::string_view object,
                                   std::string_view where);
[[noreturn]] void throw_system_error(int err, std::string_view call, std::string_view object,
                                     std::string_view where);
// For a family member outside libdispatch (KD_NVRTC_CHECK): `problem` is the library's own text.
[[noreturn]] void throw_call_error(ErrorDomain domain, int code, std::string_view problem,
                                   std::string_view call, std::string_view object,
                                   std::string_view where);

// An LMDB return code (or errno from LMDB) in words for users, with the usual fix where there is
// one: "permission denied (run as the cache's owner or a member of its group)".
std::string lmdb_problem(int rc);

}  // namespace kd

#define KD_STRINGIFY_IMPL(x) #x
#define KD_STRINGIFY(x) KD_STRINGIFY_IMPL(x)
#define KD_WHERE __FILE__ ":" KD_STRINGIFY(__LINE__)

// KD_CU_CHECK(call, object): `call` returns CUresult through the driver table (kd::cu()).
#define KD_CU_CHECK(call, object)                                                  \
  do {                                                                             \
    const int kd_rc_ = static_cast<int>(call);                                     \
    if (kd_rc_ != 0) ::kd::throw_cuda_error(kd_rc_, #call, (object), KD_WHERE);    \
  } while (0)

#define KD_MDB_CHECK(call, object)                                                 \
  do {                                                                             \
    const int kd_rc_ = (call);                                                     \
    if (kd_rc_ != 0) ::kd::throw_lmdb_error(kd_rc_, #call, (object), KD_WHERE);    \
  } while (0)

// For POSIX calls returning -1 and setting errno.
#define KD_SYS_CHECK(call, object)                                                 \
  do {                                                                             \
    if ((call) == -1) ::kd::throw_system_error(errno, #call, (object), KD_WHERE);  \
  } while (0)
