// The evaluator's helper kernels (eval_kernels_source.cpp), compiled with NVRTC for the device's
// arch when an Evaluator starts, and typed launchers for them. All launches are asynchronous on
// the given stream; results land in device memory that the caller reads back as scalars.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "key/gemm_key.hpp"

namespace kd::eval {

std::string_view eval_kernels_source();

// A loaded CUmodule, unloaded on destruction.
struct ModuleDeleter {
  void operator()(CUmod_st* m) const noexcept;
};
using Module = std::unique_ptr<CUmod_st, ModuleDeleter>;
// Loads a cubin image; throws kd::Error (domain cuda) when the driver refuses it.
Module load_module(std::string_view cubin, const std::string& what);

// Host mirrors of the device structs; layouts must match the source.
struct DeviceMatrix {
  CUdeviceptr p = 0;
  long long rows = 0, cols = 0, ld = 0, stride = 0;
  int batch = 1;
  int dtype = 2;  // kd::DType numbering: 0 f16, 1 bf16, 2 f32
};
static_assert(sizeof(DeviceMatrix) == 48);

struct RefArgs {
  CUdeviceptr a = 0, b = 0, c0 = 0, bias = 0, ref = 0;
  long long m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, stride_a = 0, stride_b = 0, stride_c = 0;
  int ta = 0, tb = 0, dt_a = 2, dt_b = 2, dt_c = 2, has_bias = 0;
  double alpha = 1.0, beta = 0.0;
};
static_assert(sizeof(RefArgs) == 152);

struct RefStats {
  double sum_sq = 0.0;
  double max_abs = 0.0;
};
struct CompareStats {
  unsigned long long poisoned = 0;
  unsigned long long nonfinite = 0;
  double max_rel = 0.0;
  double sum_sq_err = 0.0;
  double signed_err = 0.0;   // sum (out - ref) sgn(ref), against the reference only
  double sum_abs_ref = 0.0;  // sum |ref| over the same elements
};
struct GuardStats {
  unsigned long long before = 0, after = 0, padding = 0;
  unsigned long long total() const { return before + after + padding; }
};

enum class Distribution : int { normal = 0, uniform = 1, scaled = 2, offset_mean = 3, large_mean = 4 };

struct RowRefArgs {
  CUdeviceptr x = 0, w = 0, b = 0, y = 0, ref = 0;
  long long rows = 0, cols = 0;
  int op = 0, dtype = 2, has_w = 0, has_b = 0;
  double eps = 1e-5;
};
static_assert(sizeof(RowRefArgs) == 80);

class EvalKernels {
public:
  // Compiles and loads the helpers for `arch` ("sm_90"); requires a current context.
  explicit EvalKernels(const std::string& arch);

  void generate(CUstream s, const DeviceMatrix& x, std::uint64_t seed, Distribution dist,
                double scale) const;
  void poison(CUstream s, const DeviceMatrix& x) const;
  void reference(CUstream s, const RefArgs& args, long long batch) const;
  // Row operators: the fp64 reference into args.ref, and the f32 baseline into args.y.
  void row_reference(CUstream s, const RowRefArgs& args) const;
  void row_baseline(CUstream s, const RowRefArgs& args) const;
  void ref_stats(CUstream s, CUdeviceptr ref, long long count, CUdeviceptr out) const;
  // `other` == 0: compare with the fp64 reference; else with a second output of the same layout.
  void compare(CUstream s, const DeviceMatrix& out, CUdeviceptr ref, CUdeviceptr other,
               double floor, CUdeviceptr stats) const;
  void check_guards(CUstream s, const DeviceMatrix& body, std::uint64_t guard_bytes,
                    std::uint64_t body_bytes, CUdeviceptr stats) const;
  void checksum(CUstream s, CUdeviceptr p, std::uint64_t bytes, CUdeviceptr out) const;
  void clock_probe(CUstream s, CUdeviceptr out) const;

  // One device-to-device range for late_copy.
  struct Copy {
    CUdeviceptr src = 0, dst = 0;
    std::uint64_t bytes = 0;
  };
  static constexpr int kMaxLateCopies = 4;
  // The producer a programmatic-dependent first launch is gated behind (eval_kernels_source.cpp):
  // triggers its dependents, waits `delay_ns`, then copies up to kMaxLateCopies ranges. Uses about
  // half of the SMs, so the dependent's blocks find room to start early.
  void late_copy(CUstream s, const Copy* copies, int count, long long delay_ns) const;
  // Reads two ranges (each 16-byte aligned, a multiple of 16 bytes) in one launch, as a kernel
  // that only streams its inputs does.
  void stream_read(CUstream s, CUdeviceptr p0, std::uint64_t bytes0, CUdeviceptr p1, std::uint64_t bytes1,
                   CUdeviceptr sink) const;

private:
  Module module_;
  CUfunction generate_ = nullptr, poison_ = nullptr, reference_ = nullptr, ref_stats_ = nullptr,
             compare_ = nullptr, check_guards_ = nullptr, checksum_ = nullptr, clock_probe_ = nullptr,
             late_copy_ = nullptr, stream_read_ = nullptr, row_reference_ = nullptr, row_baseline_ = nullptr;
  int grid_ = 1;  // blocks of grid-stride kernels: a few per SM
  int sms_ = 1;
};

}  // namespace kd::eval
