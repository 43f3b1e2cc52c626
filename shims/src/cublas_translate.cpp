#include "cublas_translate.hpp"

#include "cuda_enums.hpp"
#include "handle_workspaces.hpp"
#include "real_cublas.hpp"

namespace kd::shim {
namespace {

struct HandleState {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

std::optional<HandleState> read_handle(cublasHandle_t handle) noexcept {
  RealCublas& real = real_cublas();
  const auto get_stream = real.get_stream.get();
  const auto get_math = real.get_math_mode.get();
  const auto get_pointer_mode = real.get_pointer_mode.get();
  if (get_stream == nullptr || get_math == nullptr || get_pointer_mode == nullptr) return std::nullopt;
  HandleState s;
  if (get_stream(handle, &s.stream) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  if (get_math(handle, &s.math) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  if (get_pointer_mode(handle, &s.pointer_mode) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  return s;
}

// Fills `call` from the arguments and the handle, or says why the call is not keyed.
std::optional<Unsupported> fill_call(const CublasGemmArgs& x, GemmCall& call) noexcept {
  if (x.alpha == nullptr || x.beta == nullptr || x.a == nullptr || x.b == nullptr ||
      x.c == nullptr) {
    return Unsupported::null_argument;
  }
  const std::optional<HandleState> handle = read_handle(x.handle);
  if (!handle) return Unsupported::handle_state;
  if (handle->pointer_mode != CUBLAS_POINTER_MODE_HOST) return Unsupported::device_scalars;

  const auto a = dtype_of(x.a_type), b = dtype_of(x.b_type), c = dtype_of(x.c_type);
  if (!a || !b || !c) return Unsupported::data_type;
  const auto compute = compute_of(x.compute);
  const auto math = handle_math_of(handle->math);
  if (!compute || !math) return Unsupported::compute_type;
  const auto ta = op_of(x.transa), tb = op_of(x.transb);
  if (!ta || !tb) return Unsupported::transpose;

  kd_gemm_desc& d = call.desc;
  d.a_type = *a;
  d.b_type = *b;
  d.c_type = *c;
  d.compute = compute->compute;
  d.math = math_of(*compute, *math);
  d.ta = *ta;
  d.tb = *tb;
  d.m = x.m;
  d.n = x.n;
  d.k = x.k;
  d.lda = x.lda;
  d.ldb = x.ldb;
  d.ldc = x.ldc;
  d.batch = x.batch;
  if (x.batch > 1) {
    d.stride_a = x.stride_a;
    d.stride_b = x.stride_b;
    d.stride_c = x.stride_c;
  }
  d.epilogue = KD_EPILOGUE_NONE;
  if (const auto why = unsupported_desc(d)) return *why;

  set_scalars(call, x.alpha, x.beta);
  call.a = x.a;
  call.b = x.b;
  call.c = x.c;
  call.stream = handle->stream;
  const LentWorkspace lent = handle_workspace(x.handle);
  call.workspace = lent.ptr;
  call.workspace_bytes = lent.bytes;
  return std::nullopt;
}

}  // namespace

Translation translate_cublas(const CublasGemmArgs& x) noexcept {
  // Built in place and returned by name: GemmCall is ~200 bytes, and copying it into the variant
  // was a third of the translation's time (bench_shim_host).
  Translation t{std::in_place_type<GemmCall>};
  if (const auto why = fill_call(x, std::get<GemmCall>(t))) t = *why;
  return t;
}

}  // namespace kd::shim
