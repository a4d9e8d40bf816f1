// Renders `kvplan recommend` results (table, Markdown, JSON, CSV; schema in
// docs/roofline.md) and the engine commands each candidate stands for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/speed/recommend.hpp"
#include "core/speed/recommend_result.hpp"
#include "io/model_loader.hpp"

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
};
ServeOptions serve_options(const RecommendResult& r);

// The settings a candidate assumes, as each engine's flags: vLLM's `vllm
// serve`, SGLang's `launch_server` and TensorRT-LLM's `trtllm-serve` arguments.
std::string vllm_flags(const Candidate& c, const ServeOptions& s = {});
std::string sglang_flags(const Candidate& c, const ServeOptions& s = {});
std::string trtllm_flags(const Candidate& c);
// The whole command lines, on one line each.
std::string vllm_command(const Candidate& c, const ServeOptions& s);
std::string sglang_command(const Candidate& c, const ServeOptions& s);
std::string trtllm_command(const Candidate& c, const ServeOptions& s);
// The same, indented and broken into lines of at most 100 columns that
// still paste into a shell (one line each when `wide`).
std::string vllm_command_lines(const Candidate& c, const ServeOptions& s, bool wide);
std::string sglang_command_lines(const Candidate& c, const ServeOptions& s, bool wide);
// SGLang's router in front of a disaggregated unit's instances.
std::string sglang_pd_router_command();
std::string sglang_pd_router_command_lines(bool wide);

std::string render_recommend_table(const RecommendResult& r);
std::string render_recommend_markdown(const RecommendResult& r);
std::string render_recommend_json(const RecommendResult& r);
std::string render_recommend_csv(const RecommendResult& r);

}  // namespace kvplan
