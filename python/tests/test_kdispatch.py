"""The package without a GPU or torch: the library's loading error names every place tried, the
launcher's environment, and the sitecustomize hook installed without importing torch."""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kdispatch  # noqa: E402
from kdispatch import _library, run  # noqa: E402


def refuse(where):
    raise OSError(f"{where}: cannot open shared object file")


class LoadingErrors(unittest.TestCase):
    def test_error_names_every_place_tried_and_the_variable(self):
        with mock.patch.dict(os.environ, {"KDISPATCH_LIB": "/nonexistent/libkdispatch.so"}):
            with self.assertRaises(kdispatch.KdispatchLibraryError) as caught:
                _library.open_library(loader=refuse)
        text = str(caught.exception)
        self.assertIn("$KDISPATCH_LIB: /nonexistent/libkdispatch.so: no such file", text)
        self.assertIn("next to the package", text)
        self.assertIn("the system loader: libkdispatch.so: libkdispatch.so: cannot open shared object file", text)
        self.assertIn("Set KDISPATCH_LIB", text)

    def test_the_variable_is_tried_first(self):
        with tempfile.TemporaryDirectory() as d:
            lib = Path(d) / "libkdispatch.so"
            lib.write_bytes(b"")
            tried = []
            with mock.patch.dict(os.environ, {"KDISPATCH_LIB": str(lib)}):
                self.assertEqual(_library.open_library(loader=lambda w: tried.append(w) or w), str(lib))
            self.assertEqual(tried, [str(lib)])

    def test_a_real_dlopen_failure_is_reported(self):
        with tempfile.TemporaryDirectory() as d:
            lib = Path(d) / "libkdispatch.so"
            lib.write_bytes(b"not an ELF file")
            with mock.patch.dict(os.environ, {"KDISPATCH_LIB": str(lib)}):
                with self.assertRaises(kdispatch.KdispatchLibraryError) as caught:
                    _library.open_library()
            self.assertIn(f"$KDISPATCH_LIB: {lib}: ", str(caught.exception))


class Launcher(unittest.TestCase):
    def test_environment_preloads_the_shim_and_prepends_the_site_directory(self):
        env = run.child_environment({"KDISPATCH_CUBLAS_LIB": "/opt/kd/libkdispatch_cublas.so",
                                     "LD_PRELOAD": "libother.so", "PYTHONPATH": "/app"})
        self.assertEqual(env["LD_PRELOAD"], "/opt/kd/libkdispatch_cublas.so libother.so")
        paths = env["PYTHONPATH"].split(os.pathsep)
        self.assertTrue(paths[0].endswith("_sitecustomize"))
        self.assertTrue((Path(paths[0]) / "sitecustomize.py").exists())
        self.assertEqual(paths[-1], "/app")
        self.assertEqual(env["KDISPATCH_TORCH"], "1")

    def test_shim_found_next_to_the_library(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "libkdispatch.so").write_bytes(b"")
            (Path(d) / "libkdispatch_cublas.so").write_bytes(b"")
            with mock.patch.dict(os.environ, {"KDISPATCH_LIB": str(Path(d) / "libkdispatch.so")}):
                os.environ.pop("KDISPATCH_CUBLAS_LIB", None)
                self.assertEqual(run.find_shim(), str((Path(d) / "libkdispatch_cublas.so").resolve()))

    def test_child_gets_the_hook_without_importing_torch(self):
        env = run.child_environment(os.environ)
        env["LD_PRELOAD"] = ""  # no shim built here
        code = ("import sys; print(any(type(f).__name__ == '_EnableAfterTorch' for f in sys.meta_path), "
                "'torch' in sys.modules)")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.split(), ["True", "False"])


if __name__ == "__main__":
    unittest.main()
