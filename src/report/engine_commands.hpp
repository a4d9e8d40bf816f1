// The engine commands `kvplan recommend` prints for a candidate: vLLM's
// `vllm serve`, SGLang's `launch_server` and TensorRT-LLM's `trtllm-serve`
// with the YAML file its --extra_llm_api_options reads; one command per node
// for a layout over several nodes; and, as shell comments, why a setting
// differs from the engine's default (docs/recommend.md, "Commands").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/output_width.hpp"
#include "core/speed/recommend.hpp"

namespace kvplan {

// What the checkpoint needs the engines told beyond a candidate's settings.
struct ServeOptions {
    std::string model = "CHECKPOINT";         // what `vllm serve` takes
    std::optional<std::string> quantization;  // --quantization, only where the engine cannot tell by itself
    std::optional<std::string> dtype;         // --dtype: a --weights-dtype the engines cast to on load
    std::vector<std::string> notes;           // what the commands cannot say
    // "prefill" or "decode": one instance of a disaggregated unit, its KV
    // moved by NIXL (vLLM's NixlConnector, SGLang's --disaggregation-mode).
    std::optional<std::string> pd_role;
    // Why a setting differs from the engine's default, one sentence each
    // ("--max-num-seqs 2709: ..."), printed above the commands as shell comments.
    std::vector<std::string> reasons;
};

// The file the TensorRT-LLM command reads its settings from.
inline constexpr const char* kTrtllmYaml = "trtllm.yaml";

// The settings a candidate assumes, as each engine's flags (the first node's).
std::string vllm_flags(const Candidate& c, const ServeOptions& s = {});
std::string sglang_flags(const Candidate& c, const ServeOptions& s = {});
std::string trtllm_flags(const Candidate& c);
// The whole command lines, on one line each (the first node's).
std::string vllm_command(const Candidate& c, const ServeOptions& s);
std::string sglang_command(const Candidate& c, const ServeOptions& s);
std::string trtllm_command(const Candidate& c, const ServeOptions& s);
// One command per node of a replica (c.nodes of them): node 0 the head.
std::vector<std::string> vllm_node_commands(const Candidate& c, const ServeOptions& s);
std::vector<std::string> sglang_node_commands(const Candidate& c, const ServeOptions& s);
// The YAML that trtllm_command's --extra_llm_api_options names (kTrtllmYaml):
// TensorRT-LLM's LLM API fields (tensorrt_llm/llmapi/llm_args.py).
std::string trtllm_yaml(const Candidate& c);

// The same, indented and broken into lines of at most 100 columns that
// still paste into a shell (one line each when `wide`); over several nodes,
// each node's command under a "# node k of N" comment.
std::string vllm_command_lines(const Candidate& c, const ServeOptions& s, bool wide);
std::string sglang_command_lines(const Candidate& c, const ServeOptions& s, bool wide);
// The YAML written by a here-document, then the trtllm-serve line.
std::string trtllm_command_lines(const Candidate& c, const ServeOptions& s, bool wide);
// s.reasons as shell comments ("  # --max-num-seqs 2709: ..."), wrapped at 100 columns unless `wide`.
std::string reason_lines(const ServeOptions& s, bool wide);
// SGLang's router in front of a disaggregated unit's instances.
std::string sglang_pd_router_command();
std::string sglang_pd_router_command_lines(bool wide);

}  // namespace kvplan
