#!/usr/bin/env python3
"""What a builtin kernel's loops cost per iteration, without a GPU.

usage: sass_loops.py [--family wg_tiled.cu] [--entry kd_wg_tiled] [--arch sm_90a] [--sass OUT] -D NAME=VALUE ...

Compiles search/src/builtin/kernels/FAMILY with nvcc (-cubin, the -D parameters as a rendered source
would define them; the element types default to f32 A, B and C, ta = T, tb = N), disassembles the
entry with nvdisasm and prints, for each loop (a backward branch to a label) that holds a wgmma,
a cp.async, a global store or a global load, its instruction count by opcode: the per-iteration
cost of a producer's copies or a consumer's k tile. Loops of fewer than 20 instructions (spin
waits) are left out. nvdisasm comes from $NVDISASM, PATH, or the PyPI wheel nvidia-cuda-nvdisasm
(pip install nvidia-cuda-nvdisasm); this machine's CUDA Toolkit does not ship it.

Counts are of the static loop body: a loop with two paths (a branch inside) shows both."""
import argparse
import collections
import glob
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile

KERNELS = "search/src/builtin/kernels"
DEFAULTS = {"KD_A_T": "float", "KD_B_T": "float", "KD_C_T": "float", "KD_TA": "1", "KD_TB": "0",
            "KD_BETA_ZERO": "1", "KD_BIAS": "0"}
MARKS = ("HGMMA", "LDGSTS", "STG", "LDG", "UTMALDG")


def nvdisasm():
    for cand in (os.environ.get("NVDISASM"), shutil.which("nvdisasm")):
        if cand and os.path.exists(cand):
            return cand
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        hits = glob.glob(os.path.join(sp, "nvidia", "*", "bin", "nvdisasm"))
        if hits:
            return hits[0]
    sys.exit("sass_loops.py: no nvdisasm (set NVDISASM, or pip install nvidia-cuda-nvdisasm)")


def loops(sass, entry):
    """(label, instructions) of each loop of the entry's section."""
    # The entry's code follows its label ".text.ENTRY:" up to the next section.
    body = next((s for s in re.split(r"\.text\.", sass) if s.startswith(entry + ":")), None)
    if body is None:
        sys.exit(f"sass_loops.py: no entry {entry} in the cubin")
    ins, labels = [], {}
    for line in body.splitlines():
        m = re.match(r"\.L_x_(\d+):", line.strip())
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;", line)
        if m:
            ins.append(m.group(1))
    for i, t in enumerate(ins):
        m = re.search(r"BRA\s+`\(\.L_x_(\d+)\)", t)
        if not m or labels.get(m.group(1), i + 1) > i:
            continue
        loop = ins[labels[m.group(1)]:i + 1]
        if len(loop) >= 20 and any(opcode(b) in MARKS for b in loop):
            yield m.group(1), loop


def opcode(instruction):
    """HGMMA of '@!P0 HGMMA.64x32x8.F32.TF32 R24, ...'."""
    words = instruction.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def main():
    ap = argparse.ArgumentParser(usage=__doc__.splitlines()[2].replace("usage: ", ""))
    ap.add_argument("--family", default="wg_tiled.cu")
    ap.add_argument("--entry", default="kd_wg_tiled")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--sass", help="also write the entry's whole disassembly here")
    ap.add_argument("-D", dest="defs", action="append", default=[], metavar="NAME=VALUE")
    a = ap.parse_args()
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    defs = dict(DEFAULTS)
    defs.update(d.split("=", 1) if "=" in d else (d, "1") for d in a.defs)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        cmd = [os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc"), f"-arch={a.arch}", "-cubin", "-std=c++17",
               "-I", os.path.join(root, "libdispatch/include"), "-I", os.path.join(root, KERNELS),
               "-I", os.path.join(root, "build/search/generated/kernels"), "-o", cubin,
               os.path.join(root, KERNELS, a.family)] + [f"-D{k}={v}" for k, v in defs.items()]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(r.stderr[-3000:])
        sass = subprocess.run([nvdisasm(), "-c", cubin], capture_output=True, text=True, check=True).stdout
    if a.sass:
        open(a.sass, "w").write(sass)
    for label, loop in loops(sass, a.entry):
        ops = collections.Counter(opcode(b) for b in loop)
        kinds = "/".join(k for k in MARKS if ops[k])
        print(f"loop L{label} ({kinds}): {len(loop)} instructions: " +
              " ".join(f"{k}:{v}" for k, v in ops.most_common(16)))


if __name__ == "__main__":
    main()
