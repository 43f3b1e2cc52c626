"""kdispatch-run CMD [ARGS...]: runs CMD with libkdispatch_cublas.so preloaded (GEMMs through
kdispatch) and kdispatch.torch's routing enabled in Python children once they import torch."""
import os
import sys
from pathlib import Path

import kdispatch._library as library

SHIM_NAME = "libkdispatch_cublas.so"
SHIM_ENV = "KDISPATCH_CUBLAS_LIB"


def find_shim(env=None):
    """$KDISPATCH_CUBLAS_LIB, else the shim next to the first libkdispatch.so candidate that exists,
    else its bare name (the dynamic loader's search path resolves it)."""
    given = (os.environ if env is None else env).get(SHIM_ENV)
    if given:
        return given
    for _, where in library.candidates():
        if os.sep in where and os.path.exists(where):
            shim = Path(where).resolve().parent / SHIM_NAME
            if shim.exists():
                return str(shim)
    return SHIM_NAME


def child_environment(env):
    """`env` with LD_PRELOAD and PYTHONPATH set for the child."""
    env = dict(env)
    preload = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p]
    shim = find_shim(env)
    if shim not in preload:
        preload.insert(0, shim)
    env["LD_PRELOAD"] = " ".join(preload)
    site = str(Path(__file__).resolve().parent / "_sitecustomize")
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != site]
    package_root = str(Path(__file__).resolve().parent.parent)  # so the child imports this kdispatch
    env["PYTHONPATH"] = os.pathsep.join([site, package_root] + paths)
    env.setdefault("KDISPATCH_TORCH", "1")
    return env


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    env = child_environment(os.environ)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        print(f"kdispatch-run: cannot run {argv[0]}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
