#include "real_library.hpp"

#include <dlfcn.h>

namespace kd::shim {
namespace {

std::array<std::atomic<ResolvedBy>, kRealLibraryCount> g_resolved_by{};

// Any function of the shim: its dladdr base identifies the shim's own mapping.
void shim_anchor() noexcept {}

bool lies_in_shim(void* p) noexcept {
  Dl_info mine{};
  Dl_info theirs{};
  if (dladdr(reinterpret_cast<void*>(&shim_anchor), &mine) == 0) return false;
  if (dladdr(p, &theirs) == 0) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

void* lookup_in(void* handle, const RealLibraryInfo& lib, const char* name) noexcept {
  void* p = dlvsym(handle, name, lib.version);
  if (p == nullptr) p = dlsym(handle, name);
  if (p != nullptr && lies_in_shim(p)) return nullptr;
  return p;
}

}  // namespace

std::string_view to_string(ResolvedBy how) noexcept {
  switch (how) {
    case ResolvedBy::rtld_next: return "rtld_next";
    case ResolvedBy::dlopen_noload: return "dlopen_noload";
    case ResolvedBy::unresolved: break;
  }
  return "unresolved";
}

std::string_view to_string(RealLibrary library) noexcept {
  return kRealLibraries[static_cast<std::size_t>(library)].soname;
}

void* resolve_real(RealLibrary library, const char* name) noexcept {
  const RealLibraryInfo& lib = kRealLibraries[static_cast<std::size_t>(library)];
  auto& how = g_resolved_by[static_cast<std::size_t>(library)];
  if (void* p = lookup_in(RTLD_NEXT, lib, name)) {
    how.store(ResolvedBy::rtld_next, std::memory_order_relaxed);
    return p;
  }
  // The handle is kept for the life of the process: the cached function pointers point into it.
  void* handle = dlopen(lib.soname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* p = lookup_in(handle, lib, name);
  if (p == nullptr) {
    dlclose(handle);
    return nullptr;
  }
  how.store(ResolvedBy::dlopen_noload, std::memory_order_relaxed);
  return p;
}

ResolvedBy resolved_by(RealLibrary library) noexcept {
  return g_resolved_by[static_cast<std::size_t>(library)].load(std::memory_order_relaxed);
}

}  // namespace kd::shim
