// vLLM releases and what each one's start-up subtracts before the KV pool.
// The rules change at a few releases (docs/concurrency.md, "vLLM releases"):
//   0.16.1  the dummy sampler's top-k/top-p runs the in-place Triton kernel
//           (vllm PR #33538) instead of PyTorch's sort;
//   0.18.0  Worker.determine_available_memory runs profile_cudagraph_memory()
//           inside memory_profiling() and discards the estimate unless
//           VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (vllm PR #30515); what
//           the throwaway capture leaves outside PyTorch's allocator lands in
//           non_torch_increase (vllm PR #51590, local-inference-lab/vllm#201);
//   0.21.0  the estimate is subtracted by default ("CUDA graph memory profiling
//           is enabled (default since v0.21.0)").
#pragma once

#include <string>
#include <vector>

#include "core/memory/overhead.hpp"

namespace kvplan {

struct VllmRelease {
    int major = 0, minor = 0, patch = 0;
};

struct VllmReleaseRules {
    VllmSampler sampler = VllmSampler::PyTorchSort;
    VllmGraphProfile graph_profile = VllmGraphProfile::None;
};

// The release series kvplan knows, oldest first: "0.10" ... "0.27".
std::vector<std::string> known_vllm_series();

// "0.19.0", "0.19" or "0.19.0rc1". Throws Error(Usage) naming --vllm-version
// for text that is not a version, and for a series kvplan does not know,
// naming the nearest one it does.
VllmRelease parse_vllm_release(const std::string& text);

VllmReleaseRules vllm_release_rules(const VllmRelease& release);

std::string vllm_release_text(const VllmRelease& release);  // "0.19.0"

}  // namespace kvplan
