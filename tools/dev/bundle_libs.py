#!/usr/bin/env python3
"""Makes BUNDLE self-contained: copies into BUNDLE/lib every shared library that its programs and
libraries need, except the ones a GPU machine provides itself (glibc, libstdc++, libgcc, the
NVIDIA driver, the CUDA Toolkit), sets RPATH $ORIGIN on the copies and strips everything."""
import os
import re
import shutil
import subprocess
import sys

bundle = os.path.abspath(sys.argv[1])
SYSTEM = re.compile(r"^(ld-linux.*|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|"
                    r"libgcc_s|libcuda|libnvrtc.*|libcublas.*|libcublasLt|libcudart|linux-vdso)\.so")


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m:
            yield m.group(1), m.group(2)


elves = [os.path.join(d, f) for sub in ("bin", "lib") for d, _, fs in os.walk(os.path.join(bundle, sub))
         for f in fs if not os.path.islink(os.path.join(d, f)) and is_elf(os.path.join(d, f))]
copied = {}
queue = list(elves)
while queue:
    path = queue.pop()
    for soname, real in needed(path):
        if SYSTEM.match(soname) or real.startswith("/usr/local/cuda") or soname in copied:
            continue
        if os.path.exists(os.path.join(bundle, "lib", soname)):
            continue
        dest = os.path.join(bundle, "lib", soname)
        shutil.copy2(os.path.realpath(real), dest)
        os.chmod(dest, 0o755)
        copied[soname] = dest
        queue.append(dest)

for dest in copied.values():
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", dest], check=True)
# Test executables come from the build tree with absolute build paths in their RPATH.
for path in elves:
    rpath = "$ORIGIN/../lib:/usr/local/cuda/lib64" if "/bin/" in path else "$ORIGIN:/usr/local/cuda/lib64"
    subprocess.run(["patchelf", "--set-rpath", rpath, path], check=True)
for path in elves + list(copied.values()):
    subprocess.run(["strip", "--strip-unneeded", path], check=False)
print(f"bundle: {len(copied)} shared libraries copied: {' '.join(sorted(copied))}")
