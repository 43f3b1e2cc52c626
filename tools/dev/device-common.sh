# Shared by the device scripts (device-*.sh, run-gpu-tests.sh), sourced from the repository root.

# use_bundle BUNDLE: sets bundle to BUNDLE's real path and puts its programs and libraries (then
# CUDA's) first on PATH and LD_LIBRARY_PATH.
use_bundle() {
  bundle=$(realpath "$1")
  export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$bundle/bin:$PATH"
}

# device_scenario BUNDLE DIR ARCHIVE: use_bundle BUNDLE; the scenario's detailed logs go to DIR
# (emptied; sets logs), which `archive` packs into one file ARCHIVE in $OUT (the device tool
# returns at most 8 files) or BUNDLE/logs; here is the folder of the scripts it runs (tools/dev).
device_scenario() {
  use_bundle "$1"
  logs=$2
  archive_file=${OUT:-$bundle/logs}/$3
  rm -rf "$logs"
  mkdir -p "$logs" "${OUT:-$bundle/logs}"
  here=tools/dev
}

# shellcheck disable=SC2317  # called at the scenario's end or by its trap
archive() { tar czf "$archive_file" -C "$logs" . 2>/dev/null; }
