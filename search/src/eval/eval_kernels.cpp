#include "eval/eval_kernels.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/driver.hpp"

namespace kd::eval {

void ModuleDeleter::operator()(CUmod_st* m) const noexcept {
  if (m != nullptr) cu().cuModuleUnload(m);
}

Module load_module(std::string_view cubin, const std::string& what) {
  // The driver reads the image up to its own size field; hand it a NUL-terminated copy so a
  // truncated image cannot make it read past our buffer.
  std::string image(cubin);
  CUmodule raw = nullptr;
  KD_CU_CHECK(cu().cuModuleLoadData(&raw, image.c_str()), what);
  return Module(raw);
}

namespace {

constexpr unsigned kThreads = 256;

CUfunction get_function(CUmodule m, const char* name) {
  CUfunction f = nullptr;
  KD_CU_CHECK(cu().cuModuleGetFunction(&f, m, name), name);
  return f;
}

void launch(CUfunction f, const char* name, CUstream s, unsigned gx, unsigned gy, unsigned gz,
            unsigned bx, unsigned by, void** params) {
  KD_CU_CHECK(cu().cuLaunchKernel(f, gx, gy, gz, bx, by, 1, 0, s, params, nullptr), name);
}

}  // namespace

EvalKernels::EvalKernels(const std::string& arch) {
  const search::CompileOutput out = search::compile_cuda(
      {.source = std::string(eval_kernels_source()), .name = "kd_eval_kernels.cu", .arch = arch});
  if (out.status != search::CompileStatus::ok) {
    throw Error(ErrorDomain::data, 0, "evaluator helper kernels do not compile: " + out.log);
  }
  module_ = load_module(out.cubin, "evaluator helper kernels");
  CUmodule m = module_.get();
  generate_ = get_function(m, "kd_generate");
  poison_ = get_function(m, "kd_poison");
  reference_ = get_function(m, "kd_reference");
  ref_stats_ = get_function(m, "kd_ref_stats");
  compare_ = get_function(m, "kd_compare");
  check_guards_ = get_function(m, "kd_check_guards");
  checksum_ = get_function(m, "kd_checksum");
  clock_probe_ = get_function(m, "kd_clock_probe");
  late_copy_ = get_function(m, "kd_late_copy");
  stream_read_ = get_function(m, "kd_stream_read");
  row_reference_ = get_function(m, "kd_row_reference");
  row_baseline_ = get_function(m, "kd_row_baseline");
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  KD_CU_CHECK(cu().cuCtxGetCurrent(&ctx), "current context");
  KD_CU_CHECK(cu().cuCtxGetDevice(&dev), "current device");
  int sms = 1;
  KD_CU_CHECK(cu().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "sms");
  grid_ = sms * 8;
  sms_ = sms;
}

void EvalKernels::generate(CUstream s, const DeviceMatrix& x, std::uint64_t seed,
                           Distribution dist, double scale) const {
  DeviceMatrix mx = x;
  unsigned long long sd = seed;
  int d = static_cast<int>(dist);
  void* params[] = {&mx, &sd, &d, &scale};
  launch(generate_, "kd_generate", s, grid_, 1, 1, kThreads, 1, params);
}

void EvalKernels::poison(CUstream s, const DeviceMatrix& x) const {
  DeviceMatrix mx = x;
  void* params[] = {&mx};
  launch(poison_, "kd_poison", s, grid_, 1, 1, kThreads, 1, params);
}

// A block per row up to a few waves; blocks stride over the rest.
void EvalKernels::row_reference(CUstream s, const RowRefArgs& args) const {
  RowRefArgs a = args;
  void* params[] = {&a};
  launch(row_reference_, "kd_row_reference", s, static_cast<unsigned>(std::min<long long>(args.rows, grid_)), 1, 1,
         kThreads, 1, params);
}

void EvalKernels::row_baseline(CUstream s, const RowRefArgs& args) const {
  RowRefArgs a = args;
  void* params[] = {&a};
  launch(row_baseline_, "kd_row_baseline", s, static_cast<unsigned>(std::min<long long>(args.rows, grid_)), 1, 1,
         kThreads, 1, params);
}

void EvalKernels::reference(CUstream s, const RefArgs& args, long long batch) const {
  RefArgs a = args;
  void* params[] = {&a};
  const auto gx = static_cast<unsigned>((args.m + 63) / 64);
  const auto gy = static_cast<unsigned>((args.n + 63) / 64);
  launch(reference_, "kd_reference", s, gx, gy, static_cast<unsigned>(batch), 16, 16, params);
}

void EvalKernels::ref_stats(CUstream s, CUdeviceptr ref, long long count, CUdeviceptr out) const {
  KD_CU_CHECK(cu().cuMemsetD8Async(out, 0, sizeof(RefStats), s), "ref stats");
  void* params[] = {&ref, &count, &out};
  launch(ref_stats_, "kd_ref_stats", s, grid_, 1, 1, kThreads, 1, params);
}

void EvalKernels::compare(CUstream s, const DeviceMatrix& out, CUdeviceptr ref, CUdeviceptr other,
                          double floor, CUdeviceptr stats) const {
  KD_CU_CHECK(cu().cuMemsetD8Async(stats, 0, sizeof(CompareStats), s), "compare stats");
  DeviceMatrix mx = out;
  void* params[] = {&mx, &ref, &other, &floor, &stats};
  launch(compare_, "kd_compare", s, grid_, 1, 1, kThreads, 1, params);
}

void EvalKernels::check_guards(CUstream s, const DeviceMatrix& body, std::uint64_t guard_bytes,
                               std::uint64_t body_bytes, CUdeviceptr stats) const {
  KD_CU_CHECK(cu().cuMemsetD8Async(stats, 0, sizeof(GuardStats), s), "guard stats");
  DeviceMatrix mx = body;
  long long g = static_cast<long long>(guard_bytes);
  long long b = static_cast<long long>(body_bytes);
  void* params[] = {&mx, &g, &b, &stats};
  launch(check_guards_, "kd_check_guards", s, grid_, 1, 1, kThreads, 1, params);
}

void EvalKernels::checksum(CUstream s, CUdeviceptr p, std::uint64_t bytes, CUdeviceptr out) const {
  KD_CU_CHECK(cu().cuMemsetD8Async(out, 0, sizeof(unsigned long long), s), "checksum");
  long long words = static_cast<long long>(bytes / 4);
  void* params[] = {&p, &words, &out};
  launch(checksum_, "kd_checksum", s, grid_, 1, 1, kThreads, 1, params);
}

void EvalKernels::late_copy(CUstream s, const Copy* copies, int count, long long delay_ns) const {
  // Mirrors KdLateCopies in eval_kernels_source.cpp.
  struct KdCopy {
    CUdeviceptr src, dst;
    long long bytes;
  };
  struct KdLateCopies {
    KdCopy c[kMaxLateCopies];
    int count;
    long long delay_ns;
  } p{};
  static_assert(sizeof(KdLateCopies) == 4 * 24 + 16);
  if (count < 0 || count > kMaxLateCopies) throw Error(ErrorDomain::usage, 0, "late_copy: at most 4 ranges");
  for (int i = 0; i < count; ++i)
    p.c[i] = {copies[i].src, copies[i].dst, static_cast<long long>(copies[i].bytes)};
  p.count = count;
  p.delay_ns = delay_ns;
  void* params[] = {&p};
  launch(late_copy_, "kd_late_copy", s, static_cast<unsigned>(std::max(1, sms_ / 2)), 1, 1, kThreads, 1, params);
}

void EvalKernels::stream_read(CUstream s, CUdeviceptr p0, std::uint64_t bytes0, CUdeviceptr p1,
                              std::uint64_t bytes1, CUdeviceptr sink) const {
  long long vecs0 = static_cast<long long>(bytes0 / 16), vecs1 = static_cast<long long>(bytes1 / 16);
  void* params[] = {&p0, &vecs0, &p1, &vecs1, &sink};
  launch(stream_read_, "kd_stream_read", s, static_cast<unsigned>(sms_ * 4), 1, 1, kThreads, 1, params);
}

void EvalKernels::clock_probe(CUstream s, CUdeviceptr out) const {
  void* params[] = {&out};
  launch(clock_probe_, "kd_clock_probe", s, 1, 1, 1, 1, 1, params);
}

}  // namespace kd::eval
