// libshim_scenarios.so: the "application" of the shim tests. It links the stand-in cuBLAS /
// cuBLASLt, makes a named sequence of calls, prints each call's status ("RET name status") and then
// the stand-in's log between LOG-BEGIN and LOG-END. Loaded two ways by shim_driver_main.cpp: linked
// (cuBLAS in the global scope) or dlopen'ed RTLD_LOCAL (as PyTorch loads cuBLAS).
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "fake_cublas/fake_log.hpp"

namespace {

void* const kA = reinterpret_cast<void*>(0xa000);
void* const kB = reinterpret_cast<void*>(0xb000);
void* const kC = reinterpret_cast<void*>(0xc000);
void* const kC2 = reinterpret_cast<void*>(0xd000);
void* const kBias = reinterpret_cast<void*>(0xbb00);
void* const kWorkspace = reinterpret_cast<void*>(0x7000);
const auto kStream1 = reinterpret_cast<cudaStream_t>(0x5000);
const auto kStream2 = reinterpret_cast<cudaStream_t>(0x6000);
const float kAlpha = 1.5f, kBeta0 = 0.0f, kBeta1 = 1.0f;
const std::uint16_t kHalfOne = 0x3c00, kHalfZero = 0x0000;

const float* fa() { return static_cast<const float*>(kA); }
const float* fb() { return static_cast<const float*>(kB); }
float* fc() { return static_cast<float*>(kC); }

void ret(const char* name, cublasStatus_t s) { std::printf("RET %s %d\n", name, static_cast<int>(s)); }

// A cuBLASLt call as PyTorch's gemm_and_bias makes it; `tweak` may change it before the call.
struct LtCall {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  void* d_ptr = kC;
};

LtCall make_lt_linear(cublasComputeType_t compute, cudaDataType scale, cudaDataType type,
                      std::int32_t epilogue) {
  // nn.Linear(4096 -> 4096) on 16 tokens: ta=T tb=N m=4096 n=16 k=4096; A stored k x m.
  LtCall call;
  cublasLtMatmulDescCreate(&call.desc, compute, scale);
  const std::int32_t t = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  const std::uint32_t epi = static_cast<std::uint32_t>(epilogue);
  cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  if (epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) {
    const void* bias = kBias;
    cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  cublasLtMatrixLayoutCreate(&call.a, type, 4096, 4096, 4096);
  cublasLtMatrixLayoutCreate(&call.b, type, 4096, 16, 4096);
  cublasLtMatrixLayoutCreate(&call.c, type, 4096, 16, 4096);
  call.d = call.c;
  return call;
}

cublasStatus_t run_lt(cublasLtHandle_t lt, const LtCall& call, const void* alpha, const void* beta) {
  return cublasLtMatmul(lt, call.desc, alpha, kA, call.a, kB, call.b, beta, kC, call.c, call.d_ptr,
                        call.d, nullptr, kWorkspace, 4096, kStream1);
}

void scenario_all(cublasHandle_t h, cublasLtHandle_t lt) {
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  ret("sgemm", cublasSgemm_v2(h, T, N, 64, 16, 128, &kAlpha, fa(), 128, fb(), 128, &kBeta0, fc(), 64));
  ret("sgemm_64", cublasSgemm_v2_64(h, N, N, 32, 8, 16, &kAlpha, fa(), 32, fb(), 16, &kBeta1, fc(), 32));
  ret("gemm_ex", cublasGemmEx(h, T, N, 4096, 16, 4096, &kAlpha, kA, CUDA_R_16BF, 4096, kB,
                              CUDA_R_16BF, 4096, &kBeta0, kC, CUDA_R_16BF, 4096,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  ret("gemm_ex_64", cublasGemmEx_64(h, N, T, 128, 64, 32, &kAlpha, kA, CUDA_R_16F, 128, kB,
                                    CUDA_R_16F, 64, &kBeta0, kC, CUDA_R_32F, 128,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  ret("sgemm_strided", cublasSgemmStridedBatched(h, N, N, 16, 16, 16, &kAlpha, fa(), 16, 256, fb(),
                                                 16, 256, &kBeta0, fc(), 16, 256, 4));
  ret("sgemm_strided_64", cublasSgemmStridedBatched_64(h, T, T, 16, 8, 32, &kAlpha, fa(), 32, 512,
                                                       fb(), 8, 256, &kBeta0, fc(), 16, 128, 3));
  ret("gemm_strided_ex", cublasGemmStridedBatchedEx(h, N, N, 64, 64, 64, &kAlpha, kA, CUDA_R_16F,
                                                    64, 4096, kB, CUDA_R_16F, 64, 4096, &kBeta0,
                                                    kC, CUDA_R_16F, 64, 4096, 8,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  // Compute 16F: half alpha/beta; batch 1, so the strides are not part of the key.
  ret("gemm_strided_ex_64",
      cublasGemmStridedBatchedEx_64(h, N, N, 32, 32, 32, &kHalfOne, kA, CUDA_R_16F, 32, 1024, kB,
                                    CUDA_R_16F, 32, 1024, &kHalfZero, kC, CUDA_R_16F, 32, 1024, 1,
                                    CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
  const LtCall bias = make_lt_linear(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUBLASLT_EPILOGUE_BIAS);
  ret("lt_bias", run_lt(lt, bias, &kAlpha, &kBeta0));
  const LtCall plain = make_lt_linear(CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F,
                                      CUBLASLT_EPILOGUE_DEFAULT);
  ret("lt_plain", run_lt(lt, plain, &kAlpha, &kBeta1));
}

void scenario_state(cublasHandle_t h, cublasLtHandle_t) {
  const auto N = CUBLAS_OP_N;
  ret("sgemm_s1", cublasSgemm_v2(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  cublasSetStream_v2(h, kStream2);
  cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
  ret("sgemm_s2_tf32", cublasSgemm_v2(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  ret("gemm_ex_bf16_tf32", cublasGemmEx_64(h, N, N, 8, 8, 8, &kAlpha, kA, CUDA_R_16BF, 8, kB,
                                           CUDA_R_16BF, 8, &kBeta0, kC, CUDA_R_16BF, 8,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  cublasSetMathMode(h, static_cast<cublasMath_t>(CUBLAS_PEDANTIC_MATH |
                                                 CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  ret("sgemm_pedantic", cublasSgemm_v2(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
}

// The handle's workspace as PyTorch sets it (after every cublasSetStream), and each call that
// resets it: a tuned kernel may use it only while it is the handle's.
void scenario_workspace(cublasHandle_t h, cublasLtHandle_t) {
  const auto N = CUBLAS_OP_N;
  const auto gemm = [&](const char* name) {
    ret(name, cublasSgemm_v2(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  };
  gemm("sgemm_default_pool");
  cublasSetWorkspace_v2(h, kWorkspace, 1u << 25);
  gemm("sgemm_lent");
  cublasSetStream_v2(h, kStream2);
  gemm("sgemm_after_set_stream");
  cublasSetWorkspace_v2(h, kWorkspace, 4096);
  gemm("sgemm_lent_again");
  cublasDestroy_v2(h);
  cublasHandle_t h2 = nullptr;
  cublasCreate_v2(&h2);
  cublasSetStream_v2(h2, kStream1);
  ret("sgemm_new_handle", cublasSgemm_v2(h2, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  cublasDestroy_v2(h2);
}

void scenario_repeat(cublasHandle_t h, cublasLtHandle_t) {
  const auto N = CUBLAS_OP_N;
  for (int i = 0; i < 3; ++i) {
    ret("sgemm", cublasSgemm_v2(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  }
  ret("sgemm_other", cublasSgemm_v2(h, N, N, 16, 8, 8, &kAlpha, fa(), 16, fb(), 8, &kBeta0, fc(), 16));
}

void scenario_unsupported(cublasHandle_t h, cublasLtHandle_t lt) {
  const auto N = CUBLAS_OP_N;
  cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE);
  ret("device_scalars", cublasSgemm_v2(h, N, N, 8, 8, 8, fa(), fa(), 8, fb(), 8, fb(), fc(), 8));
  cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST);
  ret("op_c", cublasSgemm_v2(h, CUBLAS_OP_C, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  const double alpha64 = 1.0, beta64 = 0.0;
  ret("f64", cublasGemmEx_64(h, N, N, 8, 8, 8, &alpha64, kA, CUDA_R_64F, 8, kB, CUDA_R_64F, 8,
                             &beta64, kC, CUDA_R_64F, 8, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
  ret("fast_16f", cublasGemmEx_64(h, N, N, 8, 8, 8, &kAlpha, kA, CUDA_R_16BF, 8, kB, CUDA_R_16BF, 8,
                                  &kBeta0, kC, CUDA_R_16BF, 8, CUBLAS_COMPUTE_32F_FAST_16F,
                                  CUBLAS_GEMM_DEFAULT));
  cublasSetMathMode(h, CUBLAS_TENSOR_OP_MATH);
  ret("tensor_op_math", cublasSgemm_v2(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  ret("k0", cublasSgemm_v2(h, N, N, 8, 8, 0, &kAlpha, fa(), 8, fb(), 8, &kBeta0, fc(), 8));
  ret("overlapping_c", cublasSgemmStridedBatched(h, N, N, 8, 8, 8, &kAlpha, fa(), 8, 64, fb(), 8,
                                                 64, &kBeta0, fc(), 8, 8, 2));

  const LtCall relu = make_lt_linear(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUBLASLT_EPILOGUE_RELU_BIAS);
  ret("lt_relu_bias", run_lt(lt, relu, &kAlpha, &kBeta0));
  LtCall row = make_lt_linear(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUBLASLT_EPILOGUE_DEFAULT);
  const std::int32_t order_row = CUBLASLT_ORDER_ROW;
  cublasLtMatrixLayoutSetAttribute(row.a, CUBLASLT_MATRIX_LAYOUT_ORDER, &order_row, sizeof order_row);
  ret("lt_row_order", run_lt(lt, row, &kAlpha, &kBeta0));
  LtCall d_not_c = make_lt_linear(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUBLASLT_EPILOGUE_DEFAULT);
  d_not_c.d_ptr = kC2;
  ret("lt_d_not_c", run_lt(lt, d_not_c, &kAlpha, &kBeta0));
  LtCall scaled = make_lt_linear(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUBLASLT_EPILOGUE_DEFAULT);
  const void* scale_ptr = kBias;
  cublasLtMatmulDescSetAttribute(scaled.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_ptr,
                                 sizeof scale_ptr);
  ret("lt_a_scale", run_lt(lt, scaled, &kAlpha, &kBeta0));
  LtCall device = make_lt_linear(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUBLASLT_EPILOGUE_DEFAULT);
  const std::int32_t pm_device = CUBLASLT_POINTER_MODE_DEVICE;
  cublasLtMatmulDescSetAttribute(device.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm_device,
                                 sizeof pm_device);
  ret("lt_device_scalars", run_lt(lt, device, kA, kB));
}

// cuBLAS loaded and handles made, but no GEMM call (as a process that loads torch and exits).
void scenario_none(cublasHandle_t, cublasLtHandle_t) {}

const std::map<std::string, std::function<void(cublasHandle_t, cublasLtHandle_t)>> kScenarios = {
    {"none", scenario_none},
    {"all", scenario_all},
    {"state", scenario_state},
    {"repeat", scenario_repeat},
    {"unsupported", scenario_unsupported},
    {"workspace", scenario_workspace},
};

}  // namespace

// Runs the named scenario; returns 0, or 2 for an unknown name.
extern "C" __attribute__((visibility("default"))) int kd_shim_scenario(const char* name) {
  const auto it = kScenarios.find(name);
  if (it == kScenarios.end()) return 2;
  cublasHandle_t h = nullptr;
  cublasCreate_v2(&h);
  cublasSetStream_v2(h, kStream1);
  cublasLtHandle_t lt = nullptr;
  cublasLtCreate(&lt);
  it->second(h, lt);
  std::fflush(stdout);
  std::printf("LOG-BEGIN\n%sLOG-END\n", fake_cublas_log_text());
  std::fflush(stdout);
  return 0;
}
