"""Put first on PYTHONPATH by kdispatch-run: enables kdispatch.torch's routing as soon as the
program imports torch (not before: most programs never import it, and importing it costs seconds),
then runs the sitecustomize this one shadows, if any."""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings


class _EnableAfterTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_enable(module):
            exec_module(module)
            try:
                import kdispatch.torch
                kdispatch.torch.enable()
            except Exception as e:  # noqa: BLE001 - the program runs unrouted rather than not at all
                warnings.warn(f"kdispatch-run: torch routing not enabled: {e}")

        spec.loader.exec_module = exec_then_enable
        return spec


if os.environ.get("KDISPATCH_TORCH", "1") != "0":
    sys.meta_path.insert(0, _EnableAfterTorch())


def _run_shadowed():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_run_shadowed()
