#!/usr/bin/env bash
# Fails when shared code (everything but families/) includes a family's files or names a family:
# each families/<name>/family.toml lists the words only that folder may use.
#   architecture_check.sh [REPO_ROOT]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
shared=(include core checkpoints graph bundle backends tasks datasets api cli examples CMakeLists.txt)
existing=()
for d in "${shared[@]}"; do [ -e "$d" ] && existing+=("$d"); done
status=0
if hits=$(grep -rIn --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' '#include "families/' "${existing[@]}"); then
  echo "architecture: shared code includes a family's header:"; echo "$hits"; status=1
fi
for manifest in families/*/family.toml; do
  [ -e "$manifest" ] || continue
  words=$(sed -n 's/^words *= *\[\(.*\)\]/\1/p' "$manifest" | tr -d '" ' | tr ',' ' ')
  [ -n "$words" ] || { echo "architecture: $manifest has no words = [...] line"; status=1; continue; }
  for w in $words; do
    if hits=$(grep -rIin --exclude-dir=families -- "$w" "${existing[@]}"); then
      echo "architecture: shared code names the family word '$w' ($manifest):"; echo "$hits"; status=1
    fi
  done
done
[ $status = 0 ] && echo "architecture: shared code names no family"
exit $status
