// Host cost of the shim's side of a hit, no GPU: an intercepted cublasGemmEx translated into what
// the shim hands to libkdispatch (the handle's stream, math mode and pointer mode read through the
// stand-in cuBLAS, the enum tables, the key checks, the scalars and the lent workspace).
// bench_registry_host measures libkdispatch's side (the description read into the call key and
// the probe); bench_registry_launch the whole hit on a GPU.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include "cublas_translate.hpp"

namespace kd::shim {
namespace {

void BM_TranslateGemmEx(benchmark::State& state) {
  // The program defines the interposed entry points itself (the shim's objects), so the linker
  // does not keep the stand-in cuBLAS as a dependency: load it the way an application would have,
  // before the shim looks for the real functions.
  if (dlopen(KD_FAKE_CUBLAS_PATH, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    state.SkipWithError("the stand-in cuBLAS did not load");
    return;
  }
  cublasHandle_t handle = nullptr;
  if (cublasCreate_v2(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("the stand-in cuBLAS did not create a handle");
    return;
  }
  cublasSetStream_v2(handle, reinterpret_cast<cudaStream_t>(0x5000));
  const float alpha = 1.0f, beta = 0.0f;
  // torch.nn.Linear(4096, 4096) on 16 tokens in bf16.
  CublasGemmArgs args{.handle = handle, .transa = CUBLAS_OP_T, .transb = CUBLAS_OP_N, .m = 4096,
                      .n = 16, .k = 4096, .alpha = &alpha, .a = reinterpret_cast<void*>(0xa000),
                      .a_type = CUDA_R_16BF, .lda = 4096, .b = reinterpret_cast<void*>(0xb000),
                      .b_type = CUDA_R_16BF, .ldb = 4096, .beta = &beta,
                      .c = reinterpret_cast<void*>(0xc000), .c_type = CUDA_R_16BF, .ldc = 4096,
                      .compute = CUBLAS_COMPUTE_32F};
  for (auto _ : state) {
    benchmark::DoNotOptimize(args);
    Translation t = translate_cublas(args);
    if (!std::holds_alternative<GemmCall>(t)) {
      state.SkipWithError("the call was not keyed");
      break;
    }
    benchmark::DoNotOptimize(t);
  }
  cublasDestroy_v2(handle);
}
BENCHMARK(BM_TranslateGemmEx);

}  // namespace
}  // namespace kd::shim

BENCHMARK_MAIN();
