#include "report/engine_commands.hpp"

#include <fmt/format.h>

#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

constexpr std::size_t kWidth = 100;  // the default text output fits this many columns

using Args = std::vector<std::string>;  // one flag and its value per item, kept together when a line breaks

std::string join(const Args& args) {
    std::string out;
    for (const std::string& a : args) out += (out.empty() ? "" : " ") + a;
    return out;
}

// A DP attention + EP layout over several nodes (docs.vllm.ai,
// serving/data_parallel_deployment.md, "Multi-node"): every node runs the
// same engine arguments with its own ranks; the head (node 0) serves the
// API and listens on HEAD_IP, the others run --headless from their first
// global rank (--data-parallel-start-rank).
void vllm_node_args(Args& a, const Candidate& c, std::int64_t node) {
    const std::int64_t local = c.attention_dp / c.nodes;
    if (node > 0) a.push_back("--headless");
    a.push_back(fmt::format("--data-parallel-size-local {}", local));
    if (node > 0) a.push_back(fmt::format("--data-parallel-start-rank {}", node * local));
    a.push_back("--data-parallel-address HEAD_IP");
    a.push_back("--data-parallel-rpc-port 13345");
}

Args vllm_args(const Candidate& c, const ServeOptions& s, std::int64_t node = 0) {
    Args a{fmt::format("--tensor-parallel-size {}", c.tp)};
    if (c.pp > 1) a.push_back(fmt::format("--pipeline-parallel-size {}", c.pp));
    // DP attention + EP (docs/scale-out.md): one server's DP ranks share the
    // experts; further replicas are separate servers.
    if (c.expert_parallel()) {
        a.push_back(fmt::format("--data-parallel-size {}", c.attention_dp));
        if (c.nodes > 1) vllm_node_args(a, c, node);
        a.push_back("--enable-expert-parallel");
        if (c.two_batch_overlap) a.push_back("--enable-dbo");
    } else if (c.dp > 1) a.push_back(fmt::format("--data-parallel-size {}", c.dp));
    a.push_back(fmt::format("--max-num-seqs {}", c.rank_batch()));  // per engine core (DP rank)
    a.push_back(fmt::format("--max-model-len {}", c.max_model_len));
    a.push_back(fmt::format("--max-num-batched-tokens {}", c.max_num_batched_tokens));
    a.push_back(fmt::format("--gpu-memory-utilization {:.2f}", c.vllm_mem_fraction));
    a.push_back(fmt::format("--kv-cache-dtype {}", c.kv_dtype == Dtype::Fp8 ? "fp8" : "auto"));
    if (s.quantization) a.push_back("--quantization " + *s.quantization);
    if (s.dtype) a.push_back("--dtype " + *s.dtype);
    // Speculative decoding (docs.vllm.ai, features/spec_decode): the MTP
    // module ("mtp"), an EAGLE head (its checkpoint: EAGLE_HEAD) or a draft model.
    if (!c.spec_method.empty()) {
        const std::string what = c.spec_method == "mtp"     ? R"("method":"mtp")"
                                 : c.spec_method == "eagle" ? R"("method":"eagle","model":"EAGLE_HEAD")"
                                                            : fmt::format(R"("model":"{}")", c.spec_draft);
        a.push_back(fmt::format(R"(--speculative-config '{{{},"num_speculative_tokens":{}}}')", what, c.spec_tokens));
    }
    // Both roles take kv_both: the proxy's kv_transfer_params decide who
    // sends (docs.vllm.ai, features/nixl_connector_usage).
    if (s.pd_role) a.push_back(R"(--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}')");
    return a;
}

