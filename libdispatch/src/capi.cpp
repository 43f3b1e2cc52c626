// The C API boundary: the only place in libkdispatch.so that catches exceptions. Contracts are in
// include/kdispatch/kdispatch.h.
#include "kdispatch/kdispatch.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "runtime/dispatcher.hpp"
#include "common/env.hpp"
#include "cuda/driver.hpp"
#include "key/gemm_desc.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "launch/cublas_fallback.hpp"
#include "launch/cuda_entry_loader.hpp"
#include "launch/launcher.hpp"
#include "protocol/messages.hpp"
#include "registry/epoch.hpp"
#include "store/cache_store.hpp"

namespace kd {
namespace {

static_assert(KD_FALLBACK_REASON_COUNT == kFallbackReasonCount);
static_assert(KD_FALLBACK_REASON_COUNT <= KD_FALLBACK_REASON_MAX);
static_assert(KD_FALLBACK_NO_ENTRY == static_cast<int>(FallbackReason::no_entry) &&
              KD_FALLBACK_CAPTURING == static_cast<int>(FallbackReason::capturing) &&
              KD_FALLBACK_FOREIGN_CONTEXT == static_cast<int>(FallbackReason::foreign_context) &&
              KD_FALLBACK_NOT_INITIALIZED == static_cast<int>(FallbackReason::not_initialized) &&
              KD_FALLBACK_VENDOR_CHOSEN == static_cast<int>(FallbackReason::vendor_chosen));

// Process state. g_dispatcher is what the hot path reads; init/shutdown hold g_init_mutex.
std::mutex g_init_mutex;
int g_refs = 0;
std::atomic<Dispatcher*> g_dispatcher{nullptr};
std::once_flag g_atfork_once;

// A forked child inherits the parent's memory but not its background thread: forget (leak) the
// parent's state so the child starts clean. The mutex is re-created because a parent thread may
// have held it at fork time.
void after_fork_in_child() {
  g_dispatcher.store(nullptr, std::memory_order_relaxed);
  g_refs = 0;
  new (&g_init_mutex) std::mutex();
}

void count_fallback(ThreadSlot* slot, FallbackReason r) noexcept {
  if (slot == nullptr) return;
  slot->bump(fallback_counter(r));
  if (kFallbackReasons[static_cast<std::size_t>(r)].is_miss)
    slot->bump(static_cast<std::size_t>(ThreadCounter::misses));
}

int fall_back(ThreadSlot* slot, FallbackReason r, kd_fallback_reason* out) noexcept {
  count_fallback(slot, r);
  if (out != nullptr) *out = static_cast<kd_fallback_reason>(r);
  return KD_FALLBACK;
}

// The calling thread's last stream and the context it belongs to. A stream never changes context, so
// the driver is asked once per stream change instead of once per call (cuStreamGetCtx measured
// 17 ns of a 75 ns hit). A stale pair (the stream destroyed and its handle reused in another
// context) can only select an entry of the wrong context, whose launch the driver rejects before
// anything runs: the call falls back (launch_failed) and launch() forgets the pair. The special
// handles (null, legacy, per-thread) name the current context, which cuCtxSetCurrent can change,
// so they always ask the driver (cuCtxGetCurrent, the cheaper call).
struct StreamContext {
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
};
thread_local StreamContext t_stream_ctx __attribute__((tls_model("initial-exec")));

bool names_current_context(CUstream s) noexcept {
  return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

CUresult context_of(const CudaDriver& d, CUstream stream, CUcontext* ctx) noexcept {
  if (names_current_context(stream)) {
    const CUresult rc = d.cuCtxGetCurrent(ctx);
    return rc == CUDA_SUCCESS && *ctx == nullptr ? CUDA_ERROR_INVALID_CONTEXT : rc;
  }
  StreamContext& c = t_stream_ctx;
  if (c.stream == stream && c.ctx != nullptr) {
    *ctx = c.ctx;
    return CUDA_SUCCESS;
  }
  const CUresult rc = d.cuStreamGetCtx(stream, ctx);
  if (rc == CUDA_SUCCESS) c = {stream, *ctx};
  return rc;
}

void forget_stream_context() noexcept { t_stream_ctx = {}; }

struct Found {
  int rc = KD_FALLBACK;
  const Entry* entry = nullptr;  // pinned when rc == KD_SUCCESS
  CUcontext ctx = nullptr;
};

// How a description reads as a call key.
enum class KeyRead : std::uint8_t { keyed, invalid, unsupported };

KeyRead read_gemm_key(const kd_gemm_desc& desc, CallKey& key) noexcept {
  switch (read_gemm_desc(desc, key)) {
    case KD_DESC_KEYABLE: return KeyRead::keyed;
    case KD_DESC_INVALID:
    case KD_DESC_SHAPE: return KeyRead::invalid;
    case KD_DESC_DATA_TYPE:
    case KD_DESC_COMPUTE_TYPE:
    case KD_DESC_BATCH_LAYOUT: return KeyRead::unsupported;
  }
  return KeyRead::invalid;
}

// A row call's description read as its RowShape (key/row_shape.hpp), by the rules parse_op_key
// applies to a row line (key/row_key.hpp). No allocation: it runs on every call.
kd_row_desc_problem read_row_desc(const kd_row_desc& d, RowShape& shape) noexcept {
  if (d.op < KD_ROW_RMSNORM || d.op > KD_ROW_SOFTMAX || d.dtype < KD_DTYPE_F16 || d.dtype > KD_DTYPE_F32 ||
      (d.has_weight != 0 && d.has_weight != 1) || (d.has_bias != 0 && d.has_bias != 1))
    return KD_ROW_DESC_INVALID;
  static_assert(KD_ROW_RMSNORM == static_cast<int>(RowOp::rmsnorm) &&
                KD_ROW_LAYERNORM == static_cast<int>(RowOp::layernorm) &&
                KD_ROW_SOFTMAX == static_cast<int>(RowOp::softmax));
  static_assert(KD_DTYPE_F16 == static_cast<int>(DType::f16) && KD_DTYPE_BF16 == static_cast<int>(DType::bf16) &&
                KD_DTYPE_F32 == static_cast<int>(DType::f32));
  shape = RowShape{};
  shape.op = static_cast<RowOp>(d.op);
  shape.dtype = static_cast<DType>(d.dtype);
  if ((d.has_weight != 0 && !takes_weight(shape.op)) || (d.has_bias != 0 && !takes_bias(shape.op)))
    return KD_ROW_DESC_OPERAND;
  shape.weight = d.has_weight != 0;
  shape.bias = d.has_bias != 0;
  shape.rows = d.rows;
  shape.cols = d.cols;
  if (d.rows < 1 || d.cols < 1) return KD_ROW_DESC_SHAPE;
  const auto elements_max = kMaxRowTensorBytes / static_cast<std::int64_t>(dtype_bytes(shape.dtype));
  if (d.rows > elements_max / d.cols) return KD_ROW_DESC_SHAPE;
  return KD_ROW_DESC_KEYABLE;
}

KeyRead read_row_key(const kd_row_desc& desc, CallKey& key) noexcept {
  RowShape shape;
  if (read_row_desc(desc, shape) != KD_ROW_DESC_KEYABLE) return KeyRead::invalid;
  key = row_call_key(shape, key.context);
  return KeyRead::keyed;
}

// The hit path shared by kd_gemm_lookup, kd_gemm, kd_row_lookup and kd_row: `read_key(key)` fills
// the key's shape (its context set) and says whether the call is keyed. No lock, allocation or
// system call.
template <class ReadKey>
Found lookup(CUstream stream, kd_fallback_reason* reason, ReadKey read_key) noexcept {
  Found f;
  Dispatcher* disp = g_dispatcher.load(std::memory_order_acquire);
  if (disp == nullptr) {
    f.rc = KD_ENOTINIT;
    return f;
  }
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  if (slot == nullptr) {
    f.rc = fall_back(nullptr, FallbackReason::too_many_threads, reason);
    return f;
  }
  const CudaDriver* d = cu_driver();
  if (d == nullptr) {
    f.rc = fall_back(slot, FallbackReason::no_gpu, reason);
    return f;
  }
  if (context_of(*d, stream, &f.ctx) != CUDA_SUCCESS) {
    f.rc = KD_EINVAL;
    return f;
  }
  CallKey key;
  key.context = reinterpret_cast<std::uintptr_t>(f.ctx);
  switch (read_key(key)) {
    case KeyRead::keyed: break;
    case KeyRead::invalid: f.rc = KD_EINVAL; return f;
    case KeyRead::unsupported: f.rc = fall_back(slot, FallbackReason::unsupported, reason); return f;
  }
  ReadGuard::enter(*slot);
  const Dispatcher::Lookup l = disp->lookup(key);
  if (l.entry != nullptr) {
    f.rc = KD_SUCCESS;
    f.entry = l.entry;
    return f;  // stays pinned until launch or release
  }
  ReadGuard::exit(*slot);
  FallbackReason r = l.reason;
  if (r == FallbackReason::not_loaded) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d->cuStreamIsCapturing(stream, &capture) == CUDA_SUCCESS &&
        capture != CU_STREAM_CAPTURE_STATUS_NONE)
      r = FallbackReason::capturing;
  }
  f.rc = fall_back(slot, r, reason);
  return f;
}

Found lookup(const kd_gemm_desc& desc, CUstream stream, kd_fallback_reason* reason) noexcept {
  return lookup(stream, reason, [&desc](CallKey& key) { return read_gemm_key(desc, key); });
}

Found lookup(const kd_row_desc& desc, CUstream stream, kd_fallback_reason* reason) noexcept {
  return lookup(stream, reason, [&desc](CallKey& key) { return read_row_key(desc, key); });
}

// The outcome of launch_entry or launch_row_entry, counted; the entry is unpinned.
int settle(const LaunchResult& r, ThreadSlot* slot, kd_fallback_reason* reason) noexcept {
  if (slot != nullptr) ReadGuard::exit(*slot);
  switch (r.status) {
    case LaunchResult::Status::launched:
      if (slot != nullptr) slot->bump(static_cast<std::size_t>(ThreadCounter::hits));
      return KD_SUCCESS;
    case LaunchResult::Status::fell_back:
      if (r.reason == FallbackReason::launch_failed) forget_stream_context();
      return fall_back(slot, r.reason, reason);
    case LaunchResult::Status::failed_midway:
      count_fallback(slot, FallbackReason::launch_failed);
      if (reason != nullptr) *reason = KD_FALLBACK_LAUNCH_FAILED;
      return KD_ECUDA;
  }
  return KD_ECUDA;
}

// Launches a pinned row entry and unpins it.
int launch_row(const Entry& entry, const kd_row_args& args, CUstream stream, kd_fallback_reason* reason) noexcept {
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  return settle(launch_row_entry(entry, args, stream), slot, reason);
}

// Launches a pinned entry and unpins it.
int launch(const Entry& entry, const kd_gemm_args& args, LentWorkspace lent, CUstream stream,
           kd_fallback_reason* reason) noexcept {
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  return settle(launch_entry(entry, args, lent, stream), slot, reason);
}

std::unique_ptr<Dispatcher> start_dispatcher(const kd_options* o) {
  DispatcherOptions opts;
  opts.cache_dir = o != nullptr && o->cache_dir != nullptr ? std::filesystem::path(o->cache_dir)
                                                           : default_cache_dir();
  const bool no_daemon = o != nullptr && (o->flags & KD_NO_DAEMON) != 0;
  if (!no_daemon)
    opts.socket_path = o != nullptr && o->socket_path != nullptr
                           ? std::filesystem::path(o->socket_path)
                           : protocol::daemon_socket_path(opts.cache_dir);
  if (o != nullptr && o->poll_interval_ms != 0)
    opts.poll_interval = std::chrono::milliseconds(o->poll_interval_ms);
  if (const CudaDriver* d = cu_driver()) opts.versions.driver_version = d->driver_version;
  const bool graph_workspace = (o != nullptr && (o->flags & KD_GRAPH_WORKSPACE) != 0) || env_flag("KD_GRAPH_WORKSPACE");
  return std::make_unique<Dispatcher>(std::move(opts), std::make_unique<CudaEntryLoader>(nullptr, graph_workspace));
}

struct CodeInfo {
  int code;
  const char* text;
};
constexpr CodeInfo kCodes[] = {
    {KD_SUCCESS, "KD_SUCCESS: success"},
    {KD_FALLBACK, "KD_FALLBACK: no tuned kernel can run this call; run the fallback"},
    {KD_EINVAL, "KD_EINVAL: invalid argument"},
    {KD_ENOTINIT, "KD_ENOTINIT: kd_init has not been called in this process"},
    {KD_ECUDA, "KD_ECUDA: a CUDA driver call failed"},
    {KD_ECUBLAS, "KD_ECUBLAS: cuBLAS could not be loaded or failed"},
    {KD_EUNSUPPORTED, "KD_EUNSUPPORTED: cuBLAS does not compute this type combination"},
    {KD_EINTERNAL, "KD_EINTERNAL: internal error"},
};

}  // namespace
}  // namespace kd

