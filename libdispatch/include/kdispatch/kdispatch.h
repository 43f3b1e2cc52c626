/* kdispatch C API: a persistent autotuning cache for GPU GEMM dispatch.
 *
 * Link libkdispatch.so and include this header. A call is looked up by its shape, types, layout,
 * precision class and GPU; a hit launches a tuned kernel from the cache (LMDB, written only by the
 * kdispatchd daemon); a miss runs cuBLAS and reports the shape to the daemon, which may later
 * publish a faster kernel that running processes hot-swap in.
 *
 * @section rules General rules
 *
 * - Nothing in this API throws, aborts or exits. Every function that can fail returns an int code
 *   (KD_SUCCESS or one of the KD_E* codes below); kd_strerror() describes it.
 * - The failure rule: whatever goes wrong inside kdispatch (no daemon, unreadable cache, corrupted
 *   record, unknown GPU, misaligned pointers, ...) makes kd_gemm run cuBLAS and count the reason
 *   (kd_stats); it never changes results beyond the call's precision class.
 * - Threads: every function is thread-safe except kd_init and kd_shutdown, which must not run
 *   concurrently with any other kd_* call on the same process. The functions that read no process
 *   state are excepted: kd_version, kd_strerror, kd_fallback_reason_name,
 *   kd_fallback_reason_is_miss, kd_gemm_desc_check, kd_gemm_desc_key_line, kd_row_desc_check and
 *   kd_row_desc_key_line.
 * - The hit path (kd_gemm_lookup + kd_gemm_launch, and kd_gemm on a hit) takes no lock, allocates
 *   nothing and makes no system call besides the CUDA driver calls cuStreamGetCtx and
 *   cuLaunchKernel or cuLaunchKernelEx (and cuStreamIsCapturing for a record with a workspace). A thread's first call
 *   claims one of 1024 per-thread slots (no allocation); a 1025th concurrent thread always falls
 *   back (KD_FALLBACK_TOO_MANY_THREADS).
 * - Calling threads never compile, load modules, allocate device memory (a capture's workspace,
 *   under Caveats, is a graph node) or synchronize: modules load on a background thread started by
 *   kd_init, in the device's primary context. Until an entry is loaded its calls fall back
 *   (KD_FALLBACK_NOT_LOADED). While a stream captures a CUDA graph, a loaded entry launches
 *   normally (the kernel is captured); one not loaded falls back.
 * - Contexts: tuned kernels run only on streams of a device's primary context (what the CUDA
 *   runtime uses). Other contexts fall back (KD_FALLBACK_FOREIGN_CONTEXT).
 * - Fork: a child process inherits no kdispatch state. In the child, calls other than those that
 *   read no process state (above) return KD_ENOTINIT until the child calls kd_init itself (CUDA's
 *   own fork rules apply: a child of a process that initialised CUDA cannot use CUDA).
 *
 * @section caveats Caveats
 *
 * - Replaced modules and workspaces are kept loaded until kd_shutdown: a kernel queued on a stream,
 *   or captured into a CUDA graph, may use them after the launch call returned. kd_shutdown
 *   synchronizes each context it loaded into and unloads them: destroy any CUDA graph that
 *   captured a tuned kernel before calling kd_shutdown (or do not call it; process exit is fine).
 * - A tuned kernel whose record asks for a workspace (split-K partials, a per-call split of an
 *   operand, cuBLASLt split-K) uses, in this order:
 *   1. the caller's workspace, lent with kd_gemm_launch_with_workspace (the shim lends the buffer
 *      of cublasSetWorkspace_v2 or cublasLtMatmul's workspace argument), when it is large enough
 *      and 256-byte aligned: on any stream, and under stream capture (the graph keeps the pointer,
 *      as cuBLAS's own captured kernels do; such graphs may be replayed, cloned or nested);
 *   2. otherwise, outside a capture, one buffer per entry, owned by the first stream that launches
 *      it; calls on other streams fall back (KD_FALLBACK_WORKSPACE_BUSY);
 *   3. otherwise, under capture, only with KD_GRAPH_WORKSPACE (kd_options.flags, or
 *      KD_GRAPH_WORKSPACE=1 in the environment): the call gives its graph a workspace of its own, a
 *      stream-ordered allocation before the kernels and its free after them, captured as graph
 *      memory nodes. CUDA forbids cloning such a graph, instantiating it twice at once, or nesting
 *      it as a child graph (as XLA's command buffers do), which is why it is not the default.
 *      Without it the call falls back: KD_FALLBACK_WORKSPACE_TOO_SMALL when a lent workspace was
 *      too small, KD_FALLBACK_CAPTURING when none was lent.
 * - kd_gemm's first miss on a thread (per context) creates a cuBLAS handle, loading libcublas.so.13
 *   on the first one in the process: that call allocates and is slow. Later misses reuse it.
 */
