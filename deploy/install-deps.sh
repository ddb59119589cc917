#!/usr/bin/env bash
# Installs what nq needs to build and run, from Debian's packages: nothing for its tests (those
# are tests/install-deps.sh). No OpenCL driver either: `--gpu` uses the GPU driver of the machine
# (docs/gpu.md), and a CPU one such as pocl would make it count on the CPU.
# Idempotent: packages already present are skipped, so a user without sudo passes once they are.
# Uses sudo when not root. Extra packages as arguments: tests/install-deps.sh passes its own.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libzmq3-dev libmsgpack-dev libsqlite3-dev libsodium-dev
      libmicrohttpd-dev                     # the web view and /metrics (nq builds without it)
      ocl-icd-opencl-dev opencl-c-headers   # the GPU worker: OpenCL headers and the ICD loader
      "$@")
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