using namespace kd;

extern "C" KD_API const char* kd_version(int* major, int* minor, int* patch) {
  if (major) *major = KD_VERSION_MAJOR;
  if (minor) *minor = KD_VERSION_MINOR;
  if (patch) *patch = KD_VERSION_PATCH;
  return KD_VERSION_STRING;
}

extern "C" KD_API const char* kd_strerror(int code) {
  for (const CodeInfo& c : kCodes)
    if (c.code == code) return c.text;
  return "unknown kdispatch error code";
}

extern "C" KD_API const char* kd_fallback_reason_name(int reason) {
  if (reason < 0 || static_cast<std::size_t>(reason) >= kFallbackReasonCount) return "unknown";
  return kFallbackReasons[static_cast<std::size_t>(reason)].name.data();
}

extern "C" KD_API int kd_fallback_reason_is_miss(int reason) {
  if (reason < 0 || static_cast<std::size_t>(reason) >= kFallbackReasonCount) return 0;
  return kFallbackReasons[static_cast<std::size_t>(reason)].is_miss ? 1 : 0;
}

namespace {
void stop_background_at_exit() {
  if (Dispatcher* d = g_dispatcher.load(std::memory_order_acquire)) d->stop_background();
}
}  // namespace

extern "C" KD_API int kd_init(const kd_options* options) {
  try {
    std::call_once(g_atfork_once, [] {
      pthread_atfork(nullptr, nullptr, after_fork_in_child);
      // Registered after the application initialised CUDA (kd_init comes with its first GEMM), so
      // it runs before the application's exit handlers destroy contexts the thread may be using.
      // spdlog's registry (the default logger the background thread writes to) is built first for
      // the same reason: a static destroyed before this handler ran left the thread logging into a
      // freed logger at exit (a crash in about 1 in 150 runs of a short program).
      spdlog::default_logger();
      std::atexit(stop_background_at_exit);
    });
    std::lock_guard lock(g_init_mutex);
    if (g_refs > 0) {
      ++g_refs;
      return KD_SUCCESS;
    }
    // Before the dispatcher's writer thread starts, so that thread sees the fence mode.
    EpochDomain::enable_asymmetric_fence();
    g_dispatcher.store(start_dispatcher(options).release(), std::memory_order_release);
    g_refs = 1;
    return KD_SUCCESS;
  } catch (...) {
    return KD_EINTERNAL;
  }
}

