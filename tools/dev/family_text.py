#!/usr/bin/env python3
"""A builtin family's source as the product renders it, at any revision, without a build.

usage: family_text.py [--rev REV] [--generated DIR] FILE > OUT.cu

FILE is a file of search/src/builtin/kernels/ (wg_tiled.cu). Every `#include "NAME"` line whose NAME
is another file of that folder at REV (or, for the build's generated wrappers, wg_wgmma.cuh, a file of
--generated, default build/search/generated/kernels) is replaced by that file's own expanded text,
as search/src/builtin/embedded_kernels.cpp does for NVRTC. Without --rev the working tree is read.

What it is for: tools/dev/kernel_ab.sh puts a winner's rendered header (its #defines and plan) in
front of this text to time the same configuration with another revision's kernel."""
import argparse
import os
import re
import subprocess
import sys

KERNELS = "search/src/builtin/kernels"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--rev", help="git revision (default: the working tree)")
    ap.add_argument("--generated", default="build/search/generated/kernels")
    a = ap.parse_args()
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()

    def text(name):
        if a.rev:
            r = subprocess.run(["git", "show", f"{a.rev}:{KERNELS}/{name}"], capture_output=True, text=True, cwd=root)
            if r.returncode == 0:
                return r.stdout
        else:
            p = os.path.join(root, KERNELS, name)
            if os.path.exists(p):
                return open(p).read()
        g = os.path.join(root, a.generated, name)
        return open(g).read() if os.path.exists(g) else None

    def expand(name):
        out = []
        for line in text(name).splitlines(keepends=True):
            m = re.match(r'\s*#include\s+"([^"]+)"', line)
            inner = text(m.group(1)) if m else None
            out.append(expand(m.group(1)) if inner is not None else line)
        return "".join(out)

    if text(a.file) is None:
        sys.exit(f"family_text.py: no {KERNELS}/{a.file}" + (f" at {a.rev}" if a.rev else ""))
    sys.stdout.write(expand(a.file))


if __name__ == "__main__":
    main()
