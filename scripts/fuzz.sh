#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS (default 60), seeded from the
# project's own configs, baselines, GGUF headers and traces, with tests/fuzz/json.dict
# (tests/fuzz/gguf.dict for fuzz_gguf). New inputs
# go to BUILD/corpus/<target>/ (kept between runs); a crash is written to
# BUILD/crashes/ and fails the script. Called by `make fuzz`.
#
#   scripts/fuzz.sh BUILD [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/fuzz.sh BUILD [SECONDS]}
seconds=${2:-60}
targets="fuzz_config fuzz_baseline fuzz_safetensors fuzz_gguf fuzz_trace"
for target in $targets; do mkdir -p "$build/corpus/$target" "$build/seeds/$target"; done
mkdir -p "$build/crashes"
cp models/presets/*.json models/engines/*.json tests/fixtures/configs/*.json tests/fixtures/bad/*.json tests/fixtures/constructed/*.json \
   "$build/seeds/fuzz_config/" 2>/dev/null || true
cp tests/baseline/presets.json docs/examples/*.json "$build/seeds/fuzz_baseline/" 2>/dev/null || true
# Safetensors headers: the first byte picks the data size (fuzz_safetensors.cpp), then the header's JSON.
cp tests/fixtures/safetensors/*.seed "$build/seeds/fuzz_safetensors/" 2>/dev/null || true
cp tests/fixtures/gguf/*.gguf "$build/seeds/fuzz_gguf/" 2>/dev/null || true
# Traces: the first lines of each bundled format.
for t in tests/fixtures/reference/traces/*.csv tests/fixtures/reference/traces/*.jsonl \
         tests/fixtures/reference/serving/*/requests.jsonl; do
  head -n 12 "$t" > "$build/seeds/fuzz_trace/$(basename "$(dirname "$t")")-$(basename "$t")"
done
# vllm bench serve's result: one JSON document (under the target's 64 KiB), whole.
cp tests/fixtures/reference/serving/vllm-bench_*/*.json "$build/seeds/fuzz_trace/"
# Valid inputs a target once timed out on (tests/fixtures/fuzz/README.md).
for t in tests/fixtures/fuzz/fuzz_*; do
  target=${t##*/}; target=${target%%-*}
  [ -d "$build/seeds/$target" ] && cp "$t" "$build/seeds/$target/"
done
status=0
for target in $targets; do
  echo "== $target: ${seconds} s"
  dict=tests/fuzz/json.dict
  [ "$target" = fuzz_gguf ] && dict=tests/fuzz/gguf.dict
  # -rss_limit_mb: the machine has 24 GiB; a runaway allocation is a finding too.
  if ! ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
       "$build/$target" -max_total_time="$seconds" -dict="$dict" -max_len=65536 -rss_limit_mb=4096 \
       -timeout=10 -print_final_stats=1 -artifact_prefix="$build/crashes/$target-" \
       "$build/corpus/$target" "$build/seeds/$target" 2>"$build/$target.log"; then
    status=1
    echo "$target FAILED: see $build/$target.log and $build/crashes/"
    grep -E "ERROR|SUMMARY|runtime error" "$build/$target.log" | head -5 || true
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$build/$target.log" || true
done
exit $status
