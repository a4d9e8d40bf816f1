#!/usr/bin/env bash
# The capacity gate as one CI step (action.yml runs it; so does .ci/run, on
# kvplan's own baseline, so that it cannot rot): `kvplan check` with GitHub
# annotations on the baseline's lines, the Markdown verdict appended to the
# job summary when the runner gives one, and check's exit code (1 on a
# regression, 65 on a bad baseline).
# Usage: scripts/ci-gate.sh KVPLAN BASELINE [more `kvplan check` flags...]
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 KVPLAN BASELINE [kvplan check flags...]" >&2
  exit 2
fi
kvplan=$1 baseline=$2
shift 2
"$kvplan" check --baseline "$baseline" --format github "$@"
status=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  "$kvplan" check --baseline "$baseline" --format markdown "$@" >> "$GITHUB_STEP_SUMMARY" || true
fi
exit $status
