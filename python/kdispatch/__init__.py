"""kdispatch: ctypes bindings to libkdispatch.so (the C API of kdispatch.h).

load() finds and initialises the library once per process (kd_init with the defaults: the cache
of $KD_CACHE_DIR, the daemon of $KD_SOCKET). row() is kd_row; stats() is kd_stats.
kdispatch.torch routes PyTorch's row operators through it (see README.md).
"""
import ctypes
import threading

from ._library import (DTYPES, KD_FALLBACK, KD_SUCCESS, ROW_OPS, KdispatchLibraryError, RowDesc, Stats,
                       candidates, declare, open_library)

__all__ = ["load", "row", "row_key_line", "stats", "reason_name", "KdispatchLibraryError", "RowDesc",
           "KD_SUCCESS", "KD_FALLBACK", "ROW_OPS", "DTYPES", "candidates"]

_lock = threading.Lock()
_lib = None


def load():
    """The initialised library (loaded and kd_init'ed on the first call). Raises
    KdispatchLibraryError when it cannot be loaded, RuntimeError when kd_init fails."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            lib = declare(open_library())
            rc = lib.kd_init(None)
            if rc != KD_SUCCESS:
                raise RuntimeError(f"kd_init: {lib.kd_strerror(rc).decode()}")
            _lib = lib
    return _lib


def row_desc(op, dtype, rows, cols, has_weight=False, has_bias=False):
    """A kd_row_desc; op in ROW_OPS ("rmsnorm", "layernorm", "softmax"), dtype in DTYPES."""
    return RowDesc(ROW_OPS[op], DTYPES[dtype], rows, cols, int(bool(has_weight)), int(bool(has_bias)))


def row(desc, x, weight, bias, y, eps, stream):
    """kd_row with device pointers as ints (0 for none) and a CUstream as an int (0: legacy default).
    Returns (code, reason): KD_SUCCESS when a tuned kernel was launched, otherwise the caller runs
    its own kernel; reason is the kd_fallback_reason number (meaningful for KD_FALLBACK)."""
    lib = load()
    reason = ctypes.c_int(-1)
    rc = lib.kd_row(ctypes.byref(desc), x or None, weight or None, bias or None, y or None, eps, stream or None,
                    ctypes.byref(reason))
    return rc, reason.value


def row_key_line(desc):
    """The shape line of a row call ("rmsnorm dtype=bf16 rows=16 cols=4096 weight=1"), or None when
    kdispatch does not key it."""
    lib = load()
    buf = ctypes.create_string_buffer(512)
    return buf.value.decode() if lib.kd_row_desc_key_line(ctypes.byref(desc), buf, len(buf)) == KD_SUCCESS else None


def reason_name(reason):
    return load().kd_fallback_reason_name(reason).decode()


def stats():
    """kd_stats as a dict: hits, misses, fallbacks by reason name (nonzero only), and the loader's
    and reporter's counters."""
    lib = load()
    s = Stats()
    lib.kd_stats(ctypes.byref(s))
    out = {name: getattr(s, name) for name, _ in Stats._fields_ if name != "fallbacks"}
    out["fallbacks"] = {lib.kd_fallback_reason_name(r).decode(): n for r, n in enumerate(s.fallbacks) if n}
    return out
