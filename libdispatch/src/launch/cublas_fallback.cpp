#include "launch/cublas_fallback.hpp"

#include <dlfcn.h>

#include <climits>
#include <cstring>
#include <mutex>

#include <cublas_api.h>
#include <spdlog/spdlog.h>

#include "cuda/driver.hpp"

namespace kd {
namespace {

// Explicit types: the C++ header overloads some of these names, so decltype(&::name) is ambiguous.
struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long, const void*, cudaDataType, int,
                                            long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t,
                                            cublasGemmAlgo_t) = nullptr;
  bool ok = false;
};

CublasApi load_cublas() {
  CublasApi api;
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    spdlog::error("kdispatch: cannot load libcublas.so.13 for the miss path: {}", dlerror());
    return api;
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    return fn != nullptr;
  };
  api.ok = sym(api.create, "cublasCreate_v2") && sym(api.destroy, "cublasDestroy_v2") &&
           sym(api.set_stream, "cublasSetStream_v2") && sym(api.gemm_ex, "cublasGemmEx") &&
           sym(api.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
  if (!api.ok) spdlog::error("kdispatch: libcublas.so.13 lacks a GEMM entry point");
  return api;
}

const CublasApi& cublas() {
  static const CublasApi api = load_cublas();
  return api;
}

// Handles of this thread, one per context. Few contexts per thread in practice.
struct ThreadHandles {
  static constexpr int kMax = 8;
  CUcontext ctx[kMax] = {};
  cublasHandle_t handle[kMax] = {};
  int count = 0;
  ~ThreadHandles() {
    const CudaDriver* d = cu_driver();
    if (d == nullptr) return;
    for (int i = 0; i < count; ++i) {
      if (d->cuCtxPushCurrent(ctx[i]) != CUDA_SUCCESS) continue;
      cublas().destroy(handle[i]);
      CUcontext popped = nullptr;
      d->cuCtxPopCurrent(&popped);
    }
  }
};
thread_local ThreadHandles t_handles;

cublasHandle_t handle_for(CUcontext ctx, const CudaDriver& d) {
  ThreadHandles& h = t_handles;
  for (int i = 0; i < h.count; ++i)
    if (h.ctx[i] == ctx) return h.handle[i];
  if (h.count == ThreadHandles::kMax) return nullptr;
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  const bool push = current != ctx;
  if (push && d.cuCtxPushCurrent(ctx) != CUDA_SUCCESS) return nullptr;
  cublasHandle_t handle = nullptr;
  const cublasStatus_t st = cublas().create(&handle);
  if (push) {
    CUcontext popped = nullptr;
    d.cuCtxPopCurrent(&popped);
  }
  if (st != CUBLAS_STATUS_SUCCESS) return nullptr;
  h.ctx[h.count] = ctx;
  h.handle[h.count] = handle;
  ++h.count;
  return handle;
}

constexpr cudaDataType kDataTypes[] = {CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F};  // by kd_dtype

std::uint16_t float_to_half_bits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

}  // namespace

CublasStatus cublas_gemm(const CublasGemmCall& call, CUcontext ctx, CUstream stream) noexcept {
  try {
    const kd_gemm_desc& d = call.desc;
    if (d.epilogue != KD_EPILOGUE_NONE) return CublasStatus::unsupported;
    for (std::int64_t v : {d.m, d.n, d.k, d.lda, d.ldb, d.ldc, d.batch})
      if (v > INT_MAX) return CublasStatus::unsupported;
    const CudaDriver* drv = cu_driver();
    if (drv == nullptr || !cublas().ok) return CublasStatus::unavailable;
    cublasHandle_t handle = handle_for(ctx, *drv);
    if (handle == nullptr) return CublasStatus::unavailable;
    if (cublas().set_stream(handle, reinterpret_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS)
      return CublasStatus::failed;

    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    const void* alpha = call.alpha;
    const void* beta = call.beta;
    std::uint16_t alpha_h = 0, beta_h = 0;
    if (d.compute == KD_COMPUTE_F16) {
      compute = CUBLAS_COMPUTE_16F;
      alpha_h = float_to_half_bits(*call.alpha);
      beta_h = float_to_half_bits(*call.beta);
      alpha = &alpha_h;
      beta = &beta_h;
    } else if (d.math == KD_MATH_TF32_ALLOWED) {
      compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    }
    const auto ta = d.ta == KD_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto tb = d.tb == KD_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = static_cast<int>(d.k);
    const int lda = static_cast<int>(d.lda), ldb = static_cast<int>(d.ldb),
              ldc = static_cast<int>(d.ldc);
    cublasStatus_t st;
    if (d.batch == 1) {
      st = cublas().gemm_ex(handle, ta, tb, m, n, k, alpha, call.a, kDataTypes[d.a_type], lda,
                            call.b, kDataTypes[d.b_type], ldb, beta, call.c, kDataTypes[d.c_type],
                            ldc, compute, CUBLAS_GEMM_DEFAULT);
    } else {
      st = cublas().gemm_strided_batched_ex(
          handle, ta, tb, m, n, k, alpha, call.a, kDataTypes[d.a_type], lda, d.stride_a, call.b,
          kDataTypes[d.b_type], ldb, d.stride_b, beta, call.c, kDataTypes[d.c_type], ldc,
          d.stride_c, static_cast<int>(d.batch), compute, CUBLAS_GEMM_DEFAULT);
    }
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE)
      return CublasStatus::unsupported;
    return st == CUBLAS_STATUS_SUCCESS ? CublasStatus::ok : CublasStatus::failed;
  } catch (...) {
    return CublasStatus::failed;
  }
}

}  // namespace kd
