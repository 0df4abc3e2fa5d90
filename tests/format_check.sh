#!/usr/bin/env bash
# Fails if any C++/CUDA source differs from what clang-format (.clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cpp' '*.cu' '*.cuh')
clang-format --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
