// kdispatch.torch's native overrides: the CUDA kernels of aten::native_layer_norm, aten::_softmax and
// aten::_fused_rms_norm replaced by C++ kernels that ask kdispatch first (kd_row_lookup) and launch
// the tuned kernel on a hit, or call torch's own CUDA kernel (at::cuda::*) on a fallback and on every
// call kdispatch does not cover. The same rules as the Python overrides in torch.py, at the host
// cost of torch's own kernels: an eager program that is host-bound pays a few hundred nanoseconds
// per routed call instead of the Python overrides' 15-20 us.
//
// Built by kdispatch/_native.py against the running torch (its headers, libraries and C++ ABI) and
// loaded with ctypes; libkdispatch.so is not linked: its entry points arrive as pointers through
// kd_torch_native_enable, so this library stays bound to the libkdispatch.so that kdispatch.load()
// opened.
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/_softmax_cuda_dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/native_layer_norm_cuda_dispatch.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#if __has_include(<ATen/ops/_fused_rms_norm_cuda_dispatch.h>)
#include <ATen/ops/_fused_rms_norm_cuda_dispatch.h>
#define KD_HAS_FUSED_RMS_NORM 1
#endif

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

// The C ABI of kdispatch.h's kd_row_desc and rowop.cuh's kd_row_args (frozen layouts; Python checks
// the sizes it knows before enabling).
struct RowDesc {
  int op;
  int dtype;
  int64_t rows;
  int64_t cols;
  int has_weight;
  int has_bias;
};
struct RowArgs {
  const void* x;
  const void* weight;
  const void* bias;
  void* y;
  void* workspace;
  long long rows, cols;
  float eps;
  int reserved;
};
static_assert(sizeof(RowDesc) == 32 && sizeof(RowArgs) == 64, "kdispatch's C ABI");

}  // namespace

// What Python hands over: libkdispatch.so's entry points and the enums' numbers.
struct kd_torch_native_api {
  int (*row_lookup)(const RowDesc*, void* stream, const void** entry, int* reason);
  int (*row_launch)(const void* entry, const RowArgs*, void* stream, int* reason);
  void (*release)(const void* entry);
  int success;      // KD_SUCCESS
  int fallback;     // KD_FALLBACK
  int ops[3];       // rmsnorm, layernorm, softmax
  int dtypes[3];    // f16, bf16, f32
};