#ifndef KDISPATCH_KDISPATCH_H
#define KDISPATCH_KDISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "kdispatch/gemm.cuh"  /* struct kd_gemm_args: the kernel argument struct */
#include "kdispatch/rowop.cuh" /* struct kd_row_args: a row operator's kernel argument struct */

#if defined(__GNUC__) || defined(__clang__)
#define KD_API __attribute__((visibility("default")))
#else
#define KD_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup version Version */
#define KD_VERSION_MAJOR 0
#define KD_VERSION_MINOR 1
#define KD_VERSION_PATCH 0
#define KD_VERSION_STRING "0.1.0"
/* Combine the version into one number for comparisons. */
#define KD_VERSION_FULL(a, b, c) (((a) << 24) | ((b) << 16) | (c))

/* Returns the library's version string ("0.1.0") and stores its parts where the pointers are not
 * NULL. Thread-safe; the string is static. Usable without kd_init, in any process. */
KD_API const char* kd_version(int* major, int* minor, int* patch);

/** @defgroup errors Return codes
 * Numbers are never reused. */
#define KD_SUCCESS 0
/* kd_gemm_lookup/kd_gemm_launch: no tuned kernel can run this call; the caller must run its
 * fallback (cuBLAS). The reason is stored in *reason and counted. Not an error. */
#define KD_FALLBACK 1
/* An argument is invalid (NULL where a pointer is required, an enum out of range, a dimension
 * < 1, a leading dimension too small). Nothing was launched. */
#define KD_EINVAL 2
/* kd_init has not been called in this process (or kd_shutdown released it). */
#define KD_ENOTINIT 3
/* A CUDA driver call failed (no driver, or an error such as a sticky launch failure). For
 * kd_gemm_launch: a plan of several launches failed after the first one ran, so C may be
 * partially written and falling back is not safe. */
#define KD_ECUDA 4
/* kd_gemm needed cuBLAS and libcublas.so.13 could not be loaded, or a cuBLAS call failed. */
#define KD_ECUBLAS 5
/* kd_gemm was given a combination cuBLAS does not compute (e.g. f32 inputs with compute f16). */
#define KD_EUNSUPPORTED 6
/* kd_init: the background thread or the cache could not be set up; or an unexpected internal
 * failure (out of host memory). */
#define KD_EINTERNAL 7

/* A static description of `code` ("KD_FALLBACK: no tuned kernel for this call ..."); for unknown
 * codes, "unknown kdispatch error code". Thread-safe; usable without kd_init. */
KD_API const char* kd_strerror(int code);

/** @defgroup reasons Fallback reasons
 * Why a call did not run a tuned kernel; each is counted in kd_stats.fallbacks[reason]. Numbers
 * are never reused; new reasons get new numbers below KD_FALLBACK_REASON_MAX. */
