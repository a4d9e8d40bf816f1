#!/usr/bin/env bash
# Regenerates the command outputs quoted in README.md and docs/*.md, so they
# cannot drift from what kvplan prints (after google/bloaty's regen-readme.py).
#
#   scripts/regen-readme.sh [path/to/kvplan]          rewrite the files in place
#   scripts/regen-readme.sh --check [path/to/kvplan]  exit 1 if any is stale (run by CTest)
#
# Each block looks like:
#   <!-- kvplan: size --model llama-3.1-8b -->
#   ```
#   $ kvplan size --model llama-3.1-8b
#   ...output...
#   ```
# and the output is replaced with what that command prints now.
#
# A block of failing commands (docs/errors.md) looks like:
#   <!-- kvplan: errors -->
#   ```
#   $ kvplan size --model tests/fixtures/bad/empty.json
#   kvplan: error: ...its stderr...
#   (exit 65)
#   ```
# Each `$ kvplan ARGS` line is kept and run again; what follows it is replaced
# with the command's stderr and its exit code (stdout is dropped: a failing
# command prints nothing there).
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
root="$(cd "$(dirname "$0")/.." && pwd)"
kvplan="${1:-$root/build/kvplan}"
case "$kvplan" in /*) ;; *) kvplan="$PWD/$kvplan" ;; esac
# Commands run from the repository root, so quoted paths (docs/examples/...) read as written.
cd "$root"
# The outputs quoted are stdout and stderr together: no progress lines (cli/progress.hpp) from a slow run.
export KVPLAN_PROGRESS=0
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
stale=0

for readme in "$root/README.md" "$root"/docs/*.md; do
awk -v kvplan="$kvplan" '
  function run(args,   cmd, line) {
    cmd = kvplan " " args " 2>&1"
    while ((cmd | getline line) > 0) print line
    close(cmd)
  }
  function fail(args,   cmd, line) {
    cmd = kvplan " " args " 2>&1 >/dev/null; echo \"(exit $?)\""
    while ((cmd | getline line) > 0) print line
    close(cmd)
  }
  errors && /^```$/ { errors = 0; print; next }
  errors && ($0 == "$ kvplan" || /^\$ kvplan /) { print; args = $0; sub(/^\$ kvplan ?/, "", args); fail(args); next }
  errors { next }
  skipping && /^```$/ { skipping = 0; print; next }
  skipping { next }
  /^<!-- kvplan: errors -->$/ { print; getline; print; errors = 1; next }
  /^<!-- kvplan: .* -->$/ {
    args = $0; sub(/^<!-- kvplan: /, "", args); sub(/ -->$/, "", args)
    print; getline; print            # the opening ``` line
    print "$ kvplan " args
    run(args)
    skipping = 1
    next
  }
  { print }
' "$readme" > "$tmp"

if [ "$check" = 1 ]; then
  if ! diff -u "$readme" "$tmp"; then
    echo "${readme#$root/} is out of date: run scripts/regen-readme.sh" >&2
    stale=1
  fi
elif ! cmp -s "$tmp" "$readme"; then
  cp "$tmp" "$readme"
fi
done
exit "$stale"