extern "C" KD_API int kd_shutdown(void) {
  try {
    std::lock_guard lock(g_init_mutex);
    if (g_refs == 0) return KD_ENOTINIT;
    if (--g_refs > 0) return KD_SUCCESS;
    std::unique_ptr<Dispatcher> d(g_dispatcher.exchange(nullptr, std::memory_order_acq_rel));
    d.reset();
    return KD_SUCCESS;
  } catch (...) {
    return KD_EINTERNAL;
  }
}

extern "C" KD_API kd_gemm_desc_problem kd_gemm_desc_check(const kd_gemm_desc* desc) {
  if (desc == nullptr) return KD_DESC_INVALID;
  GemmShape shape;
  return read_gemm_desc(*desc, shape);
}

// Every line parse_key accepts fits, and a shape line of int64 values is far shorter than that.
static_assert(KD_KEY_LINE_BYTES > kMaxKeyLineBytes);

extern "C" KD_API int kd_gemm_desc_key_line(const kd_gemm_desc* desc, char* line, size_t line_bytes) {
  if (desc == nullptr || line == nullptr) return KD_EINVAL;
  GemmShape shape;
  if (read_gemm_desc(*desc, shape) != KD_DESC_KEYABLE) return KD_EINVAL;
  try {
    const std::string text = shape_line(shape);
    if (text.size() >= line_bytes) return KD_EINVAL;
    std::memcpy(line, text.c_str(), text.size() + 1);
    return KD_SUCCESS;
  } catch (...) {
    return KD_EINTERNAL;
  }
}