namespace {

constexpr int kReasons = 32;  // KD_FALLBACK_REASON_MAX
constexpr int kCodes = 32;    // other return codes, by absolute value

// Why a call went to torch's kernel without asking kdispatch; the names Python reports.
// The order is Python's UNCOVERED list in _native.py.
enum Uncovered : int { kGrad, kShape, kDtype, kDevice, kLayout, kMixedDtype, kEmpty, kHalfToFloat, kDim, kUncovered };

struct Counts {
  std::atomic<uint64_t> hits{0};
  std::array<std::atomic<uint64_t>, kReasons> fallbacks{};
  std::array<std::atomic<uint64_t>, kCodes> codes{};
  std::array<std::atomic<uint64_t>, kUncovered> uncovered{};
};

kd_torch_native_api g_api{};
Counts g_counts;
std::unique_ptr<torch::Library> g_library;

enum Op : int { kRmsNorm, kLayerNorm, kSoftmax };

void count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

bool not_covered(Uncovered why) {
  count(g_counts.uncovered[why]);
  return false;
}

void count_fallback(int rc, int reason) {
  if (rc == g_api.fallback && reason >= 0 && reason < kReasons)
    count(g_counts.fallbacks[reason]);
  else
    count(g_counts.codes[std::min(rc < 0 ? -rc : rc, kCodes - 1)]);
}

bool grad_needed(const at::Tensor& x, const at::Tensor* w, const at::Tensor* b) {
  return at::GradMode::is_enabled() &&
         (x.requires_grad() || (w != nullptr && w->requires_grad()) || (b != nullptr && b->requires_grad()));
}

const at::Tensor* present(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined() ? &*t : nullptr; }

// kdispatch's dtype number for x when x and every present parameter are contiguous CUDA tensors of
// x's dtype on x's device; nullopt (counted) otherwise.
std::optional<int> row_dtype(const at::Tensor& x, const at::Tensor* w, const at::Tensor* b) {
  int dt;
  switch (x.scalar_type()) {
    case at::kHalf: dt = g_api.dtypes[0]; break;
    case at::kBFloat16: dt = g_api.dtypes[1]; break;
    case at::kFloat: dt = g_api.dtypes[2]; break;
    default: not_covered(kDtype); return std::nullopt;
  }
  if (!x.is_cuda()) return not_covered(kDevice), std::nullopt;
  if (!x.is_contiguous()) return not_covered(kLayout), std::nullopt;
  for (const at::Tensor* p : {w, b}) {
    if (p == nullptr) continue;
    if (p->scalar_type() != x.scalar_type()) return not_covered(kMixedDtype), std::nullopt;
    if (!p->is_contiguous() || p->device() != x.device()) return not_covered(kLayout), std::nullopt;
  }
  return dt;
}

// Releases a pinned entry unless it was handed to a launch (which unpins it).
struct Pin {
  const void* entry = nullptr;
  ~Pin() {
    if (entry != nullptr) g_api.release(entry);
  }
};

// y from the tuned kernel on x's device's current stream, or nullopt: run torch's kernel.
std::optional<at::Tensor> run(Op op, int dt, const at::Tensor& x, const at::Tensor* w, const at::Tensor* b,
                              int64_t cols, double eps) {
  const int64_t rows = cols > 0 ? x.numel() / cols : 0;
  if (rows < 1 || cols < 1) return not_covered(kEmpty), std::nullopt;
  const RowDesc desc{g_api.ops[op], dt, rows, cols, w != nullptr, b != nullptr};
  void* stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(x.device()).native_handle();
  Pin pin;
  int reason = -1;
  int rc = g_api.row_lookup(&desc, stream, &pin.entry, &reason);
  if (rc != g_api.success) {
    pin.entry = nullptr;
    count_fallback(rc, reason);
    return std::nullopt;
  }
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  RowArgs args{};
  args.x = x.const_data_ptr();
  args.weight = w != nullptr ? w->const_data_ptr() : nullptr;
  args.bias = b != nullptr ? b->const_data_ptr() : nullptr;
  args.y = y.data_ptr();
  args.rows = rows;
  args.cols = cols;
  args.eps = static_cast<float>(eps);
  const void* entry = pin.entry;
  pin.entry = nullptr;  // the launch unpins it, whatever it returns
  rc = g_api.row_launch(entry, &args, stream, &reason);
  if (rc != g_api.success) {
    count_fallback(rc, reason);
    return std::nullopt;
  }
  count(g_counts.hits);
  return y;
}

bool trailing_shape_is(const at::Tensor& x, at::IntArrayRef normalized) {
  const int64_t n = static_cast<int64_t>(normalized.size());
  return n >= 1 && n <= x.dim() && x.sizes().slice(x.dim() - n).equals(normalized);
}

int64_t product(at::IntArrayRef s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// mean/rstd placeholders: not computed (autograd does not need them here, and layer_norm and
// rms_norm discard them), shaped and typed as torch's.
at::Tensor stat_like(const at::Tensor& x, int64_t normalized_ndim) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - normalized_ndim);
  shape.resize(x.dim(), 1);
  const bool reduced = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
  return at::empty(shape, x.options().dtype(reduced ? at::kFloat : x.scalar_type()));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor& x, at::IntArrayRef normalized_shape,
                                                          const std::optional<at::Tensor>& weight,
                                                          const std::optional<at::Tensor>& bias, double eps) {
  const at::Tensor* w = present(weight);
  const at::Tensor* b = present(bias);
  if (grad_needed(x, w, b)) {
    not_covered(kGrad);
  } else if (!trailing_shape_is(x, normalized_shape)) {
    not_covered(kShape);
  } else if (const auto dt = row_dtype(x, w, b)) {
    if (auto y = run(kLayerNorm, *dt, x, w, b, product(normalized_shape), eps)) {
      at::Tensor stat = stat_like(x, static_cast<int64_t>(normalized_shape.size()));
      return {std::move(*y), stat, at::empty_like(stat)};
    }
  }
  return at::cuda::native_layer_norm(x, normalized_shape, weight, bias, eps);
}

