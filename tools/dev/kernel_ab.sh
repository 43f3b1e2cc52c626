#!/usr/bin/env bash
# A/B of a builtin family's kernel text on a GPU, through the product's own gate and timing.
# For each shape line: `kdctl search` (builtin proposer, the daemon's default rounds and candidates)
# finds the winner with this bundle's kernels; then the winner's rendered source is timed by
# `kdctl validate` twice over: as rendered ("new") and with its family text replaced by FAMILY_TEXT
# ("old", written on the host by `tools/dev/family_text.py --rev REV FILE`), alternating, ROUNDS
# times each. Same configuration (the rendered #defines and plan), same run, same GPU: what differs
# is the kernel text alone. Shapes whose winner is another family (or cuBLAS) are only searched.
#
# usage: tools/dev/kernel_ab.sh SHAPES FAMILY_TEXT [ROUNDS]
#   kdctl on PATH (a bundle's bin); KD_AB_WALL: each search's wall seconds (45); logs and the table
#   in $OUT (the device tool's) or ./kernel-ab; the table is printed last.
set -u
shapes=$1 family_text=$2 rounds=${3:-2}
out=${OUT:-kernel-ab}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
family=$(sed -n '1s|^// Family \([a-z0-9_]*\):.*|\1|p' "$family_text")
[[ -n $family ]] || { echo "kernel_ab.sh: $family_text does not start with '// Family NAME:'" >&2; exit 2; }
table=$out/kernel-ab.txt
log=$out/kernel-ab.log
: >"$log"
printf '%-70s | %-10s | %-22s | %-22s | %s\n' "shape" "family" "new us (serving)" "old us (serving)" "cuBLAS us" >"$table"

# The serving-regime times of a `kdctl validate` report: "CANDIDATE CUBLAS" (or "- -").
times() {
  sed -n 's/^  time (serving): \([0-9.]*\) us .* vs [^0-9]* \([0-9.]*\) us .*/\1 \2/p' "$1" | head -1 | grep . || echo "- -"
}

i=0
grep -v '^\s*#' "$shapes" | grep . | while read -r key; do
  i=$((i + 1))
  cache=$work/cache$i
  timeout 600 kdctl search --key "$key" --proposer builtin --rounds 8 --max-candidates 256 \
    --wall-seconds "${KD_AB_WALL:-45}" --cache-dir "$cache" >"$work/search$i.log" 2>&1
  { echo "== $key"; grep -E '^(winner|stopped|kept)' "$work/search$i.log" || tail -2 "$work/search$i.log"; } >>"$log"
  kdctl show "$key" --cache-dir "$cache" --source >"$work/show$i.txt" 2>/dev/null
  sed -n '/^--- source ---$/,$p' "$work/show$i.txt" | tail -n +2 >"$work/new$i.cu"
  won=$(sed -n '1s|^// kdispatch builtin family \([a-z0-9_]*\):.*|\1|p' "$work/new$i.cu")
  if [[ $won != "$family" ]]; then
    printf '%-70s | %-10s | %s\n' "${key:0:70}" "${won:-none}" "not $family: searched only" >>"$table"
    continue
  fi
  awk '/^\/\/ Family /{exit} {print}' "$work/new$i.cu" >"$work/old$i.cu"
  cat "$family_text" >>"$work/old$i.cu"
  new_t="" old_t="" base=""
  for ((r = 1; r <= rounds; r++)); do
    for v in new old; do
      kdctl validate --key "$key" --kernel "$work/$v$i.cu" >"$work/v.log" 2>&1
      { echo "$v round $r, exit $?:"; grep -E 'verdict|time \(|error vs' "$work/v.log"; } >>"$log"
      read -r t c < <(times "$work/v.log")
      if [[ $v == new ]]; then new_t+="$t "; else old_t+="$t "; fi
      base+="$c "
    done
  done
  printf '%-70s | %-10s | %-22s | %-22s | %s\n' "${key:0:70}" "$family" "$new_t" "$old_t" "$base" >>"$table"
done
cat "$table"