extern "C" KD_API int kd_gemm_lookup(const kd_gemm_desc* desc, CUstream stream,
                                     const kd_entry** entry, kd_fallback_reason* reason) {
  if (desc == nullptr || entry == nullptr) return KD_EINVAL;
  *entry = nullptr;
  const Found f = lookup(*desc, stream, reason);
  if (f.rc == KD_SUCCESS) *entry = reinterpret_cast<const kd_entry*>(f.entry);
  return f.rc;
}

extern "C" KD_API int kd_gemm_launch(const kd_entry* entry, const kd_gemm_args* args,
                                     CUstream stream, kd_fallback_reason* reason) {
  if (entry == nullptr) return KD_EINVAL;
  if (args == nullptr) {
    kd_gemm_release(entry);
    return KD_EINVAL;
  }
  return launch(*reinterpret_cast<const Entry*>(entry), *args, {}, stream, reason);
}

extern "C" KD_API int kd_gemm_launch_with_workspace(const kd_entry* entry, const kd_gemm_args* args,
                                                    void* workspace, size_t workspace_bytes,
                                                    CUstream stream, kd_fallback_reason* reason) {
  if (entry == nullptr) return KD_EINVAL;
  if (args == nullptr) {
    kd_gemm_release(entry);
    return KD_EINVAL;
  }
  const LentWorkspace lent = workspace != nullptr && workspace_bytes > 0
                                 ? LentWorkspace{reinterpret_cast<CUdeviceptr>(workspace), workspace_bytes}
                                 : LentWorkspace{};
  return launch(*reinterpret_cast<const Entry*>(entry), *args, lent, stream, reason);
}