typedef enum kd_fallback_reason {
  KD_FALLBACK_NO_ENTRY = 0,          /* the cache has no record for this call */
  KD_FALLBACK_NOT_LOADED = 1,        /* first seen, or being loaded on the background thread */
  KD_FALLBACK_CAPTURING = 2,         /* stream capturing and the entry cannot launch now */
  KD_FALLBACK_MISALIGNED = 3,        /* a, b, c or bias below the record's required alignment */
  KD_FALLBACK_UNSUPPORTED = 4,       /* a call kdispatch does not handle */
  KD_FALLBACK_CACHE_UNAVAILABLE = 5, /* no cache directory, unreadable, or LMDB error */
  KD_FALLBACK_LAUNCH_FAILED = 6,     /* cuLaunchKernel failed before anything ran */
  KD_FALLBACK_CORRUPTED = 7,         /* the record failed its checksum or did not parse */
  KD_FALLBACK_FOREIGN_RECORD = 8,    /* record for another GPU, schema, driver or cuBLAS major */
  KD_FALLBACK_LOAD_FAILED = 9,       /* module load or workspace allocation failed */
  KD_FALLBACK_FOREIGN_CONTEXT = 10,  /* the stream is not in its device's primary context */
  KD_FALLBACK_WORKSPACE_BUSY = 11,   /* the entry's workspace belongs to another stream */
  KD_FALLBACK_NO_GPU = 12,           /* no CUDA driver or device */
  KD_FALLBACK_TOO_MANY_THREADS = 13, /* more than 1024 threads calling at once */
  KD_FALLBACK_NOT_INITIALIZED = 14,  /* kd_init not called (only counted by kd_gemm) */
  KD_FALLBACK_WORKSPACE_TOO_SMALL = 15, /* capturing, and the lent workspace is smaller than the
                                           record needs (or misaligned) */
  KD_FALLBACK_VENDOR_CHOSEN = 16,    /* a vendor verdict: this shape (or its bucket of n) was
                                        searched and the vendor library stayed the fastest; run it.
                                        The cache's answer, not a miss: nothing is reported */
  KD_FALLBACK_REASON_COUNT = 17,
  KD_FALLBACK_REASON_MAX = 32 /* size of kd_stats.fallbacks: room for new reasons */
} kd_fallback_reason;

/* The reason's name ("no_entry", ...), or "unknown". Thread-safe; usable without kd_init. */
KD_API const char* kd_fallback_reason_name(int reason);

/* 1 when kd_stats counts `reason` as a miss too: the lookup found nothing usable, so the call's
 * shape belongs in a prewarm list. 0 for the launch-stage reasons (misaligned, launch_failed,
 * workspace_busy, workspace_too_small: a tuned kernel exists), for vendor_chosen (the cache
 * answered: run the vendor library) and for unknown numbers.
 * Thread-safe; usable without kd_init. */
KD_API int kd_fallback_reason_is_miss(int reason);

/** @defgroup init Initialisation */

/* kd_options.flags */
#define KD_NO_DAEMON 0x1 /* do not connect to kdispatchd; only poll the cache generation */
#define KD_GRAPH_WORKSPACE 0x2 /* records with a workspace run under stream capture (Caveats); also
                                  set by KD_GRAPH_WORKSPACE=1 in the environment */

typedef struct kd_options {
  const char* cache_dir;     /* NULL: $KD_CACHE_DIR, else $XDG_CACHE_HOME/kdispatch, else
                                ~/.cache/kdispatch. Opened read-only; it need not exist yet. */
  const char* socket_path;   /* NULL: $KD_SOCKET, else $XDG_RUNTIME_DIR/kdispatch.sock, else
                                <cache dir>/kdispatch.sock */
  unsigned flags;            /* KD_NO_DAEMON | KD_GRAPH_WORKSPACE */
  unsigned poll_interval_ms; /* generation polling while no daemon is connected; 0: 1000 */
} kd_options;

/* Starts kdispatch in this process: opens the cache read-only and starts the background thread
 * (which connects to the daemon when there is one, and otherwise logs once, retries with backoff
 * and polls the cache). `options` may be NULL for the defaults.
 *
 * Reference counted: each successful kd_init must be matched by one kd_shutdown; calls after the
 * first ignore `options` and only count. Works without a GPU or driver (every call then falls
 * back with KD_FALLBACK_NO_GPU).
 * Returns KD_SUCCESS, or KD_EINTERNAL when the background thread cannot start.
 * Not thread-safe against other kd_* calls (see the general rules). */
KD_API int kd_init(const kd_options* options);

/* Drops one kd_init reference; the last one stops the background thread, synchronizes each CUDA
 * context it loaded modules into, unloads them and frees workspaces (see caveats). No kd_* call
 * may run concurrently, and no entry from kd_gemm_lookup may still be held. Returns KD_SUCCESS,
 * or KD_ENOTINIT when there was no reference. */
