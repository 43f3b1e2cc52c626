"""PyTorch routing: the CUDA kernels of aten::native_layer_norm, aten::_softmax and (where torch has
it) aten::_fused_rms_norm replaced by kernels that ask kdispatch first (kd_row) and run the original
kernel on a fallback or on any call they do not cover. See README.md for what is covered.

enable() registers the overrides once per process (dispatch key CUDA): native C++ ones
(_torch_native.cpp, built once against this torch and cached; see _native.py) when they build,
else Python ones (torch.library), which cost 15-20 us of host time per routed call. disable()
removes them (torch restores its kernels). stats() counts what the overrides did.
"""
import collections
import os
import threading
import warnings

import torch

import kdispatch

_ROW_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}

_lock = threading.Lock()
_library = None  # the Python overrides' torch.library.Library while they are registered
_native = None  # the native overrides (_native.Native) once loaded
_native_on = False
_counts = collections.Counter()
_routed = []

# The per-call work in Python is what an eager, host-bound program pays on every routed call (an
# H100 host ran a 4-layer fp32 BERT 0.88x of GEMM-only when each call built its descriptor, fetched a
# Stream object and allocated y before asking). So descriptors and reason names are made once per
# shape, the raw stream comes from torch's C accessor, and a shape whose answer stays "run your own"
# (no record yet, or a verdict that kept the framework's kernel) goes straight to the original for
# the next _RECHECK_CALLS calls, counted under the same reason, then asks again (a record published
# meanwhile is picked up then).
_RECHECK_CALLS = 64
_STICKY_REASONS = {"no_entry", "vendor_chosen"}
_descs = {}
_reason_names = {}
_skip = {}  # shape -> [calls left to skip, counter name]
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def stats():
    """What the overrides did since the process enabled them: "hit", "fallback:<reason>"
    (kdispatch's reason name; for the Python overrides, no_entry and vendor_chosen answers also
    count the calls that reused them), "uncovered:<cause>" (the call went to the original kernel
    without asking kdispatch)."""
    out = collections.Counter(_counts)
    if _native is not None:
        out.update(_native.counts())
    return dict(out)


def mode():
    """"native" (the C++ overrides), "python" (the torch.library ones), or None (not enabled)."""
    if _native_on:
        return "native"
    return "python" if _library is not None else None


def routed_ops():
    """The aten operators enable() routed (empty before enable() or when it registered nothing)."""
    return list(_routed)


def _uncovered(cause):
    _counts["uncovered:" + cause] += 1
    return False


def _grad_needed(*tensors):
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _row_dtype(x, *params):
    """The kdispatch dtype of x when x and every given param are CUDA tensors of that dtype, contiguous."""
    dtype = _ROW_DTYPES.get(x.dtype)
    if dtype is None:
        return _uncovered("dtype")
    if not x.is_cuda:
        return _uncovered("device")
    if not x.is_contiguous():
        return _uncovered("layout")
    for p in params:
        if p is None:
            continue
        if p.dtype != x.dtype:
            return _uncovered("mixed_dtype")
        if not p.is_contiguous() or p.device != x.device:
            return _uncovered("layout")
    return dtype


def _reason_name(reason):
    name = _reason_names.get(reason)
    if name is None:
        name = _reason_names[reason] = "fallback:" + kdispatch.reason_name(reason)
    return name


def _run(op, dtype, x, weight, bias, rows, cols, eps):
    """kd_row on the current stream: y from the tuned kernel, or None (run the original)."""
    if rows < 1 or cols < 1:
        _uncovered("empty")
        return None
    shape = (op, dtype, rows, cols, weight is not None, bias is not None)
    device = x.get_device()
    key = (device,) + shape  # records are per GPU model: an answer holds for its device only
    skip = _skip.get(key)
    if skip is not None and skip[0] > 0:
        skip[0] -= 1
        _counts[skip[1]] += 1
        return None
    desc = _descs.get(shape)
    if desc is None:
        desc = _descs[shape] = kdispatch.row_desc(*shape)
    if _raw_stream is not None:
        stream = _raw_stream(device)
    else:
        stream = torch.cuda.current_stream(x.device).cuda_stream
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    rc, reason = kdispatch.row(desc, x.data_ptr(), weight.data_ptr() if weight is not None else 0,
                               bias.data_ptr() if bias is not None else 0, y.data_ptr(), eps, stream)
    if rc == kdispatch.KD_SUCCESS:
        _counts["hit"] += 1
        return y
    name = _reason_name(reason) if rc == kdispatch.KD_FALLBACK else f"fallback:code{rc}"
    _counts[name] += 1
    if name[len("fallback:"):] in _STICKY_REASONS:
        _skip[key] = [_RECHECK_CALLS, name]
    else:
        _skip.pop(key, None)
    return None


def _leading(shape, trailing):
    rows = 1
    for d in shape[:len(shape) - trailing]:
        rows *= d
    return rows


def _stat_shape(x, normalized_ndim):
    return list(x.shape[:x.dim() - normalized_ndim]) + [1] * normalized_ndim


def _stat_dtype(x):
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


