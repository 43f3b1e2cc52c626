#include "gemm_fixture.hpp"

#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "support/gemm_desc.hpp"

namespace kd::test {
namespace {

// Both kernels take the contract struct and honour alpha/beta with beta == 0 not reading C.
constexpr const char* kPlain = R"(
#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_gemm_plain(kd_gemm_args p) {
  const long long i = blockIdx.x * 16 + threadIdx.x, j = blockIdx.y * 16 + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* a = static_cast<const float*>(p.a);
  const float* b = static_cast<const float*>(p.b);
  float* c = static_cast<float*>(p.c);
  float acc = 0.f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(a[i + l * p.lda], b[l + j * p.ldb], acc);
  const float prior = p.beta == 0.f ? 0.f : p.beta * c[i + j * p.ldc];
  c[i + j * p.ldc] = p.alpha * acc + prior;
}
)";

constexpr const char* kTiled = R"(
#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_gemm_tiled(kd_gemm_args p) {
  __shared__ float as[16][17], bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long i = blockIdx.x * 16 + tx, j = blockIdx.y * 16 + ty;
  const float* a = static_cast<const float*>(p.a);
  const float* b = static_cast<const float*>(p.b);
  float* c = static_cast<float*>(p.c);
  float acc = 0.f;
  for (long long l0 = 0; l0 < p.k; l0 += 16) {
    as[ty][tx] = (i < p.m && l0 + ty < p.k) ? a[i + (l0 + ty) * p.lda] : 0.f;
    bs[ty][tx] = (j < p.n && l0 + tx < p.k) ? b[(l0 + tx) + j * p.ldb] : 0.f;
    __syncthreads();
    for (int l = 0; l < 16; ++l) acc = fmaf(as[l][tx], bs[ty][l], acc);
    __syncthreads();
  }
  if (i >= p.m || j >= p.n) return;
  const float prior = p.beta == 0.f ? 0.f : p.beta * c[i + j * p.ldc];
  c[i + j * p.ldc] = p.alpha * acc + prior;
}
)";

// Partial sums of each half of k into the workspace ([2][n][m] floats), then C from both halves. On
// sm_90+ the sum is a programmatic dependent launch (the plan's "pdl"), so it waits on griddepcontrol
// before it reads the partials, as the builtin split-K reductions do.
constexpr const char* kSplit = R"(
#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_gemm_split_partial(kd_gemm_args p) {
#if __CUDA_ARCH__ >= 900 && defined(KD_FIRST_DEPENDENT)
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const long long i = blockIdx.x * 16 + threadIdx.x, j = blockIdx.y * 16 + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const long long half = (p.k + 1) / 2, l0 = blockIdx.z * half, l1 = l0 + half < p.k ? l0 + half : p.k;
  const float* a = static_cast<const float*>(p.a);
  const float* b = static_cast<const float*>(p.b);
  float acc = 0.f;
  for (long long l = l0; l < l1; ++l) acc = fmaf(a[i + l * p.lda], b[l + j * p.ldb], acc);
  static_cast<float*>(p.workspace)[(blockIdx.z * p.n + j) * p.m + i] = acc;
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
extern "C" __global__ void kd_gemm_split_sum(kd_gemm_args p) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const long long i = blockIdx.x * 16 + threadIdx.x, j = blockIdx.y * 16 + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* w = static_cast<const float*>(p.workspace);
  const float sum = w[j * p.m + i] + w[(p.n + j) * p.m + i];
  float* c = static_cast<float*>(p.c);
  const float prior = p.beta == 0.f ? 0.f : p.beta * c[i + j * p.ldc];
  c[i + j * p.ldc] = p.alpha * sum + prior;
}
)";

}  // namespace

kd_gemm_desc gemm_desc_for(const GemmShape& s) {
  kd_gemm_desc d = gemm_desc(KD_OP_N, KD_OP_N, s.m, s.n, s.k, KD_DTYPE_F32);
  d.beta_zero = 1;
  return d;
}

kd_gemm_args gemm_args_for(const GemmShape& s, const void* a, const void* b, void* c, float alpha) {
  kd_gemm_args args{};
  args.a = a, args.b = b, args.c = c;
  args.m = s.m, args.n = s.n, args.k = s.k;
  args.lda = s.m, args.ldb = s.k, args.ldc = s.m;
  args.batch = 1, args.alpha = alpha, args.beta = 0.f;
  return args;
}

