#!/usr/bin/env python3
"""Shows, without a GPU, whether a change to the builtin kernels or their host rules changed what
runs: dumps every configuration that matters (kd_kernel_dump: the seeds of every key in
tools/shapes/llama3-8b.txt, every idea move applied to them, every kernel-lab variant in
tools/dev/lab_*.json) rendered by render() and compiled by NVRTC for sm_90a, then compares two dumps.

usage:
  kernel_equivalence.py dump OUT [--build DIR] [--jobs N] [--only TEXT] [--ids FILE] [--families wg_tiled,wg_tma]
                              [--plans]
      OUT gets one .cu, .cubin, .ptx and .log (ptxas -v) per distinct configuration and index.tsv.
      --only and --ids keep a subset (a text in the id or parameters; the ids listed in FILE).
      --plans writes index.tsv alone (the launch plans, in seconds: nothing is compiled).
  kernel_equivalence.py base REV OUT [--jobs N] ...
      The same for revision REV (must contain kd_kernel_dump), built in a temporary directory from
      `git archive REV` (configure and build of kd_kernel_dump only).
  kernel_equivalence.py compare BASE NEW [--list] [--plans]
      Exit status 0 when every launch plan is the same and every cubin is identical or identical
      apart from its line table; 1 otherwise. When NEW holds a subset (--only, --ids), BASE's rows
      are compared for that subset. --plans compares the launch plans alone (dumps made with --plans).

What compare reports, per configuration (both dumps must have the same configurations):
  identical       the cubins are the same bytes;
  same code       every ELF section but the line tables is the same bytes: the SASS (.text.*), the
                  kernel attributes (.nv.info*), constants, symbols and frames. Compiled with
                  -lineinfo (compile_cuda always asks for it), a cubin records source line numbers
                  (.debug_line, .nv_debug_line_sass) and the PTX text (.nv_debug_ptx_txt), so moving
                  a line of kernel source moves these without changing an instruction;
  fails to compile in both   the same ptxas errors but for their PTX line numbers (a lab variant
                  that never fit);
  different code  anything else, shown with its ptxas resource lines (registers, barriers, spills,
                  stack) and its PTX instruction counts per opcode, old against new.
Launch plans (index.tsv) must match row for row."""
import collections, os, re, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../.."))
# Sections that carry source positions or the PTX text, not machine code (and their relocations).
LINE_SECTIONS = {".debug_line", ".debug_str", ".nv_debug_line_sass", ".nv_debug_ptx_txt",
                 ".rela.debug_line", ".rela.nv_debug_line_sass", ".shstrtab"}


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def dump_options(args):
    """kd_kernel_dump's options from ours; --plans is --jobs 0 (index.tsv is written before compiling)."""
    cmd = []
    if "--plans" in args:
        args.remove("--plans")
        args += ["--jobs", "0"]
    for flag in ("--jobs", "--only", "--ids", "--families"):
        value = opt(args, flag)
        if value is not None:
            cmd += [flag, os.path.abspath(value) if flag == "--ids" else value]
    return cmd


def run_dump(build, out, args):
    exe = os.path.join(build, "bin", "kd_kernel_dump")
    if not os.path.exists(exe):
        sys.exit(f"{exe} is missing: cmake --build {build} --target kd_kernel_dump")
    return subprocess.call([exe, "--source-dir", REPO, "--out", out] + dump_options(args))


def dump(args):
    out = args.pop(0)
    build = opt(args, "--build", os.path.join(REPO, "build"))
    # kd_kernel_dump carries the kernels' text as it was when it was linked: one left behind by a build of
    # another target dumps the old kernels, and compare then calls a kernel change "same code".
    if os.path.isdir(build):
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2), "--target", "kd_kernel_dump"],
                       check=True, stdout=subprocess.DEVNULL)
    sys.exit(run_dump(build, out, args))