KD_API int kd_shutdown(void);

/** @defgroup gemm GEMM */

typedef enum kd_op { KD_OP_N = 0, KD_OP_T = 1 } kd_op;
typedef enum kd_dtype { KD_DTYPE_F16 = 0, KD_DTYPE_BF16 = 1, KD_DTYPE_F32 = 2 } kd_dtype;
typedef enum kd_compute { KD_COMPUTE_F16 = 0, KD_COMPUTE_F32 = 1 } kd_compute;
/* The cuBLAS handle's math mode: TF32_ALLOWED for CUBLAS_TF32_TENSOR_OP_MATH or the compute
 * type CUBLAS_COMPUTE_32F_FAST_TF32; DEFAULT otherwise. With compute f32 and f32 inputs it selects
 * the precision class (strict fp32 vs TF32 allowed); f16 and bf16 values are exact in TF32, so
 * 16-bit inputs keep the strict class whatever the math mode. */
typedef enum kd_math { KD_MATH_DEFAULT = 0, KD_MATH_TF32_ALLOWED = 1 } kd_math;
typedef enum kd_epilogue { KD_EPILOGUE_NONE = 0, KD_EPILOGUE_BIAS = 1 } kd_epilogue;

/* C = alpha * op(A) op(B) + beta * C, cuBLAS column-major conventions (see kdispatch/gemm.cuh).
 * A matrices are in elements; the batch strides only matter when batch > 1. */
typedef struct kd_gemm_desc {
  kd_op ta, tb;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  int64_t batch;                        /* >= 1 */
  int64_t stride_a, stride_b, stride_c; /* elements between batch items; 0 when batch == 1 */
  kd_dtype a_type, b_type, c_type;
  kd_compute compute;
  kd_math math;
  kd_epilogue epilogue;
  int beta_zero; /* nonzero when beta == 0 (C is not read) */
} kd_gemm_desc;

/* Whether kdispatch keys the call `desc` describes, and if not, why. Numbers are never reused. */
typedef enum kd_gemm_desc_problem {
  KD_DESC_KEYABLE = 0,      /* a call kdispatch keys */
  KD_DESC_INVALID = 1,      /* not a description: an enum out of range, or batch strides set with
                               batch == 1 (kd_gemm_lookup: KD_EINVAL) */
  KD_DESC_DATA_TYPE = 2,    /* a_type != b_type, or c_type neither a_type nor f32 with f16/bf16
                               inputs (kd_gemm_lookup: KD_FALLBACK_UNSUPPORTED) */
  KD_DESC_COMPUTE_TYPE = 3, /* compute f16 without f16 a, b and c (KD_FALLBACK_UNSUPPORTED) */
  KD_DESC_SHAPE = 4,        /* m, n, k or batch < 1, or a leading dimension below the rows of the
                               stored matrix (kd_gemm_lookup: KD_EINVAL) */
  KD_DESC_BATCH_LAYOUT = 5  /* batch > 1 with a negative stride, batch entries whose C overlap, or
                               a bias epilogue (KD_FALLBACK_UNSUPPORTED) */
} kd_gemm_desc_problem;

/* Checks `desc` by the rules kd_gemm_lookup applies, without looking anything up or counting.
 * Returns KD_DESC_KEYABLE or the first problem in the order of kd_gemm_desc_problem; NULL is
 * KD_DESC_INVALID. Thread-safe; no lock, allocation or system call; usable without kd_init. */
KD_API kd_gemm_desc_problem kd_gemm_desc_check(const kd_gemm_desc* desc);

/* Bytes that always hold a shape line from kd_gemm_desc_key_line, its terminating NUL included. */
#define KD_KEY_LINE_BYTES 512

/* Writes the shape line of the call `desc` describes (the key line without its device part, the
 * format kdctl prewarm reads and KD_RECORD writes, e.g. "gemm a=bf16 b=bf16 c=bf16 compute=f32
 * ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1") into
 * `line`, NUL-terminated. Returns KD_SUCCESS; KD_EINVAL when desc or line is NULL, when
 * kd_gemm_desc_check does not find the call keyable, or when line_bytes is too small
 * (KD_KEY_LINE_BYTES never is); KD_EINTERNAL when out of host memory. Allocates: not for the hit
 * path. Thread-safe; usable without kd_init. */
