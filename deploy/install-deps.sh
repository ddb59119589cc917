#!/usr/bin/env bash
# Installs what nq needs to build, test and run, from Debian's packages.
# Idempotent: packages already present are skipped. Uses sudo when not root.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libzmq3-dev libmsgpack-dev libsqlite3-dev libmicrohttpd-dev libsodium-dev
      python3-zmq python3-msgpack sqlite3 iproute2 clang libclang-rt-dev shellcheck yamllint procps dpkg-dev file bc
      curl chromium prometheus    # the web view is tested in Chromium, /metrics against Prometheus
      gdb                         # a failing integration test prints each live broker's threads
      ocl-icd-opencl-dev opencl-c-headers   # the GPU worker: OpenCL headers and the ICD loader
      pocl-opencl-icd clinfo)     # ... whose tests run its kernel on the CPU through pocl
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