// SGLang's server_args.py: --tp, --pp-size (--pipeline-parallel-size), --dp
// (--data-parallel-size), --mem-fraction-static, --context-length,
// --max-running-requests, --chunked-prefill-size.
Args sglang_args(const Candidate& c, const ServeOptions& s, std::int64_t node = 0) {
    // DP attention + EP: --tp counts every GPU, --dp the attention ranks
    // (dp_attention.py: attn_tp_size = tp_size // dp_size), --ep the experts' group.
    Args a{fmt::format("--tp {}", c.tp * c.attention_dp)};
    if (c.expert_parallel()) {
        a.push_back(fmt::format("--dp {}", c.attention_dp));
        a.push_back("--enable-dp-attention");
        a.push_back(fmt::format("--ep {}", c.attention_dp));
        // Over several nodes (docs.sglang.io, references/multi_node_deployment):
        // the same command on every node, each with its --node-rank, all
        // meeting at the head's address.
        if (c.nodes > 1) {
            a.push_back(fmt::format("--nnodes {}", c.nodes));
            a.push_back(fmt::format("--node-rank {}", node));
            a.push_back("--dist-init-addr HEAD_IP:5000");
        }
        if (c.two_batch_overlap) a.push_back("--enable-two-batch-overlap");
    }
    if (c.pp > 1) a.push_back(fmt::format("--pp-size {}", c.pp));
    if (c.dp > 1 && !c.expert_parallel()) a.push_back(fmt::format("--dp {}", c.dp));
    // Under DP attention both are the server's totals, which SGLang divides
    // over the ranks (server_args.py: chunked_prefill_size // dp_size; the
    // scheduler's max_running_requests // dp_size).
    a.push_back(fmt::format("--max-running-requests {}", c.rank_batch() * c.attention_dp));
    a.push_back(fmt::format("--context-length {}", c.max_model_len));
    a.push_back(fmt::format("--chunked-prefill-size {}", c.max_num_batched_tokens * c.attention_dp));
    a.push_back(fmt::format("--mem-fraction-static {:.2f}", c.sglang_mem_fraction));
    a.push_back(fmt::format("--kv-cache-dtype {}", c.kv_dtype == Dtype::Fp8 ? "fp8_e4m3" : "auto"));
    if (s.quantization) a.push_back("--quantization " + *s.quantization);
    if (s.dtype) a.push_back("--dtype " + *s.dtype);
    // Speculative decoding (docs.sglang.io, advanced_features/speculative_decoding):
    // the model's MTP layers run as an EAGLE drafter; a chain of K drafts.
    if (!c.spec_method.empty()) {
        a.push_back(c.spec_method == "draft" ? "--speculative-algorithm STANDALONE" : "--speculative-algorithm EAGLE");
        if (c.spec_method == "eagle") a.push_back("--speculative-draft-model-path EAGLE_HEAD");
        if (c.spec_method == "draft") a.push_back("--speculative-draft-model-path " + shell_word(c.spec_draft));
        a.push_back(fmt::format("--speculative-num-steps {}", c.spec_tokens));
        a.push_back("--speculative-eagle-topk 1");
        a.push_back(fmt::format("--speculative-num-draft-tokens {}", c.spec_tokens + 1));
    }
    // docs.sglang.io, advanced_features/pd_disaggregation: --disaggregation-mode
    // prefill|decode, with NIXL as the transfer engine.
    if (s.pd_role) {
        a.push_back("--disaggregation-mode " + *s.pd_role);
        a.push_back("--disaggregation-transfer-backend nixl");
    }
    return a;
}

// trtllm-serve reads the LLM API's settings from the YAML that
// --extra_llm_api_options names, which override its own flags (TensorRT-LLM
// docs, commands/trtllm-serve: "Extra LLM API options"); the flags were
// renamed between releases (--kv_cache_free_gpu_memory_fraction), the
// fields were not. Over several nodes it runs one MPI rank per GPU under
// srun, each through trtllm-llmapi-launch (the same page, "Multi-node
// serving with Slurm").
Args trtllm_args() {
    return {fmt::format("--extra_llm_api_options {}", kTrtllmYaml)};
}

Args with_head(std::string head, Args args) {
    args.insert(args.begin(), std::move(head));
    return args;
}

Args vllm_line(const Candidate& c, const ServeOptions& s, std::int64_t node = 0) {
    return with_head("vllm serve " + shell_word(s.model), vllm_args(c, s, node));
}
Args sglang_line(const Candidate& c, const ServeOptions& s, std::int64_t node = 0) {
    return with_head("python -m sglang.launch_server --model-path " + shell_word(s.model), sglang_args(c, s, node));
}
Args trtllm_line(const Candidate& c, const ServeOptions& s) {
    Args out = with_head("trtllm-serve " + shell_word(s.model), trtllm_args());
    if (c.nodes > 1) {
        const std::int64_t gpus = c.replica_gpus();
        out.insert(out.begin(), {fmt::format("srun -N {}", c.nodes), fmt::format("--ntasks {}", gpus),
                                 fmt::format("--ntasks-per-node {}", gpus / c.nodes), "--mpi=pmix trtllm-llmapi-launch"});
    }
    return out;
}

// A command broken into lines of at most `width` columns, each but the last
// ending in " \" so that it still pastes into a shell.
std::string continued(const Args& args, std::size_t width) {
    const std::string first = "  ", rest = "      ";
    std::string out, line = first + args.front();
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (line.size() + 1 + args[i].size() + 2 > width) {
            out += line + " \\\n";
            line = rest + args[i];
        } else line += " " + args[i];
    }
    return out + line + "\n";
}

std::string command(const Args& args, bool wide) {
    return wide ? "  " + join(args) + "\n" : continued(args, kWidth);
}

// Every node's command, each under a comment naming the node (one node: the command alone).
template <typename Line>
std::string per_node(const Candidate& c, bool wide, Line line) {
    if (c.nodes <= 1) return command(line(0), wide);
    std::string out;
    for (std::int64_t node = 0; node < c.nodes; ++node)
        out +=
            fmt::format("  # node {} of {}{}\n", node, c.nodes, node == 0 ? " (the head: HEAD_IP is its address)" : "") + command(line(node), wide);
    return out;
}

