#!/usr/bin/env bash
# Configures and builds kvplan, printing one line per stage and the compile's
# progress, never silent for more than 10 s (`make run`): a first build on a
# 2-core machine takes minutes, and a silent terminal looks hung.
# Usage: scripts/build-progress.sh BUILD_DIR JOBS [CMAKE_ARGS...] -- TARGET...
# The whole output goes to BUILD_DIR/make-run.log; its tail is shown on failure.
set -uo pipefail
build_dir=$1 jobs=$2
shift 2
cmake_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
shift || true
targets=("$@")
mkdir -p "$build_dir"
log="$build_dir/make-run.log"
: > "$log"
start=$(date +%s)

fail() {
  tail -n 30 "$log"
  echo "build failed: see $log"
  exit 1
}

echo "configuring (cmake) ..."
cmake -S . -B "$build_dir" "${cmake_args[@]}" >> "$log" 2>&1 || fail

# The build's own "[ NN%]" lines are its progress; a ticker fills the gaps
# while one large file compiles.
echo "compiling ${targets[*]} with $jobs jobs ..."
( while sleep 10; do echo "  ... still compiling ($(( $(date +%s) - start )) s)"; done ) &
ticker=$!
trap 'kill $ticker 2>/dev/null' EXIT
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" 2>&1 | tee -a "$log" |
  awk '/^\[ *[0-9]+%\] Building/ { sub(/ object /, " "); sub(/CMakeFiles\/[^ ]*\.dir\//, ""); print "  " $0; fflush() }'
status=${PIPESTATUS[0]}
kill $ticker 2>/dev/null
[ "$status" -eq 0 ] || fail
echo "built in $(( $(date +%s) - start )) s"
