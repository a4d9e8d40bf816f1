#!/usr/bin/env bash
# The GPU check, in one prepared script for a lent GPU machine (which has CUDA,
# CMake and a compiler but none of the Debian -dev packages kvplan's CLI needs):
#
#   1. builds kvplan-gpu-bench with nvcc alone (kernels/cuda, no CMake);
#   2. runs the correctness checks: every GPU kernel against its CPU reference;
#   3. measures bandwidth and the bundled Llama-3.1-8B's decode step at batch 1,
#      16, 64 and context 1K, 8K (and a 512-token prefill), 8 of its 32 layers
#      built and scaled.
#
# Well under 8 minutes on an H100/H200. Results go to $OUT (the device tool's
# output folder) or build-gpu/. Turn them into the measured-vs-predicted table on
# any machine with kvplan built:
#
#   build/kvplan measure --device cuda --model llama-3.1-8b --from RESULT.json --output docs/measurements/NAME.json
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# ARCH (default sm_90), SAMPLE (layers built, default 8), KV (bf16 or fp8).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/build-gpu}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
arch="${ARCH:-sm_90}"
sample="${SAMPLE:-8}"
kv="${KV:-bf16}"
mkdir -p "$out"
start=$(date +%s)

echo "== build ($nvcc, $arch)"
"$nvcc" -std=c++17 -O3 -arch="$arch" -lineinfo \
  "$root"/kernels/cuda/gpu_bench.cu "$root"/kernels/cuda/decode_model.cu "$root"/kernels/cuda/paged_attention.cu \
  "$root"/kernels/cuda/bandwidth.cu "$root"/kernels/cuda/reference.cpp \
  -lcublas -o "$out/kvplan-gpu-bench"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$out/nvidia-smi.csv" 2>/dev/null || true

echo "== correctness (GPU kernels against CPU references)"
"$out/kvplan-gpu-bench" --check | tee "$out/check.json"

echo "== Llama-3.1-8B decode and prefill ($sample of 32 layers, $kv KV)"
# Shape from models/presets/llama-3.1-8b.json: hidden 4096, 32 heads, 8 KV heads of 128, intermediate 14336, 32 layers.
"$out/kvplan-gpu-bench" --hidden 4096 --heads 32 --kv-heads 8 --head-dim 128 --intermediate 14336 --layers 32 \
  --sample "$sample" --batch 1,16,64 --context 1024,8192 --prompt 512 --kv-dtype "$kv" --repeats 20 \
  | tee "$out/llama-3.1-8b-$kv.json"

echo "== done in $(( $(date +%s) - start )) s; results in $out"