extern "C" KD_API void kd_gemm_release(const kd_entry* entry) {
  if (entry == nullptr) return;
  if (ThreadSlot* slot = EpochDomain::instance().this_thread()) ReadGuard::exit(*slot);
}

extern "C" KD_API int kd_gemm(kd_op ta, kd_op tb, int64_t m, int64_t n, int64_t k,
                              const float* alpha, const void* A, kd_dtype a_type, int64_t lda,
                              const void* B, kd_dtype b_type, int64_t ldb, const float* beta,
                              void* C, kd_dtype c_type, int64_t ldc, kd_compute compute,
                              kd_math math, CUstream stream) {
  if (alpha == nullptr || beta == nullptr || A == nullptr || B == nullptr || C == nullptr)
    return KD_EINVAL;
  kd_gemm_desc desc{};
  desc.ta = ta;
  desc.tb = tb;
  desc.m = m;
  desc.n = n;
  desc.k = k;
  desc.lda = lda;
  desc.ldb = ldb;
  desc.ldc = ldc;
  desc.batch = 1;
  desc.a_type = a_type;
  desc.b_type = b_type;
  desc.c_type = c_type;
  desc.compute = compute;
  desc.math = math;
  desc.epilogue = KD_EPILOGUE_NONE;
  desc.beta_zero = *beta == 0.0f ? 1 : 0;

  const Found f = lookup(desc, stream, nullptr);
  if (f.rc == KD_ENOTINIT || f.rc == KD_EINVAL) return f.rc;
  if (f.rc == KD_SUCCESS) {
    kd_gemm_args args{};
    args.a = A;
    args.b = B;
    args.c = C;
    args.m = m;
    args.n = n;
    args.k = k;
    args.lda = lda;
    args.ldb = ldb;
    args.ldc = ldc;
    args.batch = 1;
    args.alpha = *alpha;
    args.beta = *beta;
    const int rc = launch(*f.entry, args, {}, stream, nullptr);
    if (rc != KD_FALLBACK) return rc;  // launched, or failed midway (not safe to recompute)
  }
  if (cu_driver() == nullptr) return KD_ECUDA;
  switch (cublas_gemm({desc, alpha, beta, A, B, C}, f.ctx, stream)) {
    case CublasStatus::ok: return KD_SUCCESS;
    case CublasStatus::unsupported: return KD_EUNSUPPORTED;
    case CublasStatus::unavailable:
    case CublasStatus::failed: return KD_ECUBLAS;
  }
  return KD_ECUBLAS;
}

