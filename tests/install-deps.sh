#!/usr/bin/env bash
# Installs what nq's tests need, from Debian's packages: what nq needs (deploy/install-deps.sh),
# then the tests' own tools. Idempotent; uses sudo when not root.
set -euo pipefail
pkgs=(python3-zmq python3-msgpack sqlite3 iproute2 procps dpkg-dev file bc curl util-linux
      clang libclang-rt-dev           # the sanitizer build (tests/run.sh --sanitize) and the fuzzers
      shellcheck yamllint             # test_deploy_lint
      chromium prometheus             # the web view is tested in Chromium, /metrics against Prometheus
      gdb                             # a failing integration test prints each live broker's threads
      pocl-opencl-icd clinfo)         # the GPU tests run the OpenCL kernels on the CPU through pocl
exec "$(dirname "$0")/../deploy/install-deps.sh" "${pkgs[@]}"
