#include "eval/vendor_baseline.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cublaslt/matmul.hpp"
#include "cuda/driver.hpp"
#include "eval/device_memory.hpp"

namespace kd::eval {
namespace {

void check_cublas(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw Error(ErrorDomain::cuda, static_cast<int>(st),
                fmt::format("{} failed: {}", call, cublasGetStatusString(st)));
  }
}
#define KD_CUBLAS_CHECK(call) check_cublas((call), #call)

int as_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max()) {
    throw Error(ErrorDomain::usage, 0, fmt::format("baseline: {} = {} exceeds int", what, v));
  }
  return static_cast<int>(v);
}

// Host scale factors in the compute type's scale type (half for compute 16F, else float).
struct Scale {
  float f = 0.0f;
  std::uint16_t h = 0;
  const void* ptr(PrecisionClass p) const { return p == PrecisionClass::f16 ? static_cast<const void*>(&h) : &f; }
};
Scale scale(double v) { return {static_cast<float>(v), half_bits(static_cast<float>(v))}; }

constexpr std::uint64_t kLtWorkspaceBytes = 32ull << 20;

}  // namespace

std::uint16_t half_bits(float v) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (((x >> 23) & 0xFF) == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mant ? 0x200u : 0u));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (exp <= 0) {  // subnormal or zero
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
  return static_cast<std::uint16_t>(sign | h);
}

struct VendorBaseline::Impl {
  GemmKey key;
  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  DeviceBuffer lt_workspace;

  ~Impl() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (lt) cublasLtDestroy(lt);
    if (handle) cublasDestroy(handle);
  }

  cublasLtMatrixLayout_t layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                std::int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    KD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, cuda_data_type(t), static_cast<std::uint64_t>(rows),
                                               static_cast<std::uint64_t>(cols), ld));
    if (key.batch > 1) {
      const std::int32_t count = static_cast<std::int32_t>(key.batch);
      KD_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                       &count, sizeof(count)));
      KD_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
    return l;
  }

  void setup_lt() {
    KD_CUBLAS_CHECK(cublasLtCreate(&lt));
    const cudaDataType_t scale_type =
        key.precision == PrecisionClass::f16 ? CUDA_R_16F : CUDA_R_32F;
    KD_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, cublas_compute_type(key.precision), scale_type));
    const cublasOperation_t ta = cublas_op(key.ta), tb = cublas_op(key.tb);
    KD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    KD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    KD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    const bool a_n = key.ta == Transpose::N, b_n = key.tb == Transpose::N;
    la = layout(key.a, a_n ? key.m : key.k, a_n ? key.k : key.m, key.lda, key.stride_a);
    lb = layout(key.b, b_n ? key.k : key.n, b_n ? key.n : key.k, key.ldb, key.stride_b);
    lc = layout(key.c, key.m, key.n, key.ldc, key.stride_c);
    cublasLtMatmulPreference_t pref = nullptr;
    KD_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = kLtWorkspaceBytes;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = [&] {
      cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
      if (s != CUBLAS_STATUS_SUCCESS) return s;
      return cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &result, &found);
    }();
    cublasLtMatmulPreferenceDestroy(pref);
    check_cublas(st, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw Error(ErrorDomain::cuda, 0, "cublasLt has no algorithm with a bias epilogue for " + key.shape_line());
    }
    algo = result.algo;
    lt_workspace = DeviceBuffer(kLtWorkspaceBytes, "cublasLt workspace");
  }
};

VendorBaseline::VendorBaseline(const GemmKey& key, CUstream stream) : impl_(std::make_unique<Impl>()) {
  impl_->key = key;
  impl_->stream = stream;
  if (key.epilogue == Epilogue::bias) {
    impl_->setup_lt();
    return;
  }
  KD_CUBLAS_CHECK(cublasCreate(&impl_->handle));
  KD_CUBLAS_CHECK(cublasSetStream(impl_->handle, reinterpret_cast<cudaStream_t>(stream)));
  const cublasMath_t math =
      key.precision == PrecisionClass::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  KD_CUBLAS_CHECK(cublasSetMathMode(impl_->handle, math));
  // A workspace of the caller's, as PyTorch gives every handle (32 MiB on Hopper): cuBLAS then
  // picks what it picks for PyTorch, and allocates nothing while a CUDA graph captures it.
  impl_->lt_workspace = DeviceBuffer(kLtWorkspaceBytes, "cuBLAS workspace");
  KD_CUBLAS_CHECK(cublasSetWorkspace(impl_->handle, reinterpret_cast<void*>(impl_->lt_workspace.get()),
                                     kLtWorkspaceBytes));
}

VendorBaseline::~VendorBaseline() = default;

void VendorBaseline::run(const GemmOperands& ops, double alpha, double beta) {
  const GemmKey& k = impl_->key;
  const Scale sa = scale(alpha), sb = scale(beta);
  const auto ptr = [](CUdeviceptr p) { return reinterpret_cast<void*>(p); };
  if (k.epilogue == Epilogue::bias) {
    const void* bias = ptr(ops.bias);
    KD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(impl_->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &bias, sizeof(bias)));
    KD_CUBLAS_CHECK(cublasLtMatmul(impl_->lt, impl_->desc, sa.ptr(k.precision), ptr(ops.a), impl_->la,
                                   ptr(ops.b), impl_->lb, sb.ptr(k.precision), ptr(ops.c), impl_->lc,
                                   ptr(ops.c), impl_->lc, &impl_->algo,
                                   ptr(impl_->lt_workspace.get()), kLtWorkspaceBytes,
                                   reinterpret_cast<cudaStream_t>(impl_->stream)));
    return;
  }
  const int m = as_int(k.m, "m"), n = as_int(k.n, "n"), kk = as_int(k.k, "k");
  const int lda = as_int(k.lda, "lda"), ldb = as_int(k.ldb, "ldb"), ldc = as_int(k.ldc, "ldc");
  if (k.batch == 1) {
    KD_CUBLAS_CHECK(cublasGemmEx(impl_->handle, cublas_op(k.ta), cublas_op(k.tb), m, n, kk, sa.ptr(k.precision),
                                 ptr(ops.a), cuda_data_type(k.a), lda, ptr(ops.b), cuda_data_type(k.b), ldb,
                                 sb.ptr(k.precision), ptr(ops.c), cuda_data_type(k.c), ldc,
                                 cublas_compute_type(k.precision), CUBLAS_GEMM_DEFAULT));
  } else {
    KD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        impl_->handle, cublas_op(k.ta), cublas_op(k.tb), m, n, kk, sa.ptr(k.precision), ptr(ops.a), cuda_data_type(k.a),
        lda, k.stride_a, ptr(ops.b), cuda_data_type(k.b), ldb, k.stride_b, sb.ptr(k.precision),
        ptr(ops.c), cuda_data_type(k.c), ldc, k.stride_c, as_int(k.batch, "batch"),
        cublas_compute_type(k.precision), CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace kd::eval
