"""Builds and loads kdispatch.torch's native overrides (_torch_native.cpp) against the running torch.

The library is compiled once per (source, torch build, compiler) with the C++ compiler torch's own
extensions use ($CXX, else c++), from torch's installed headers and libraries, and cached under
$KD_TORCH_NATIVE_CACHE (default: $XDG_CACHE_HOME/kdispatch/torch-native, ~/.cache when unset). The
first build takes about ten seconds; later processes load the cached file.
"""
import ctypes
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import kdispatch
from ._library import DTYPES, KD_FALLBACK, KD_SUCCESS, ROW_OPS, RowDesc

_SOURCE = Path(__file__).with_name("_torch_native.cpp")
# The order of the Uncovered enum in _torch_native.cpp.
UNCOVERED = ["grad", "shape", "dtype", "device", "layout", "mixed_dtype", "empty", "half_to_float", "dim"]
_REASONS = 32
_CODES = 32


class NativeBuildError(RuntimeError):
    """The native overrides could not be built or loaded; the message names the cause and the fix."""


def cache_dir():
    d = os.environ.get("KD_TORCH_NATIVE_CACHE")
    if d:
        return Path(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kdispatch" / "torch-native"


def _compiler():
    return shlex.split(os.environ.get("CXX", "c++"))


def _command(torch, out):
    from torch.utils import cpp_extension
    abi = int(torch.compiled_with_cxx11_abi())
    cmd = _compiler() + ["-O2", "-std=c++17", "-fPIC", "-shared", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w"]
    cmd += [f"-I{p}" for p in cpp_extension.include_paths()]
    cmd += [str(_SOURCE), "-o", str(out)]
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    cmd += [f"-L{libdir}", "-lc10", "-ltorch_cpu", "-ltorch_cuda", f"-Wl,-rpath,{libdir}"]
    return cmd


def library_path(torch):
    """The cached library's path for this source, torch build and compiler (built or not)."""
    h = hashlib.sha256(_SOURCE.read_bytes())
    for part in (torch.__version__, torch.__file__, str(torch.compiled_with_cxx11_abi()), " ".join(_compiler()),
                 sys.version):
        h.update(part.encode())
    return cache_dir() / f"kd_torch_native-{h.hexdigest()[:16]}.so"


def build(torch, verbose=False):
    """The path of the native library, compiled first when it is not cached. Raises NativeBuildError."""
    out = library_path(torch)
    if out.exists():
        return out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
        os.close(fd)
    except OSError as e:
        raise NativeBuildError(f"cannot write the native overrides' cache {out.parent}: {e}; set "
                               "KD_TORCH_NATIVE_CACHE to a writable directory") from e
    cmd = _command(torch, tmp)
    # A first enable() pauses for the build: say so, once, where the program's logs go.
    print(f"kdispatch.torch: compiling the C++ overrides for torch {torch.__version__} (once, about ten seconds) "
          f"into {out}" + (": " + " ".join(shlex.quote(c) for c in cmd) if verbose else ""), file=sys.stderr,
          flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        os.unlink(tmp)
        raise NativeBuildError(f"no C++ compiler ({cmd[0]}: {e}); install g++ or set CXX") from e
    if p.returncode != 0:
        os.unlink(tmp)
        raise NativeBuildError(f"building the native overrides failed ({cmd[0]} exit {p.returncode}): "
                               f"{p.stderr.strip()[-1500:]}")
    os.replace(tmp, out)  # atomic: a concurrent build or load sees the old name or the whole file
    return out


class _Api(ctypes.Structure):
    _fields_ = [("row_lookup", ctypes.c_void_p), ("row_launch", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("success", ctypes.c_int), ("fallback", ctypes.c_int), ("ops", ctypes.c_int * 3),
                ("dtypes", ctypes.c_int * 3)]


class Native:
    """The loaded native overrides: enable() registers them, disable() removes them, counts() reads
    what they did."""

    def __init__(self, torch, verbose=False):
        if ctypes.sizeof(RowDesc) != 32:
            raise NativeBuildError(f"kd_row_desc is {ctypes.sizeof(RowDesc)} bytes here, the native overrides expect 32")
        path = build(torch, verbose)
        try:
            self._so = ctypes.CDLL(str(path))
        except OSError as e:
            raise NativeBuildError(f"cannot load {path}: {e}; delete it to rebuild") from e
        self._so.kd_torch_native_enable.restype = ctypes.c_int
        self._so.kd_torch_native_enable.argtypes = [ctypes.POINTER(_Api), ctypes.c_char_p, ctypes.c_size_t,
                                                    ctypes.c_char_p, ctypes.c_size_t]
        self._so.kd_torch_native_disable.restype = None
        self._so.kd_torch_native_counts.restype = ctypes.c_int
        self.path = path

    def enable(self):
        """Registers the overrides; returns the routed aten operators. Raises NativeBuildError."""
        lib = kdispatch.load()
        addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
        api = _Api(addr(lib.kd_row_lookup), addr(lib.kd_row_launch), addr(lib.kd_gemm_release), KD_SUCCESS,
                   KD_FALLBACK, (ctypes.c_int * 3)(*(ROW_OPS[o] for o in ("rmsnorm", "layernorm", "softmax"))),
                   (ctypes.c_int * 3)(*(DTYPES[d] for d in ("f16", "bf16", "f32"))))
        routed = ctypes.create_string_buffer(256)
        err = ctypes.create_string_buffer(1024)
        if self._so.kd_torch_native_enable(ctypes.byref(api), routed, len(routed), err, len(err)) != 0:
            raise NativeBuildError(f"registering the native overrides failed: {err.value.decode(errors='replace')}")
        return [n for n in routed.value.decode().split(",") if n]

    def disable(self):
        self._so.kd_torch_native_disable()

    def counts(self):
        """{"hit": n, "fallback:<reason>": n, "fallback:code<rc>": n, "uncovered:<cause>": n}, nonzero only."""
        hits = ctypes.c_uint64()
        fallbacks = (ctypes.c_uint64 * _REASONS)()
        codes = (ctypes.c_uint64 * _CODES)()
        uncovered = (ctypes.c_uint64 * 16)()
        n = self._so.kd_torch_native_counts(ctypes.byref(hits), fallbacks, codes, uncovered)
        out = {"hit": hits.value}
        out.update({"fallback:" + kdispatch.reason_name(r): v for r, v in enumerate(fallbacks) if v})
        out.update({f"fallback:code{c}": v for c, v in enumerate(codes) if v})
        out.update({"uncovered:" + UNCOVERED[i]: uncovered[i] for i in range(min(n, len(UNCOVERED))) if uncovered[i]})
        return {k: v for k, v in out.items() if v}
