#!/usr/bin/env bash
# Builds row_reduce variants with nvcc here, to carry to a device and run there.
# Usage: tools/dev/row_lab/row_lab.sh build VARIANTS_FILE OUT_DIR   (here: one binary per variant)
#        tools/dev/row_lab/row_lab.sh run OUT_DIR ROWS:COLS...      (on the device: every variant)
# VARIANTS_FILE: one variant per line, `NAME -DKD_OP=1 -DKD_DT=1 ...` (the kernel's KD_* macros;
# KD_ONE_TILE=1 where every row chunk is one tile and KD_FULL_TILE=1 where it is exactly one full
# tile, as row_render sets them). Each prints its time and TB/s (x read and y written once) per
# shape; shapes a variant cannot run print an error line. WAVES=N in the environment of `run` caps
# the grid at N waves of resident blocks (default 4, row_plan's cap; a ring variant always takes 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
case ${1:-} in
build)
  mkdir -p "$3"
  while read -r name flags; do
    [[ -z $name || $name == \#* ]] && continue
    # shellcheck disable=SC2086  # the flags are words
    nvcc -O3 -std=c++17 -arch=sm_90 -I"$root/libdispatch/include" -I"$root/search/src/builtin/kernels" \
      -DVARIANT="\"$name\"" $flags -o "$3/$name" "$here/rowbench.cu" &
    (( $(jobs -r | wc -l) >= 2 )) && wait -n
  done <"$2"
  wait
  ;;
run)
  dir=$2
  shift 2
  for bin in "$dir"/*; do "$bin" "$@" || true; done
  ;;
*)
  sed -n '2,7p' "$0"
  exit 2
  ;;
esac
