"""kdispatch.torch's native overrides without a GPU or torch: where the built library is cached, what
a missing or failing compiler reports, that a cached build is reused, and that enable() falls back
to the Python overrides with a warning (or raises, with native=True) when the native ones cannot
be built. The C++ itself is exercised on the GPU machine (tests/e2e/rows_e2e.py)."""
import importlib
import os
import stat
import sys
import tempfile
import types
import unittest
import warnings
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kdispatch  # noqa: E402
from kdispatch import _native  # noqa: E402


def fake_torch(version="2.11.0+cu130"):
    t = types.ModuleType("torch")
    t.__version__ = version
    t.__file__ = "/opt/torch/__init__.py"
    t.compiled_with_cxx11_abi = lambda: True
    ce = types.ModuleType("torch.utils.cpp_extension")
    ce.include_paths = lambda *a, **k: ["/opt/torch/include"]
    u = types.ModuleType("torch.utils")
    u.cpp_extension = ce
    t.utils = u
    t.float16, t.bfloat16, t.float32 = "float16", "bfloat16", "float32"
    return t, {"torch": t, "torch.utils": u, "torch.utils.cpp_extension": ce}


class NativeBuild(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.torch, modules = fake_torch()
        p = mock.patch.dict(sys.modules, modules)
        p.start()
        self.addCleanup(p.stop)
        e = mock.patch.dict(os.environ, {"KD_TORCH_NATIVE_CACHE": self.dir.name})
        e.start()
        self.addCleanup(e.stop)

    def compiler(self, body):
        """A stand-in compiler: a shell script running `body` with its arguments in "$@"."""
        path = Path(self.dir.name) / "cxx"
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        return str(path)

    def test_cache_dir_follows_the_environment(self):
        self.assertEqual(_native.cache_dir(), Path(self.dir.name))
        with mock.patch.dict(os.environ, {"KD_TORCH_NATIVE_CACHE": "", "XDG_CACHE_HOME": "/xdg"}):
            self.assertEqual(_native.cache_dir(), Path("/xdg/kdispatch/torch-native"))

    def test_the_cached_name_changes_with_torch_and_compiler(self):
        a = _native.library_path(self.torch)
        other, _ = fake_torch("2.12.0")
        self.assertNotEqual(a, _native.library_path(other))
        with mock.patch.dict(os.environ, {"CXX": "clang++"}):
            self.assertNotEqual(a, _native.library_path(self.torch))
        self.assertEqual(a, _native.library_path(self.torch))

    def test_a_missing_compiler_names_the_fix(self):
        with mock.patch.dict(os.environ, {"CXX": "/nonexistent/c++"}):
            with self.assertRaisesRegex(_native.NativeBuildError, "no C\\+\\+ compiler.*set CXX"):
                _native.build(self.torch)
        self.assertEqual([p for p in Path(self.dir.name).iterdir()], [], "no temporary file is left behind")

    def test_a_failing_compile_reports_its_output(self):
        cxx = self.compiler('echo "fatal error: torch/library.h: No such file" >&2; exit 1')
        with mock.patch.dict(os.environ, {"CXX": cxx}):
            with self.assertRaisesRegex(_native.NativeBuildError, "exit 1.*torch/library.h"):
                _native.build(self.torch)
        self.assertEqual(sorted(p.name for p in Path(self.dir.name).iterdir()), ["cxx"])

    def test_a_cached_build_is_reused(self):
        log = Path(self.dir.name) / "calls"
        # Writes the file after -o and records the call.
        cxx = self.compiler(f'echo x >>{log}; while [ "$1" != "-o" ]; do shift; done; echo so >"$2"')
        with mock.patch.dict(os.environ, {"CXX": cxx}):
            first = _native.build(self.torch)
            second = _native.build(self.torch)
        self.assertEqual(first, second)
        self.assertTrue(first.exists())
        self.assertEqual(log.read_text().count("x"), 1)

    def test_the_command_uses_torchs_headers_libraries_and_abi(self):
        cmd = _native._command(self.torch, "/tmp/out.so")
        self.assertIn("-I/opt/torch/include", cmd)
        self.assertIn("-D_GLIBCXX_USE_CXX11_ABI=1", cmd)
        self.assertIn("-L/opt/torch/lib", cmd)
        self.assertIn("-ltorch_cuda", cmd)


class EnableFallsBack(unittest.TestCase):
    """enable() when the native overrides cannot be built."""

    def setUp(self):
        t, modules = fake_torch()
        self.registered = []
        registered = self.registered

        class Library:
            def __init__(self, ns, kind):
                pass

            def impl(self, name, fn, key, with_keyset=False):
                registered.append((name, key))

            def _destroy(self):
                registered.clear()

        t.library = types.SimpleNamespace(get_kernel=lambda name, key: object(), Library=Library)
        t.ops = types.SimpleNamespace(aten=types.SimpleNamespace(native_layer_norm=1, _softmax=1, _fused_rms_norm=1))
        t._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0)
        with mock.patch.dict(sys.modules, modules):
            sys.modules.pop("kdispatch.torch", None)
            self.kt = importlib.import_module("kdispatch.torch")
        sys.modules.pop("kdispatch.torch", None)
        self.addCleanup(lambda: kdispatch.__dict__.pop("torch", None))
        for p in (mock.patch.object(kdispatch, "load", return_value=None),
                  mock.patch.object(_native, "Native", side_effect=_native.NativeBuildError("no C++ compiler"))):
            p.start()
            self.addCleanup(p.stop)

    def test_default_warns_and_routes_through_python(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            routed = self.kt.enable()
        self.assertEqual(routed, ["native_layer_norm", "_softmax", "_fused_rms_norm"])
        self.assertEqual(self.kt.mode(), "python")
        self.assertTrue(any("no C++ compiler" in str(x.message) and "KD_TORCH_NATIVE=0" in str(x.message) for x in w))
        self.kt.disable()
        self.assertIsNone(self.kt.mode())
        self.assertEqual(self.registered, [])

    def test_native_true_raises(self):
        with self.assertRaisesRegex(_native.NativeBuildError, "no C\\+\\+ compiler"):
            self.kt.enable(native=True)
        self.assertIsNone(self.kt.mode())

    def test_kd_torch_native_0_skips_the_build_quietly(self):
        with mock.patch.dict(os.environ, {"KD_TORCH_NATIVE": "0"}), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.kt.enable()
        self.assertEqual(self.kt.mode(), "python")
        self.assertEqual([str(x.message) for x in w], [])
        _native.Native.assert_not_called()


if __name__ == "__main__":
    unittest.main()