GemmKey gemm_key_for(const GemmShape& s, bool beta_zero) {
  GemmKey k;
  k.a = k.b = k.c = DType::f32;
  k.compute = ComputeType::f32;
  k.precision = PrecisionClass::f32;
  k.ta = k.tb = Transpose::N;
  k.m = s.m;
  k.n = s.n;
  k.k = s.k;
  k.lda = s.m;
  k.ldb = s.k;
  k.ldc = s.m;
  k.batch = 1;
  k.beta_zero = beta_zero;
  const DeviceInfo dev = query_device(0);
  return k.with_device(DevicePart{dev.arch, dev.name, dev.sms});
}

Record make_gemm_record(const GemmKey& key, const GemmShape& s, KernelVariant variant,
                        std::int64_t created_unix_s) {
  const DeviceInfo dev = query_device(0);
  const std::string source = variant == KernelVariant::plain             ? kPlain
                             : variant == KernelVariant::tiled           ? kTiled
                             : variant == KernelVariant::split_dependent ? std::string("#define KD_FIRST_DEPENDENT 1\n") + kSplit
                                                                         : kSplit;
  const search::CompileOutput out =
      search::compile_cuda({.source = source, .name = "test_gemm.cu", .arch = dev.arch});
  if (out.status != search::CompileStatus::ok) throw std::runtime_error("NVRTC: " + out.log);
  Record r;
  r.key_line = key.full_line();
  r.kind = RecordKind::nvrtc_kernel;
  r.cubin = out.cubin;
  r.ptx = out.ptx;
  r.source = source;
  const auto gx = static_cast<std::uint32_t>((s.m + 15) / 16), gy = static_cast<std::uint32_t>((s.n + 15) / 16);
  if (variant == KernelVariant::split || variant == KernelVariant::split_dependent) {
    const bool first_dependent = variant == KernelVariant::split_dependent && dev.cc_major >= 9;
    r.plan.launches.push_back({"kd_gemm_split_partial", {gx, gy, 2}, {16, 16, 1}, 0, first_dependent});
    r.plan.launches.push_back({"kd_gemm_split_sum", {gx, gy, 1}, {16, 16, 1}, 0, /*pdl=*/dev.cc_major >= 9});
    r.plan.workspace_bytes = static_cast<std::uint64_t>(2 * s.m * s.n) * sizeof(float);
  } else {
    r.plan.launches.push_back({variant == KernelVariant::plain ? "kd_gemm_plain" : "kd_gemm_tiled",
                               {gx, gy, 1}, {16, 16, 1}, 0});
  }
  r.alignment_bytes = 16;
  r.proposer = "user";
  r.driver_version = cu().driver_version;
  r.created_unix_s = created_unix_s;
  return r;
}

HostGemm make_host_gemm(const GemmShape& s, float alpha, unsigned seed) {
  HostGemm h;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  h.a.resize(static_cast<std::size_t>(s.m * s.k));
  h.b.resize(static_cast<std::size_t>(s.k * s.n));
  for (auto& x : h.a) x = dist(rng);
  for (auto& x : h.b) x = dist(rng);
  h.ref.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
  h.abs_sum.assign(h.ref.size(), 0.0);
  for (std::int64_t j = 0; j < s.n; ++j)
    for (std::int64_t l = 0; l < s.k; ++l) {
      const double bv = h.b[static_cast<std::size_t>(l + j * s.k)];
      for (std::int64_t i = 0; i < s.m; ++i) {
        const double av = h.a[static_cast<std::size_t>(i + l * s.m)];
        h.ref[static_cast<std::size_t>(i + j * s.m)] += av * bv;
        h.abs_sum[static_cast<std::size_t>(i + j * s.m)] += std::fabs(av * bv);
      }
    }
  for (std::size_t e = 0; e < h.ref.size(); ++e) {
    h.ref[e] *= alpha;
    h.abs_sum[e] *= std::fabs(alpha);
  }
  return h;
}

std::int64_t count_wrong(const std::vector<float>& c, const HostGemm& h) {
  std::int64_t wrong = 0;
  for (std::size_t e = 0; e < c.size(); ++e) {
    const double tol = 1e-5 * h.abs_sum[e] + 1e-6;  // fp32 accumulation over k terms
    if (!(std::fabs(static_cast<double>(c[e]) - h.ref[e]) <= tol)) ++wrong;
  }
  return wrong;
}

}  // namespace kd::test
