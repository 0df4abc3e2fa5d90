#!/usr/bin/env bash
# Builds kiln and runs every CPU test: unit and parity tests, CLI error paths, Hub downloads on
# loopback, architecture and format checks, then the libFuzzer targets for a bounded time.
# GPU tests (label gpu) skip where no GPU is present; run them on a GPU machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "$(id -u)" = 0 ] && bash scripts/install-deps.sh
bash scripts/fetch-default-model.sh >/dev/null  # the TF.js import test reads it

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON \
  -DKILN_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz
ctest --test-dir build-fuzz -L fuzz --output-on-failure

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
# Two tests at a time, each on one thread: tests whose OpenMP and OpenBLAS threads share two cores
# with another test's spin-wait and run many times slower.
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ctest --test-dir build --output-on-failure -j2