KD_API int kd_gemm_desc_key_line(const kd_gemm_desc* desc, char* line, size_t line_bytes);

/* Computes C = alpha * op(A) op(B) + beta * C on `stream` with cuBLAS semantics (cublasGemmEx with
 * the compute type from `compute` and `math`; alpha and beta are host pointers, as in cuBLAS's
 * host pointer mode; for compute f16 they are rounded to half as cuBLAS would require). Always
 * computes the result: a tuned kernel on a hit, cuBLAS on a miss (loaded lazily; see caveats).
 * Asynchronous like cuBLAS: returns once the work is queued on `stream` (0 = the legacy default
 * stream, or a CUstream/cudaStream_t of the current device).
 *
 * Returns KD_SUCCESS; KD_EINVAL for bad arguments; KD_ENOTINIT without kd_init (nothing
 * computed); KD_ECUBLAS when cuBLAS is needed and unavailable or fails; KD_EUNSUPPORTED for type
 * combinations cuBLAS rejects; KD_ECUDA when a multi-launch tuned kernel failed midway.
 * Thread-safe. */
KD_API int kd_gemm(kd_op ta, kd_op tb, int64_t m, int64_t n, int64_t k, const float* alpha,
                   const void* A, kd_dtype a_type, int64_t lda, const void* B, kd_dtype b_type,
                   int64_t ldb, const float* beta, void* C, kd_dtype c_type, int64_t ldc,
                   kd_compute compute, kd_math math, struct CUstream_st* stream);

/* An opaque loaded entry: a tuned kernel for one call shape in one context. */
typedef struct kd_entry kd_entry;

/* The lower-level pair for the cuBLAS shim. kd_gemm_lookup looks `desc` up for the context of
 * `stream`. On KD_SUCCESS *entry is set and PINNED: the calling thread must pass it to exactly one
 * kd_gemm_launch or kd_gemm_release, on the same thread, before its next kd_gemm_lookup returns
 * (pins nest, but an unreleased pin stops the background thread from freeing replaced entries).
 * On KD_FALLBACK *entry is NULL, *reason (when not NULL) says why and the miss is counted; an
 * unknown call is reported to the daemon. No lock, allocation or system call on either outcome.
 * A call kdispatch does not key (kd_gemm_desc_check) is KD_FALLBACK_UNSUPPORTED, or KD_EINVAL for
 * an invalid description or shape.
 * Returns KD_SUCCESS, KD_FALLBACK, KD_EINVAL or KD_ENOTINIT. */
KD_API int kd_gemm_lookup(const kd_gemm_desc* desc, struct CUstream_st* stream,
                          const kd_entry** entry, kd_fallback_reason* reason);

/* Launches `entry` (from kd_gemm_lookup, on the same stream's context) with `args` on `stream`,
 * then unpins it. args->workspace is ignored: no workspace is lent (see
 * kd_gemm_launch_with_workspace). Checks a, b, c and bias alignment and the workspace rules of
 * Caveats first.
 * Returns KD_SUCCESS (counted as a hit); KD_FALLBACK with *reason (misaligned, workspace_busy,
 * capturing, launch_failed: nothing ran, run the fallback); KD_ECUDA when a later launch of a
 * multi-launch plan failed (C may be partially written); KD_EINVAL for NULL arguments. */
KD_API int kd_gemm_launch(const kd_entry* entry, const struct kd_gemm_args* args,
                          struct CUstream_st* stream, kd_fallback_reason* reason);

/* As kd_gemm_launch, with the caller's workspace lent to the tuned kernel: `workspace`, of
 * `workspace_bytes` bytes of device memory in the stream's context, which nothing else uses while
 * the work queued on `stream` runs (the promise cuBLAS asks of a cublasSetWorkspace_v2 buffer or a
 * cublasLtMatmul workspace). A record that needs a workspace uses it when it is large enough and
 * 256-byte aligned (see Caveats); one that needs none ignores it. args->workspace is ignored.
 * workspace == NULL or workspace_bytes == 0 lends nothing, which is kd_gemm_launch. Returns as
 * kd_gemm_launch, and KD_FALLBACK with KD_FALLBACK_WORKSPACE_TOO_SMALL under stream capture when
 * a lent workspace cannot serve. */