at::Tensor softmax(const at::Tensor& x, int64_t dim, bool half_to_float) {
  if (half_to_float) {
    not_covered(kHalfToFloat);
  } else if (x.dim() == 0 || (dim != -1 && dim != x.dim() - 1)) {
    not_covered(kDim);
  } else if (const auto dt = row_dtype(x, nullptr, nullptr)) {
    if (auto y = run(kSoftmax, *dt, x, nullptr, nullptr, x.size(-1), 0.0)) return std::move(*y);
  }
  return at::cuda::_softmax(x, dim, half_to_float);
}

#ifdef KD_HAS_FUSED_RMS_NORM
std::tuple<at::Tensor, at::Tensor> rms_norm(const at::Tensor& x, at::IntArrayRef normalized_shape,
                                            const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  const at::Tensor* w = present(weight);
  if (grad_needed(x, w, nullptr)) {
    not_covered(kGrad);
  } else if (!trailing_shape_is(x, normalized_shape)) {
    not_covered(kShape);
  } else if (const auto dt = row_dtype(x, w, nullptr)) {
    // torch's default eps: the epsilon of the f32 arithmetic of every routed dtype.
    const double e = eps.has_value() ? *eps : std::numeric_limits<float>::epsilon();
    if (auto y = run(kRmsNorm, *dt, x, w, nullptr, product(normalized_shape), e))
      return {std::move(*y), stat_like(x, static_cast<int64_t>(normalized_shape.size()))};
  }
  return at::cuda::_fused_rms_norm(x, normalized_shape, weight, eps);
}
#endif

// Drops the dispatcher's "Overriding a previously registered kernel" warning while the overrides
// register (replacing torch's CUDA kernels is what enable() asks for); passes every other warning on.
struct QuietOverride final : c10::WarningHandler {
  c10::WarningHandler* next = c10::WarningUtils::get_warning_handler();
  void process(const c10::Warning& w) override {
    if (w.msg().find("Overriding a previously registered kernel") == std::string::npos) next->process(w);
  }
};

void copy_error(const char* what, char* err, size_t err_len) {
  if (err == nullptr || err_len == 0) return;
  std::strncpy(err, what, err_len - 1);
  err[err_len - 1] = '\0';
}

}  // namespace

// Registers the overrides (replacing earlier ones) and writes the routed operators' names,
// comma-separated, into `routed`. Returns 0, or -1 with the reason in `err`.
extern "C" int kd_torch_native_enable(const kd_torch_native_api* api, char* routed, size_t routed_len, char* err,
                                      size_t err_len) {
  try {
    g_library.reset();
    g_api = *api;
    QuietOverride quiet;
    c10::WarningUtils::WarningHandlerGuard guard(&quiet);
    auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CUDA, __FILE__,
                                                __LINE__);
    std::string names = "native_layer_norm,_softmax";
    lib->impl("native_layer_norm", TORCH_FN(layer_norm));
    lib->impl("_softmax", TORCH_FN(softmax));
#ifdef KD_HAS_FUSED_RMS_NORM
    lib->impl("_fused_rms_norm", TORCH_FN(rms_norm));
    names += ",_fused_rms_norm";
#endif
    g_library = std::move(lib);
    copy_error(names.c_str(), routed, routed_len);
    return 0;
  } catch (const std::exception& e) {
    g_library.reset();
    copy_error(e.what(), err, err_len);
    return -1;
  }
}

// Removes the overrides: torch's own kernels run again.
extern "C" void kd_torch_native_disable() { g_library.reset(); }

// The counts since load: hits, fallbacks[32] by kd_fallback_reason, codes[32] by |return code| (31:
// any larger), uncovered[n] in the order of Uncovered; returns n.
extern "C" int kd_torch_native_counts(uint64_t* hits, uint64_t* fallbacks, uint64_t* codes, uint64_t* uncovered) {
  *hits = g_counts.hits.load(std::memory_order_relaxed);
  for (int i = 0; i < kReasons; ++i) fallbacks[i] = g_counts.fallbacks[i].load(std::memory_order_relaxed);
  for (int i = 0; i < kCodes; ++i) codes[i] = g_counts.codes[i].load(std::memory_order_relaxed);
  for (int i = 0; i < kUncovered; ++i) uncovered[i] = g_counts.uncovered[i].load(std::memory_order_relaxed);
  return kUncovered;
}
