// Finding the real cuBLAS / cuBLASLt functions behind the shim's own definitions.
//
// Two ways, in this order, per symbol:
//   1. dlvsym(RTLD_NEXT, name, version): the library is in the global scope (the application links
//      it, or dlopens it RTLD_GLOBAL).
//   2. dlopen(soname, RTLD_NOLOAD) and dlvsym on that handle: the library was loaded RTLD_LOCAL
//      (PyTorch loads libtorch_cuda.so, and with it cuBLAS, that way), so RTLD_NEXT cannot see it,
//      yet the application's calls still bind to the preloaded shim first.
// A plain dlsym follows each dlvsym, for a library without version nodes. A result that lies in
// the shim itself is rejected (it would recurse forever).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace kd::shim {

enum class RealLibrary : std::uint8_t { cublas = 0, cublaslt = 1 };
inline constexpr std::size_t kRealLibraryCount = 2;

// How a library's symbols were found most recently (for KD_STATS and the tests).
enum class ResolvedBy : std::uint8_t { unresolved = 0, rtld_next = 1, dlopen_noload = 2 };

struct RealLibraryInfo {
  RealLibrary library;
  const char* soname;   // what dlopen(RTLD_NOLOAD) asks for
  const char* version;  // the version node of its symbols (objdump -T)
};
inline constexpr std::array<RealLibraryInfo, kRealLibraryCount> kRealLibraries{{
    {RealLibrary::cublas, "libcublas.so.13", "libcublas.so.13"},
    {RealLibrary::cublaslt, "libcublasLt.so.13", "libcublasLt.so.13"},
}};

std::string_view to_string(ResolvedBy how) noexcept;
std::string_view to_string(RealLibrary library) noexcept;

// The real definition of `name`, or nullptr when the library is not loaded in this process.
// Thread-safe; never throws; may call dlopen(RTLD_NOLOAD), which loads nothing.
void* resolve_real(RealLibrary library, const char* name) noexcept;

ResolvedBy resolved_by(RealLibrary library) noexcept;

// One real function, resolved on first use and cached. Constant-initialized, so it is usable from
// any constructor or destructor order. A null result is not cached: the library may load later.
template <class Fn>
class RealFunction {
public:
  constexpr RealFunction(RealLibrary library, const char* name) noexcept
      : library_(library), name_(name) {}

  // nullptr when the real library is not loaded.
  Fn get() noexcept {
    void* p = ptr_.load(std::memory_order_acquire);
    if (p == nullptr) {
      p = resolve_real(library_, name_);
      if (p != nullptr) ptr_.store(p, std::memory_order_release);
    }
    return reinterpret_cast<Fn>(p);
  }
  const char* name() const noexcept { return name_; }

private:
  RealLibrary library_;
  const char* name_;
  std::atomic<void*> ptr_{nullptr};
};

}  // namespace kd::shim