KD_API int kd_gemm_launch_with_workspace(const kd_entry* entry, const struct kd_gemm_args* args,
                                         void* workspace, size_t workspace_bytes,
                                         struct CUstream_st* stream, kd_fallback_reason* reason);

/* Unpins an entry from kd_gemm_lookup without launching it. NULL is ignored. */
KD_API void kd_gemm_release(const kd_entry* entry);

/** @defgroup rows Row operators
 * rmsnorm, layernorm and softmax over the last dimension of a contiguous tensor (issue 33), viewed
 * as `rows` rows of `cols` contiguous elements (rows = the product of the leading dimensions). The
 * computation is <kdispatch/rowop.cuh>'s; x, y, weight and bias share one dtype, the arithmetic is
 * f32. Unlike kd_gemm, kdispatch has no fallback of its own for these: every function returns
 * KD_FALLBACK where the caller must run its own kernel (the framework's). The general rules hold as
 * for GEMM: the same registry, background loading and hot-swap, the same fallback reasons and
 * counters (kd_stats counts row calls with GEMM calls), a miss reported to the daemon under the
 * row key's line; the hit path takes no lock, allocates nothing and makes no system call besides
 * cuStreamGetCtx (once per stream change) and cuLaunchKernel(Ex); under stream capture a loaded
 * entry launches (a record with a workspace only with KD_GRAPH_WORKSPACE), an unloaded one falls
 * back (KD_FALLBACK_CAPTURING). */

typedef enum kd_row_op { KD_ROW_RMSNORM = 0, KD_ROW_LAYERNORM = 1, KD_ROW_SOFTMAX = 2 } kd_row_op;

/* A row operator's call. has_weight (rmsnorm, layernorm) and has_bias (layernorm) are 0 or 1:
 * whether the call passes weight (y scaled by weight[col]) and bias (bias[col] added), each `cols`
 * elements of `dtype`. softmax takes neither. */
typedef struct kd_row_desc {
  kd_row_op op;
  kd_dtype dtype;
  int64_t rows; /* >= 1 */
  int64_t cols; /* >= 1: the elements each row is normalized over */
  int has_weight;
  int has_bias;
} kd_row_desc;

/* Whether kdispatch keys the row call `desc` describes, and if not, why. Numbers are never reused.
 * Every problem is KD_EINVAL for kd_row_lookup and kd_row. */
typedef enum kd_row_desc_problem {
  KD_ROW_DESC_KEYABLE = 0, /* a call kdispatch keys */
  KD_ROW_DESC_INVALID = 1, /* not a description: op or dtype out of range, has_weight or has_bias
                              neither 0 nor 1 */
  KD_ROW_DESC_OPERAND = 2, /* a weight or bias the op does not take (softmax: neither; rmsnorm: no
                              bias) */
  KD_ROW_DESC_SHAPE = 3    /* rows or cols < 1, or rows * cols elements above 2^40 bytes */
} kd_row_desc_problem;

/* Checks `desc` by the rules kd_row_lookup applies, without looking anything up or counting.
 * Returns KD_ROW_DESC_KEYABLE or the first problem in the order of kd_row_desc_problem; NULL is
 * KD_ROW_DESC_INVALID. Thread-safe; no lock, allocation or system call; usable without kd_init. */
KD_API kd_row_desc_problem kd_row_desc_check(const kd_row_desc* desc);

/* Writes the shape line of the row call `desc` describes ("rmsnorm dtype=bf16 rows=16 cols=4096
 * weight=1", the format kdctl prewarm reads) into `line`, NUL-terminated. Returns as
 * kd_gemm_desc_key_line (KD_EINVAL when kd_row_desc_check does not find the call keyable).
 * Allocates: not for the hit path. Thread-safe; usable without kd_init. */
KD_API int kd_row_desc_key_line(const kd_row_desc* desc, char* line, size_t line_bytes);

