#!/usr/bin/env bash
# Shows that the hygiene check can fail: each kind of finding planted in a copy of the tree.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/tests" "$root/docs" "$tmp/" 2>/dev/null
(cd "$tmp" && git init -q && git add -A) || exit 1
bash "$root/tests/hygiene_check.sh" "$tmp" >/dev/null || { echo "clean copy failed the check"; exit 1; }
fail=0
for planted in 'built from /work/main/shared/x' 'HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789' \
               'scp to gpu-7.internal first' 'measured in the same device call' 'resolves issue 8'; do
  echo "$planted" > "$tmp/docs/planted.md"
  (cd "$tmp" && git add docs/planted.md)
  if bash "$root/tests/hygiene_check.sh" "$tmp" >/dev/null; then echo "not caught: $planted"; fail=1; fi
done
[ $fail = 0 ] && echo "hygiene check self-test: ok"
exit $fail
