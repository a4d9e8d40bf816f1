#!/usr/bin/env bash
# Replays the measured vLLM 0.19 run on an RTX 4090
# (tests/fixtures/reference/serving/RTX4090_Llama-3.1-8B) through
# `kvplan simulate` and prints, as Markdown, its per-second log beside the
# simulated one every STEP seconds (default 10): running and waiting
# requests and KV-cache usage. docs/simulate.md, section 5, holds the output.
#
#   scripts/replay-rtx4090.sh [KVPLAN] [STEP] [extra simulate flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
kvplan=${1:-build/kvplan}
step=${2:-10}
shift $(( $# > 2 ? 2 : $# ))
run=tests/fixtures/reference/serving/RTX4090_Llama-3.1-8B
sim=$(mktemp)
trap 'rm -f "$sim"' EXIT
"$kvplan" simulate --model llama-3.1-8b --gpu rtx-4090 --trace "$run/requests.jsonl" \
    --max-num-seqs 256 --max-num-batched-tokens 2048 --max-model-len 32768 \
    --timeseries-csv "$sim" "$@" > /dev/null
echo "| t (s) | running: vLLM | kvplan | waiting: vLLM | kvplan | KV usage: vLLM | kvplan |"
echo "|---|---|---|---|---|---|---|"
# measured: t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct
# simulated: t_s,running,waiting,kv_cache_usage,prompt_tokens_per_s,generation_tokens_per_s
awk -F, -v step="$step" '
  FNR == 1 { next }
  FILENAME == ARGV[1] { t = int($1 + 0.5); m[t] = $4 "|" $5 "|" sprintf("%.1f%%", $6); if (t > last) last = t; next }
  { t = int($1 + 0.5); s[t] = $2 "|" $3 "|" sprintf("%.1f%%", 100 * $4); if (t > last) last = t }
  END {
    for (t = step; t <= last; t += step) {
      split(t in m ? m[t] : "-|-|-", a, "|"); split(t in s ? s[t] : "-|-|-", b, "|")
      printf "| %d | %s | %s | %s | %s | %s | %s |\n", t, a[1], b[1], a[2], b[2], a[3], b[3]
    }
  }' "$run/timeseries.csv" "$sim"
