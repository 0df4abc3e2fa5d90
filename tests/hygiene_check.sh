#!/usr/bin/env bash
# Fails when a tracked file holds what a public repository must not: absolute paths of one
# machine (in logs and recorded environments too), credentials or tokens, internal host names
# or private addresses, or words about how the work behind the repository is organised (work
# sessions, remote-GPU tooling and its call/carry vocabulary, tracker numbers as targets).
#   hygiene_check.sh [REPO_ROOT]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
# Itself and its self-test spell the patterns out.
mapfile -t files < <(git ls-files 2>/dev/null || find . -type f -not -path './.git/*' | sed 's|^\./||')
mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v -E '^tests/hygiene_check(_selftest)?\.sh$|^samples/.*\.(png|jpg|webp)$')
status=0
check() {  # check DESCRIPTION EXTENDED_REGEX
  local hits
  if hits=$(grep -n -I -E -i -- "$2" "${files[@]}" 2>/dev/null); then
    echo "hygiene: $1:"
    echo "$hits" | head -20
    status=1
  fi
}
check "an absolute path of one machine" '(^|[^a-z0-9_.])(/work/|/root/|/home/[a-z0-9_]+/|/Users/[a-z0-9_]+/|[a-z]:\\users\\)'
check "a credential or token" '(hf_[a-z0-9]{30,}|ghp_[a-z0-9]{30,}|github_pat_[a-z0-9_]{20,}|akia[0-9a-z]{16}|-----begin [a-z ]*private key-----|bearer [a-z0-9._-]{24,})'
check "an internal host name or private address" '([a-z0-9-]+\.(internal|corp|intranet)\b|\b(10|192\.168)\.[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?\b|\b172\.(1[6-9]|2[0-9]|3[01])\.[0-9]{1,3}\.[0-9]{1,3}\b)'
check "words about how the work is organised" '(\bwork sessions?\b|\bthis session\b|\bsession.s\b|\bdevice (tool|call|calls|time)\b|\.carry\b|\bcarry folder|\bcarried paths?\b|\b(issue|task|ticket)s? #?[0-9]+\b)'
[ $status = 0 ] && echo "hygiene: ${#files[@]} tracked files clean"
exit $status