extern "C" KD_API kd_row_desc_problem kd_row_desc_check(const kd_row_desc* desc) {
  if (desc == nullptr) return KD_ROW_DESC_INVALID;
  RowShape shape;
  return read_row_desc(*desc, shape);
}

extern "C" KD_API int kd_row_desc_key_line(const kd_row_desc* desc, char* line, size_t line_bytes) {
  if (desc == nullptr || line == nullptr) return KD_EINVAL;
  RowShape shape;
  if (read_row_desc(*desc, shape) != KD_ROW_DESC_KEYABLE) return KD_EINVAL;
  try {
    const std::string text = RowKey{shape, std::nullopt}.shape_line();
    if (text.size() >= line_bytes) return KD_EINVAL;
    std::memcpy(line, text.c_str(), text.size() + 1);
    return KD_SUCCESS;
  } catch (...) {
    return KD_EINTERNAL;
  }
}

extern "C" KD_API int kd_row_lookup(const kd_row_desc* desc, CUstream stream, const kd_entry** entry,
                                    kd_fallback_reason* reason) {
  if (desc == nullptr || entry == nullptr) return KD_EINVAL;
  *entry = nullptr;
  const Found f = lookup(*desc, stream, reason);
  if (f.rc == KD_SUCCESS) *entry = reinterpret_cast<const kd_entry*>(f.entry);
  return f.rc;
}

extern "C" KD_API int kd_row_launch(const kd_entry* entry, const kd_row_args* args, CUstream stream,
                                    kd_fallback_reason* reason) {
  if (entry == nullptr) return KD_EINVAL;
  const Entry& e = *reinterpret_cast<const Entry*>(entry);
  if (args == nullptr || args->reserved != 0 || !is_row_call(e.key)) {
    kd_gemm_release(entry);
    return KD_EINVAL;
  }
  return launch_row(e, *args, stream, reason);
}

extern "C" KD_API int kd_row(const kd_row_desc* desc, const void* x, const void* weight, const void* bias,
                             void* y, float eps, CUstream stream, kd_fallback_reason* reason) {
  if (desc == nullptr || x == nullptr || y == nullptr || (weight != nullptr) != (desc->has_weight != 0) ||
      (bias != nullptr) != (desc->has_bias != 0))
    return KD_EINVAL;
  const Found f = lookup(*desc, stream, reason);
  if (f.rc != KD_SUCCESS) return f.rc;
  kd_row_args args{};
  args.x = x;
  args.weight = weight;
  args.bias = bias;
  args.y = y;
  args.rows = desc->rows;
  args.cols = desc->cols;
  args.eps = eps;
  return launch_row(*f.entry, args, stream, reason);
}

extern "C" KD_API int kd_stats(kd_stats_t* out) {
  if (out == nullptr) return KD_EINVAL;
  try {
    *out = kd_stats_t{};
    const auto t = EpochDomain::instance().counter_totals();
    out->hits = t[static_cast<std::size_t>(ThreadCounter::hits)];
    out->misses = t[static_cast<std::size_t>(ThreadCounter::misses)];
    for (std::size_t r = 0; r < kFallbackReasonCount; ++r) out->fallbacks[r] = t[fallback_counter(static_cast<FallbackReason>(r))];
    const DispatcherCounters& c = dispatcher_counters();
    out->loads = c.loads.load(std::memory_order_relaxed);
    out->load_failures = c.load_failures.load(std::memory_order_relaxed);
    out->swaps = c.swaps.load(std::memory_order_relaxed);
    out->reports_queued = c.reports_queued.load(std::memory_order_relaxed);
    out->reports_dropped = c.reports_dropped.load(std::memory_order_relaxed);
    out->reports_sent = c.reports_sent.load(std::memory_order_relaxed);
    out->generation = c.generation.load(std::memory_order_relaxed);
    out->entries = c.entries.load(std::memory_order_relaxed);
    out->daemon_connected = static_cast<int>(c.daemon_connected.load(std::memory_order_relaxed));
    return KD_SUCCESS;
  } catch (...) {
    return KD_EINTERNAL;
  }
}
