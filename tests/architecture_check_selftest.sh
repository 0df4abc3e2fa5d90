#!/usr/bin/env bash
# Shows that the architecture check can fail: plant a family name in copies of shared code and
# of a shared test, and an include of a family's header.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/families" "$root/core" "$root/quantize" "$root/tests" "$tmp/"
bash "$root/tests/architecture_check.sh" "$tmp" >/dev/null || { echo "clean copy failed the check"; exit 1; }
fail=0
expect_caught() {  # FILE LINE WHAT
  echo "$2" >> "$tmp/$1"
  if bash "$root/tests/architecture_check.sh" "$tmp" >/dev/null; then echo "not caught: $3"; fail=1; fi
  sed -i '$d' "$tmp/$1"
}
expect_caught core/error.h '// builds timm_efficientnet models' "a family name in core/"
expect_caught quantize/recipe.h '// efficientnet layers' "a family name in quantize/"
expect_caught tests/bundle_test.cpp 'int efficientnet_layers = 3;' "a family name in a shared test's code"
expect_caught tests/bundle_test.cpp '#include "families/x/y.h"' "a family header included by a shared test"
[ $fail = 0 ] && echo "architecture check self-test: ok"
exit $fail
