#!/usr/bin/env bash
# Installs the Debian packages kdispatch builds against. Idempotent: does nothing (not even
# `apt-get update`) when every package is already installed. The CUDA Toolkit is not a Debian
# package: it must already be at /usr/local/cuda (or CUDAToolkit_ROOT).
set -euo pipefail

packages=(
  build-essential cmake pkg-config patchelf
  liblmdb-dev libboost-dev libboost-system-dev libboost-filesystem-dev libcurl4-openssl-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev zlib1g-dev libpng-dev python3
  systemd passwd  # the deployment tests: systemd-analyze verify, systemd-sysusers, useradd
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ ! -f "$cuda_root/include/cuda.h" || ! -f "$cuda_root/include/nvrtc.h" ]]; then
  echo "install-deps: the CUDA Toolkit is not at $cuda_root (need cuda.h, nvrtc.h, cublasLt.h);" \
       "install it or set CUDAToolkit_ROOT" >&2
  exit 1
fi
