#!/usr/bin/env bash
# Fails when shared code (everything but families/) includes a family's files or names a family:
# each families/<name>/family.toml lists the words only that folder may use. Shared tests (tests/)
# may name a family's checkpoints and architectures in string literals (test data, registry
# look-ups) but never include its code or name it in code; quantize/ and the rest not at all.
#   architecture_check.sh [REPO_ROOT]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
shared=(include core checkpoints graph bundle backends tasks datasets quantize validate api serve cli examples fuzz CMakeLists.txt)
existing=()
for d in "${shared[@]}" tests; do [ -e "$d" ] && existing+=("$d"); done
status=0
if hits=$(grep -rIn --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' '#include "families/' "${existing[@]}"); then
  echo "architecture: shared code includes a family's header:"; echo "$hits"; status=1
fi
strict=()
for d in "${shared[@]}"; do [ -e "$d" ] && strict+=("$d"); done
# tests/ sources with their string literals and comments removed.
stripped=$(mktemp -d)
trap 'rm -rf "$stripped"' EXIT
if [ -d tests ]; then
  while IFS= read -r f; do
    mkdir -p "$stripped/$(dirname "$f")"
    sed -E 's/"([^"\\]|\\.)*"//g; s|//.*$||' "$f" > "$stripped/$f"
  done < <(find tests -name '*.cpp' -o -name '*.h')
fi
for manifest in families/*/family.toml; do
  [ -e "$manifest" ] || continue
  words=$(sed -n 's/^words *= *\[\(.*\)\]/\1/p' "$manifest" | tr -d '" ' | tr ',' ' ')
  [ -n "$words" ] || { echo "architecture: $manifest has no words = [...] line"; status=1; continue; }
  for w in $words; do
    if hits=$(grep -rIin --exclude-dir=families -- "$w" "${strict[@]}"); then
      echo "architecture: shared code names the family word '$w' ($manifest):"; echo "$hits"; status=1
    fi
    if [ -d "$stripped/tests" ] && hits=$(cd "$stripped" && grep -rIin -- "$w" tests); then
      echo "architecture: shared tests name the family word '$w' in code ($manifest):"; echo "$hits"; status=1
    fi
  done
done
[ $status = 0 ] && echo "architecture: shared code names no family"
exit $status