def base(args):
    rev, out = args.pop(0), args.pop(0)
    tmp = tempfile.mkdtemp(prefix="kd-base-")
    try:
        src = os.path.join(tmp, "src")
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", REPO, "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        build = os.path.join(tmp, "build")
        env = dict(os.environ)
        if shutil.which("ccache"):  # the revision's compiles are cached where ccache is installed
            env.update(CMAKE_CXX_COMPILER_LAUNCHER="ccache", CMAKE_C_COMPILER_LAUNCHER="ccache")
        subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG", "-DKD_BUILD_TESTS=OFF", "-DKD_BUILD_BENCH=OFF"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2), "--target", "kd_kernel_dump"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        exe = os.path.join(build, "bin", "kd_kernel_dump")
        sys.exit(subprocess.call([exe, "--source-dir", src, "--out", out] + dump_options(args)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sections(path):
    """{name: bytes} of an ELF64 little-endian file (a cubin)."""
    d = open(path, "rb").read()
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out = {}
    for name_off, typ, _flags, _addr, off, size, *_ in heads:
        name = d[strtab + name_off:d.index(b"\0", strtab + name_off)].decode()
        out[name] = b"" if typ == 8 else d[off:off + size]  # SHT_NOBITS holds no bytes
    return out


def same_code(a, b):
    sa, sb = sections(a), sections(b)
    keep = lambda s: {k: v for k, v in s.items() if k not in LINE_SECTIONS}
    return keep(sa) == keep(sb)


def resources(log_path):
    """ptxas -v lines about each entry: registers, barriers, spills, stack (not the compile time)."""
    lines = []
    for line in open(log_path, errors="replace"):
        if "ptxas" in line and "Compile time" not in line:
            lines.append(re.sub(r"\s+", " ", line.strip()))
    return lines


def opcodes(ptx_path):
    """PTX instruction counts per opcode (directives, labels and braces left out)."""
    counts = collections.Counter()
    for line in open(ptx_path, errors="replace"):
        s = line.strip()
        if not s or s.startswith((".", "//", "{", "}", "$")) or s.endswith(":"):
            continue
        s = re.sub(r"^@!?%?\w+\s+", "", s)  # guard predicate
        op = s.split()[0].rstrip(";")
        if op and not op.startswith(")"):
            counts[op] += 1
    return counts


def index(path):
    with open(os.path.join(path, "index.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return rows


def compare(args):
    listing = "--list" in args
    plans_only = "--plans" in args
    old, new = [a for a in args if not a.startswith("--")][:2]
    rows_old, rows_new = index(old), index(new)
    subset = {r[4] for r in rows_new}
    rows_old = [r for r in rows_old if r[4] in subset]
    ok = True
    # Plans and configurations: origin, family, key, params, id, plan.
    if len(rows_old) != len(rows_new):
        print(f"configurations: {len(rows_old)} before, {len(rows_new)} after")
        ok = False
    plan_diffs = [(a, b) for a, b in zip(rows_old, rows_new) if a != b]
    for a, b in plan_diffs[:20]:
        print("DIFFERENT ROW\n  before: " + "\t".join(a) + "\n  after:  " + "\t".join(b))
    ok = ok and not plan_diffs
    if plans_only:
        same = not plan_diffs and len(rows_old) == len(rows_new)
        print(f"{len(rows_new)} configurations, launch plans {'all the same' if same else 'DIFFERENT'}")
        sys.exit(0 if ok else 1)
    ids = sorted({r[4] for r in rows_new})
    verdict = collections.Counter()
    different = []
    for cid in ids:
        a, b = os.path.join(old, cid + ".cubin"), os.path.join(new, cid + ".cubin")
        if not os.path.exists(a) and not os.path.exists(b):
            # A lab variant may be one that never compiled (ptxas out of registers): the same errors,
            # at whatever PTX line (the PTX's .file table grows with the source's includes).
            la, lb = (os.path.join(d, cid + ".log") for d in (old, new))
            errors = lambda log: [re.sub(r"at line \d+", "at line N", r) for r in resources(log)]
            same = os.path.exists(la) and os.path.exists(lb) and errors(la) == errors(lb)
            verdict["fails to compile in both" if same else "missing or failed to compile"] += 1
            if not same:
                different.append(cid)
            continue
        if not os.path.exists(a) or not os.path.exists(b):
            verdict["missing or failed to compile"] += 1
            different.append(cid)
            continue
        if open(a, "rb").read() == open(b, "rb").read():
            verdict["identical"] += 1
        elif same_code(a, b):
            verdict["same code"] += 1
        else:
            verdict["different code"] += 1
            different.append(cid)
    print(f"{len(rows_new)} configurations ({len(ids)} distinct), launch plans "
          f"{'all the same' if not plan_diffs and len(rows_old) == len(rows_new) else 'DIFFERENT'}")
    for k in ("identical", "same code", "different code", "fails to compile in both", "missing or failed to compile"):
        print(f"  {k:30s} {verdict[k]}")
    for cid in different:
        ok = False
        print(f"\n{cid}:")
        for f in (old, new):
            log = os.path.join(f, cid + ".log")
            if os.path.exists(log):
                print(f"  {'before' if f == old else 'after '}: " + " | ".join(resources(log)))
        pa, pb = os.path.join(old, cid + ".ptx"), os.path.join(new, cid + ".ptx")
        if os.path.exists(pa) and os.path.exists(pb):
            ca, cb = opcodes(pa), opcodes(pb)
            delta = {op: (ca[op], cb[op]) for op in sorted(set(ca) | set(cb)) if ca[op] != cb[op]}
            print("  PTX opcodes: " + ("the same counts" if not delta else
                                       ", ".join(f"{op} {x}->{y}" for op, (x, y) in delta.items())))
            ra, rb = resources(os.path.join(old, cid + ".log")), resources(os.path.join(new, cid + ".log"))
            print("  ptxas resources: " + ("the same" if ra == rb else "DIFFERENT"))
    if listing:
        for cid in ids:
            print(cid)
    sys.exit(0 if ok else 1)


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("dump", "base", "compare"):
        sys.exit(__doc__)
    {"dump": dump, "base": base, "compare": compare}[args.pop(0)](args)


if __name__ == "__main__":
    main()
