#!/usr/bin/env bash
# Fails if any C++/CUDA source differs from what clang-format (.clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp')
clang-format --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