template <typename Line>
std::vector<std::string> node_commands(const Candidate& c, Line line) {
    std::vector<std::string> out;
    for (std::int64_t node = 0; node < std::max<std::int64_t>(1, c.nodes); ++node) out.push_back(join(line(node)));
    return out;
}

// TensorRT-LLM's speculative_config (docs: "Speculative Decoding"): the
// model's MTP layers, or an EAGLE head (its checkpoint: EAGLE_HEAD); a
// separate draft model is left to the user (the notes say so).
std::string trtllm_spec_yaml(const Candidate& c) {
    if (c.spec_method == "mtp") return fmt::format("speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: {}\n", c.spec_tokens);
    if (c.spec_method == "eagle")
        return fmt::format("speculative_config:\n  decoding_type: Eagle\n  max_draft_len: {}\n  speculative_model_dir: EAGLE_HEAD\n", c.spec_tokens);
    return "";
}

}  // namespace

std::string trtllm_yaml(const Candidate& c) {
    // TP counts every GPU of a DP attention + EP layout, EP the experts'
    // group; enable_attention_dp gives each rank its own batch, so the
    // limits are per rank (llm_args.py: tensor_parallel_size,
    // moe_expert_parallel_size, enable_attention_dp).
    std::string out = fmt::format("tensor_parallel_size: {}\n", c.tp * c.attention_dp);
    if (c.pp > 1) out += fmt::format("pipeline_parallel_size: {}\n", c.pp);
    if (c.expert_parallel()) out += fmt::format("moe_expert_parallel_size: {}\nenable_attention_dp: true\n", c.attention_dp);
    out += fmt::format("max_batch_size: {}\nmax_num_tokens: {}\nmax_seq_len: {}\n", c.rank_batch(), c.max_num_batched_tokens, c.max_model_len);
    // free_gpu_memory_fraction: of the memory free after the weights and
    // buffers, the share the KV pool takes (KvCacheConfig).
    out += fmt::format("kv_cache_config:\n  free_gpu_memory_fraction: {:.2f}\n", c.trtllm_free_fraction);
    if (c.kv_dtype == Dtype::Fp8) out += "  dtype: fp8\n";
    return out + trtllm_spec_yaml(c);
}

std::string vllm_flags(const Candidate& c, const ServeOptions& s) {
    return join(vllm_args(c, s));
}
std::string sglang_flags(const Candidate& c, const ServeOptions& s) {
    return join(sglang_args(c, s));
}
std::string trtllm_flags(const Candidate&) {
    return join(trtllm_args());
}
std::string vllm_command(const Candidate& c, const ServeOptions& s) {
    return join(vllm_line(c, s));
}
std::string sglang_command(const Candidate& c, const ServeOptions& s) {
    return join(sglang_line(c, s));
}
std::string trtllm_command(const Candidate& c, const ServeOptions& s) {
    return join(trtllm_line(c, s));
}
std::vector<std::string> vllm_node_commands(const Candidate& c, const ServeOptions& s) {
    return node_commands(c, [&](std::int64_t node) { return vllm_line(c, s, node); });
}
std::vector<std::string> sglang_node_commands(const Candidate& c, const ServeOptions& s) {
    return node_commands(c, [&](std::int64_t node) { return sglang_line(c, s, node); });
}
std::string vllm_command_lines(const Candidate& c, const ServeOptions& s, bool wide) {
    return per_node(c, wide, [&](std::int64_t node) { return vllm_line(c, s, node); });
}
std::string sglang_command_lines(const Candidate& c, const ServeOptions& s, bool wide) {
    return per_node(c, wide, [&](std::int64_t node) { return sglang_line(c, s, node); });
}

std::string trtllm_command_lines(const Candidate& c, const ServeOptions& s, bool wide) {
    // A quoted here-document ends at "EOF" alone at the start of a line (bash
    // manual, "Here Documents"), so the YAML and its end are not indented.
    return fmt::format("  cat > {} <<'EOF'\n{}EOF\n", kTrtllmYaml, trtllm_yaml(c)) + command(trtllm_line(c, s), wide);
}

std::string reason_lines(const ServeOptions& s, bool wide) {
    std::string out;
    for (const std::string& r : s.reasons) out += fit_line(r, wide ? Width::Wide : Width::Fit, "  # ", "  #   ");
    return out;
}

namespace {
// sgl-router's P/D mode (docs.sglang.io, advanced_features/pd_disaggregation):
// one --prefill and one --decode per instance.
Args sglang_router_line() {
    return {"python -m sglang_router.launch_router --pd-disaggregation", "--prefill http://PREFILL_HOST:30000", "--decode http://DECODE_HOST:30000",
            "--host 0.0.0.0 --port 8000"};
}
}  // namespace
std::string sglang_pd_router_command() {
    return join(sglang_router_line());
}
std::string sglang_pd_router_command_lines(bool wide) {
    return command(sglang_router_line(), wide);
}

}  // namespace kvplan
