#!/usr/bin/env bash
# A/B of versions of a builtin family's kernel source in the kernel lab (kernel_lab.py --serving): the
# same configurations compiled from each version of the kernels folder, the versions run in turn,
# ROUNDS times, then one table of serving-regime times per configuration and version. Where
# kernel_ab.sh times one searched winner through the gate, this times any set of lab variants
# (kernel-lab JSON: plans, diagnostics that leave a launch out) without a search.
#
# usage, on the host:   tools/dev/lab_ab.sh prepare REV...
#          writes lab-ab/REV/, the kernels folder at git revision REV (untracked, so it travels with the
#          tree to the device). Any folder holding the family's .cu and its headers serves as a version,
#          e.g. a copy edited by hand.
#        on the device: tools/dev/lab_ab.sh run CONFIGS.json ROUNDS FAMILY.cu VERSION...
#          VERSION: `tree` (this tree's search/src/builtin/kernels) or a folder from prepare. nvcc and
#          python3 with torch as kernel_lab.py needs them. Output in $OUT (the device tool's folder) or
#          ./lab-ab-out: each run's kernel_lab output, and lab-ab.txt, the table, printed last.
#        anywhere:      tools/dev/lab_ab.sh table DIR   the table again from a run's outputs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kernels=search/src/builtin/kernels

# The table of the run outputs in DIR: one row per configuration (kernel_lab's name, CASE_i; its -D values
# are on its line in each output), one column per version and round in the order they ran, the serving
# time in us, `!` after a result kernel_lab found wrong (as a diagnostic variant's is).
table() {
  python3 - "$1" <<'EOF'
import os, re, sys
d = sys.argv[1]
runs = sorted((f for f in os.listdir(d) if re.match(r"lab-.*-r\d+\.txt$", f)),
              key=lambda f: os.path.getmtime(os.path.join(d, f)))
line = re.compile(r"^(\S+) .* (OK|WRONG) \| serving ([0-9.]+)us vs cublas ([0-9.]+)us")
rows, cols, base = {}, [], {}
for f in runs:
    col = f[4:-4]
    cols.append(col)
    for l in open(os.path.join(d, f)):
        m = line.match(l)
        if m:
            rows.setdefault(m.group(1), {})[col] = m.group(3) + ("" if m.group(2) == "OK" else "!")
            base.setdefault(m.group(1), []).append(float(m.group(4)))
        elif l.endswith(": compile failed\n"):
            rows.setdefault(l.split(":")[0], {})[col] = "no build"
w = max([len(r) for r in rows] + [13])
print(f"{'configuration':{w}s} | " + " | ".join(f"{c:>14s}" for c in cols) + " | cuBLAS us")
for r, v in rows.items():
    b = base.get(r, [])
    print(f"{r:{w}s} | " + " | ".join(f"{v.get(c, '-'):>14s}" for c in cols) +
          (f" | {min(b):.1f}-{max(b):.1f}" if b else " | -"))
print("serving-regime us per call; ! = wrong result (a diagnostic variant's, or a bug)")
EOF
}

case ${1:-} in
prepare)
  shift
  [[ $# -ge 1 ]] || { echo "usage: $0 prepare REV..." >&2; exit 2; }
  cd "$root"
  for rev in "$@"; do
    rm -rf "lab-ab/$rev"
    mkdir -p "lab-ab/$rev"
    # The folder's files at the top of lab-ab/REV: strip as many components as $kernels has.
    git archive "$rev" "$kernels" | tar x -C "lab-ab/$rev" --strip-components=$(($(tr -cd / <<<"$kernels" | wc -c) + 1)) ||
      exit 1
    echo "lab-ab/$rev: the kernels folder at $(git rev-parse --short "$rev")"
  done
  ;;
run)
  shift
  [[ $# -ge 4 ]] || { echo "usage: $0 run CONFIGS.json ROUNDS FAMILY.cu VERSION..." >&2; exit 2; }
  # FAMILY is the family's file name in the kernels folder; a path to it (the tree's, or a
  # version's) names the same file.
  cfg=$1 rounds=$2 family=$(basename "$3")
  shift 3
  cd "$root"
  # Each version's outputs and table column are named by its folder's last component.
  declare -A seen=()
  for v in "$@"; do
    name=$(basename "$v")
    [[ -z ${seen[$name]:-} ]] || { echo "$0: versions ${seen[$name]} and $v are both named $name: rename one folder" >&2; exit 2; }
    seen[$name]=$v
  done
  out=${OUT:-lab-ab-out}
  mkdir -p "$out"
  for ((r = 1; r <= rounds; r++)); do
    for v in "$@"; do
      dir=$kernels
      [[ $v == tree ]] || dir=$v
      [[ -f $dir/$family ]] || { echo "$0: no $dir/$family: FAMILY is a file of the kernels folder (e.g. wg_tma.cu) and VERSION is \`tree' or a folder from prepare" >&2; exit 2; }
      name=$(basename "$v")
      timeout 600 python3 "$here/kernel_lab.py" "$dir/$family" "$cfg" --serving --out "/tmp/lab-ab-$name" \
        >"$out/lab-$name-r$r.txt" 2>&1
      echo "$name round $r: exit $?"
    done
  done
  table "$out" | tee "$out/lab-ab.txt"
  ;;
table)
  table "$2"
  ;;
*)
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