/* kd_gemm_lookup for a row call: the same pinning rules (pass a KD_SUCCESS entry to exactly one
 * kd_row_launch or kd_gemm_release on the same thread), counting and miss reports.
 * Returns KD_SUCCESS, KD_FALLBACK (*reason set when not NULL), KD_EINVAL (NULL desc or entry, a
 * desc kd_row_desc_check refuses, a stream whose context cannot be read) or KD_ENOTINIT. */
KD_API int kd_row_lookup(const kd_row_desc* desc, struct CUstream_st* stream, const kd_entry** entry,
                         kd_fallback_reason* reason);

/* Launches `entry` (from kd_row_lookup, on the same stream's context) with `args` on `stream`,
 * then unpins it. args->x, args->y and the non-NULL weight and bias must be 16-byte aligned (and
 * as aligned as the record asks); args->workspace is ignored (the record's own is used) and
 * args->reserved must be 0. The caller keeps args->rows and args->cols equal to the desc's.
 * Returns KD_SUCCESS (counted as a hit); KD_FALLBACK with *reason (misaligned, workspace_busy,
 * capturing, launch_failed: nothing ran, run the fallback); KD_ECUDA when a later launch of a
 * multi-launch plan failed (y may be partially written); KD_EINVAL for NULL arguments or an entry
 * that kd_row_lookup did not return (the entry is released). */
KD_API int kd_row_launch(const kd_entry* entry, const struct kd_row_args* args,
                         struct CUstream_st* stream, kd_fallback_reason* reason);

/* The one-call form: looks `desc` up for `stream`'s context and, on a hit, launches the tuned
 * kernel on x, weight, bias and y with `eps` (ignored by softmax). weight must be non-NULL exactly
 * when desc->has_weight, bias exactly when desc->has_bias. Asynchronous: returns once queued.
 * Returns KD_SUCCESS when a tuned kernel was launched; KD_FALLBACK when the caller must run its own
 * kernel (*reason, when not NULL, says why: no_entry, not_loaded, capturing, misaligned, no_gpu,
 * ...; counted in kd_stats); KD_EINVAL for bad arguments (NULL desc, x or y, a weight or bias
 * pointer that disagrees with desc, a desc kd_row_desc_check refuses); KD_ENOTINIT without kd_init;
 * KD_ECUDA when a multi-launch plan failed midway (y may be partially written: run the fallback,
 * which overwrites all of y). Nothing but KD_SUCCESS launched a tuned kernel that completed. */
KD_API int kd_row(const kd_row_desc* desc, const void* x, const void* weight, const void* bias,
                  void* y, float eps, struct CUstream_st* stream, kd_fallback_reason* reason);

/** @defgroup stats Statistics */

/* Counters since the library was loaded (they survive kd_shutdown/kd_init cycles).
 * fallbacks[r] counts calls that did not run a tuned kernel, by reason; misses counts those whose
 * reason came from the lookup (everything except misaligned, launch_failed, workspace_busy), so
 * hits + sum(fallbacks) is every call. */
typedef struct kd_stats_t {
  uint64_t hits;
  uint64_t misses;
  uint64_t fallbacks[KD_FALLBACK_REASON_MAX];
  uint64_t loads;           /* entries loaded from the cache (swaps included) */
  uint64_t load_failures;   /* records that could not be loaded */
  uint64_t swaps;           /* loaded entries replaced by a newer record */
  uint64_t reports_queued;  /* miss reports handed to the background thread */
  uint64_t reports_dropped; /* miss reports dropped: queue full, or too many unsent keys */
  uint64_t reports_sent;    /* miss reports sent to the daemon */
  uint64_t generation;      /* cache generation last seen by the background thread */
  uint64_t entries;         /* keys in the registry (loaded, pending or negative) */
  int daemon_connected;     /* 1 while connected to kdispatchd */
} kd_stats_t;

/* Fills *stats. Thread-safe; takes a lock (not for the hot path). Returns KD_SUCCESS or KD_EINVAL
 * when stats is NULL. Usable without kd_init. */
KD_API int kd_stats(kd_stats_t* stats);

#ifdef __cplusplus
}
#endif

#endif /* KDISPATCH_KDISPATCH_H */
