#!/usr/bin/env bash
# Shows that the architecture check can fail: plant a family name in a copy of shared code.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/families" "$root/core" "$tmp/"
bash "$root/tests/architecture_check.sh" "$tmp" >/dev/null || { echo "clean copy failed the check"; exit 1; }
echo '// builds timm_efficientnet models' >> "$tmp/core/error.h"
if bash "$root/tests/architecture_check.sh" "$tmp" >/dev/null; then echo "planted family name was not caught"; exit 1; fi
echo '#include "families/x/y.h"' > "$tmp/core/planted.cpp"
sed -i '$d' "$tmp/core/error.h"
if bash "$root/tests/architecture_check.sh" "$tmp" >/dev/null; then echo "planted include was not caught"; exit 1; fi
echo "architecture check self-test: ok"
