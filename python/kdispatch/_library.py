"""Finding and loading libkdispatch.so, and its C API as ctypes functions (kdispatch.h)."""
import ctypes
import os
from pathlib import Path

LIBRARY_NAME = "libkdispatch.so"
LIBRARY_ENV = "KDISPATCH_LIB"

# kdispatch.h return codes, fallback reasons and row operators.
KD_SUCCESS, KD_FALLBACK, KD_EINVAL, KD_ENOTINIT, KD_ECUDA = 0, 1, 2, 3, 4
KD_FALLBACK_REASON_MAX = 32
ROW_OPS = {"rmsnorm": 0, "layernorm": 1, "softmax": 2}
DTYPES = {"f16": 0, "bf16": 1, "f32": 2}


class KdispatchLibraryError(OSError):
    """libkdispatch.so could not be loaded from any place tried."""


class RowDesc(ctypes.Structure):
    _fields_ = [("op", ctypes.c_int), ("dtype", ctypes.c_int), ("rows", ctypes.c_int64),
                ("cols", ctypes.c_int64), ("has_weight", ctypes.c_int), ("has_bias", ctypes.c_int)]


class Stats(ctypes.Structure):
    _fields_ = [("hits", ctypes.c_uint64), ("misses", ctypes.c_uint64),
                ("fallbacks", ctypes.c_uint64 * KD_FALLBACK_REASON_MAX), ("loads", ctypes.c_uint64),
                ("load_failures", ctypes.c_uint64), ("swaps", ctypes.c_uint64),
                ("reports_queued", ctypes.c_uint64), ("reports_dropped", ctypes.c_uint64),
                ("reports_sent", ctypes.c_uint64), ("generation", ctypes.c_uint64),
                ("entries", ctypes.c_uint64), ("daemon_connected", ctypes.c_int)]


def candidates():
    """(label, path or name) in the order load() tries them."""
    out = []
    env = os.environ.get(LIBRARY_ENV)
    if env:
        out.append((f"${LIBRARY_ENV}", env))
    out.append(("next to the package", str(Path(__file__).resolve().parent / LIBRARY_NAME)))
    out.append(("the system loader", LIBRARY_NAME))
    return out


def open_library(loader=ctypes.CDLL):
    """The first candidate that loads, as a ctypes library; KdispatchLibraryError naming each try."""
    failures = []
    for label, where in candidates():
        if os.sep in where and not os.path.exists(where):
            failures.append(f"  {label}: {where}: no such file")
            continue
        try:
            return loader(where)
        except OSError as e:
            failures.append(f"  {label}: {where}: {e}")
    raise KdispatchLibraryError(
        f"cannot load {LIBRARY_NAME}; tried:\n" + "\n".join(failures) +
        f"\nSet {LIBRARY_ENV} to the library's path (e.g. <prefix>/lib/{LIBRARY_NAME}), install it next to "
        "the kdispatch package, or add its directory to LD_LIBRARY_PATH.")


def declare(lib):
    """Gives `lib`'s C API functions their ctypes signatures; returns lib."""
    c = ctypes
    lib.kd_version.restype = c.c_char_p
    lib.kd_version.argtypes = [c.POINTER(c.c_int)] * 3
    lib.kd_strerror.restype = c.c_char_p
    lib.kd_strerror.argtypes = [c.c_int]
    lib.kd_fallback_reason_name.restype = c.c_char_p
    lib.kd_fallback_reason_name.argtypes = [c.c_int]
    lib.kd_fallback_reason_is_miss.restype = c.c_int
    lib.kd_fallback_reason_is_miss.argtypes = [c.c_int]
    lib.kd_init.restype = c.c_int
    lib.kd_init.argtypes = [c.c_void_p]
    lib.kd_shutdown.restype = c.c_int
    lib.kd_shutdown.argtypes = []
    lib.kd_row_desc_check.restype = c.c_int
    lib.kd_row_desc_check.argtypes = [c.POINTER(RowDesc)]
    lib.kd_row_desc_key_line.restype = c.c_int
    lib.kd_row_desc_key_line.argtypes = [c.POINTER(RowDesc), c.c_char_p, c.c_size_t]
    lib.kd_row.restype = c.c_int
    lib.kd_row.argtypes = [c.POINTER(RowDesc), c.c_void_p, c.c_void_p, c.c_void_p, c.c_void_p, c.c_float,
                           c.c_void_p, c.POINTER(c.c_int)]
    lib.kd_stats.restype = c.c_int
    lib.kd_stats.argtypes = [c.POINTER(Stats)]
    return lib