def _layer_norm(original):
    def kernel(keyset, x, normalized_shape, weight, bias, eps):
        n = len(normalized_shape)
        if _grad_needed(x, weight, bias):
            _uncovered("grad")
        elif n < 1 or n > x.dim() or list(x.shape[x.dim() - n:]) != list(normalized_shape):
            _uncovered("shape")
        else:
            dtype = _row_dtype(x, weight, bias)
            if dtype:
                cols = _leading(normalized_shape, 0)
                y = _run("layernorm", dtype, x, weight, bias, x.numel() // max(cols, 1), cols, eps)
                if y is not None:
                    # Not computed: autograd does not need them here, and layer_norm discards them.
                    stat = torch.empty(_stat_shape(x, n), dtype=_stat_dtype(x), device=x.device)
                    return y, stat, torch.empty_like(stat)
        return original.call_boxed(keyset, x, normalized_shape, weight, bias, eps)
    return kernel


def _softmax(original):
    def kernel(keyset, x, dim, half_to_float):
        if half_to_float:
            _uncovered("half_to_float")
        elif x.dim() == 0 or dim not in (-1, x.dim() - 1):
            _uncovered("dim")
        else:
            dtype = _row_dtype(x)
            if dtype:
                cols = x.shape[-1]
                y = _run("softmax", dtype, x, None, None, x.numel() // max(cols, 1), cols, 0.0)
                if y is not None:
                    return y
        return original.call_boxed(keyset, x, dim, half_to_float)
    return kernel


def _rms_norm(original):
    def kernel(keyset, x, normalized_shape, weight, eps):
        n = len(normalized_shape)
        if _grad_needed(x, weight):
            _uncovered("grad")
        elif n < 1 or n > x.dim() or list(x.shape[x.dim() - n:]) != list(normalized_shape):
            _uncovered("shape")
        else:
            dtype = _row_dtype(x, weight)
            if dtype:
                cols = _leading(normalized_shape, 0)
                # torch's default eps: the epsilon of the f32 arithmetic of every routed dtype.
                e = torch.finfo(torch.float32).eps if eps is None else eps
                y = _run("rmsnorm", dtype, x, weight, None, x.numel() // max(cols, 1), cols, e)
                if y is not None:
                    return y, torch.empty(_stat_shape(x, n), dtype=_stat_dtype(x), device=x.device)
        return original.call_boxed(keyset, x, normalized_shape, weight, eps)
    return kernel


# (aten operator, its override's factory); an operator this torch lacks is skipped.
_OVERRIDES = [
    ("native_layer_norm", _layer_norm),
    ("_softmax", _softmax),
    ("_fused_rms_norm", _rms_norm),
]


def enable(native=None):
    """Registers the overrides (once; later calls return the same list). Loads libkdispatch.so
    first (raises kdispatch.KdispatchLibraryError when it cannot). Returns the routed operators.

    native: None (the default) registers the native overrides, building them on first use, and
    falls back to the Python ones with a warning that names the cause when they cannot be built;
    True raises kdispatch._native.NativeBuildError instead; False registers the Python ones. The
    environment variable KD_TORCH_NATIVE=0 makes the default False. An operator is skipped, with
    a warning, when torch cannot give its original CUDA kernel."""
    global _library, _native, _native_on
    with _lock:
        if _native_on or _library is not None:
            return list(_routed)
        kdispatch.load()
        if native is None:
            native = None if os.environ.get("KD_TORCH_NATIVE", "1") != "0" else False
        if native is not False:
            from . import _native as native_mod
            try:
                if _native is None:
                    _native = native_mod.Native(torch, verbose=os.environ.get("KD_TORCH_NATIVE_VERBOSE") == "1")
                _routed[:] = _native.enable()
                _native_on = True
                return list(_routed)
            except native_mod.NativeBuildError as e:
                if native:
                    raise
                warnings.warn(f"kdispatch.torch: the native overrides are unavailable ({e}); using the Python "
                              "ones, which add 15-20 us of host time per routed call (set KD_TORCH_NATIVE=0 to "
                              "choose them without this warning)")
        get_kernel = getattr(torch.library, "get_kernel", None)
        if get_kernel is None:
            warnings.warn("kdispatch.torch: this torch has no torch.library.get_kernel (torch >= 2.9), so the "
                          "original kernels could not run on a fallback; nothing is routed")
            return []
        library = torch.library.Library("aten", "IMPL")
        for name, factory in _OVERRIDES:
            if not hasattr(torch.ops.aten, name):
                continue
            try:
                original = get_kernel(f"aten::{name}", "CUDA")
                with warnings.catch_warnings():  # replacing torch's CUDA kernel is the point
                    warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
                    library.impl(name, factory(original), "CUDA", with_keyset=True)
            except Exception as e:  # noqa: BLE001 - any failure leaves torch's own kernel in place
                warnings.warn(f"kdispatch.torch: aten::{name} not routed: {e}")
                continue
            _routed.append(name)
        _library = library
        return list(_routed)


def disable():
    """Removes the overrides; torch's own kernels run again."""
    global _library, _native_on
    with _lock:
        if _native_on:
            _native.disable()
            _native_on = False
        if _library is not None:
            _library._destroy()
            _library = None
        _routed.clear()
