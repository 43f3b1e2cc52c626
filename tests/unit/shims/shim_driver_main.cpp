// shim_driver_linked / shim_driver_dlopen <scenario> [libshim_scenarios.so]: runs one scenario
// of shim_scenarios.cpp. The linked build calls it directly (cuBLAS is in the global scope, so the
// shim finds it with RTLD_NEXT); the dlopen build loads the scenarios library RTLD_LOCAL, so its
// stand-in cuBLAS is invisible to RTLD_NEXT and the shim must use dlopen(RTLD_NOLOAD).
#include <dlfcn.h>

#include <cstdio>

#ifdef KD_DRIVER_LINKED
extern "C" int kd_shim_scenario(const char* name);
#endif

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <scenario> [libshim_scenarios.so]\n", argv[0]);
    return 2;
  }
#ifdef KD_DRIVER_LINKED
  return kd_shim_scenario(argv[1]);
#else
  if (argc < 3) return 2;
  void* lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  using Scenario = int (*)(const char*);
  const auto run = reinterpret_cast<Scenario>(dlsym(lib, "kd_shim_scenario"));
  if (run == nullptr) return 4;
  return run(argv[1]);
#endif
}
