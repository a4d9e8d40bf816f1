// The engine commands recommend prints, for hand-built candidates: a DP
// attention + EP layout over two nodes as one command per node (vLLM's
// data_parallel_deployment.md, "Multi-node"; SGLang's multi_node_deployment),
// TensorRT-LLM's YAML with the LLM API's field names (llm_args.py), and the
// reasons printed as shell comments.
#include "report/engine_commands.hpp"

#include <catch2/catch.hpp>

using namespace kvplan;

namespace {

// DeepSeek-V3 as DP 16 + EP 16 over two nodes of 8 H200s: 512 sequences a
// replica, 32 per DP rank; a whole 2,048-token prompt beside the rank's 32
// decodes is 2,080 tokens a step.
Candidate two_nodes() {
    Candidate c;
    c.gpu = "h200";
    c.tp = 1;
    c.attention_dp = 16;
    c.nodes = 2;
    c.batch = 512;
    c.max_model_len = 4096;
    c.max_num_batched_tokens = 2080;
    c.vllm_mem_fraction = 0.9;
    c.sglang_mem_fraction = 0.85;
    c.trtllm_free_fraction = 0.88;
    return c;
}

ServeOptions deepseek() {
    ServeOptions s;
    s.model = "deepseek-ai/DeepSeek-V3";
    return s;
}

}  // namespace

TEST_CASE("a layout over two nodes: vLLM's head and headless commands, each node's ranks") {
    const std::vector<std::string> v = vllm_node_commands(two_nodes(), deepseek());
    REQUIRE(v.size() == 2);
    // 16 ranks over 2 nodes: 8 local ranks each; node 1 starts at global rank 8.
    CHECK(v[0] ==
          "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 --data-parallel-size 16 --data-parallel-size-local 8 "
          "--data-parallel-address HEAD_IP --data-parallel-rpc-port 13345 --enable-expert-parallel --max-num-seqs 32 --max-model-len 4096 "
          "--max-num-batched-tokens 2080 --gpu-memory-utilization 0.90 --kv-cache-dtype auto");
    CHECK(v[1] ==
          "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 --data-parallel-size 16 --headless --data-parallel-size-local 8 "
          "--data-parallel-start-rank 8 --data-parallel-address HEAD_IP --data-parallel-rpc-port 13345 --enable-expert-parallel "
          "--max-num-seqs 32 --max-model-len 4096 --max-num-batched-tokens 2080 --gpu-memory-utilization 0.90 --kv-cache-dtype auto");
    CHECK(vllm_command(two_nodes(), deepseek()) == v[0]);
    // As printed: each node's command under a comment naming it, one line each with --wide.
    CHECK(vllm_command_lines(two_nodes(), deepseek(), true) ==
          "  # node 0 of 2 (the head: HEAD_IP is its address)\n  " + v[0] + "\n  # node 1 of 2\n  " + v[1] + "\n");
}

TEST_CASE("a layout over two nodes: SGLang's command on each node differs only in --node-rank") {
    const std::vector<std::string> g = sglang_node_commands(two_nodes(), deepseek());
    REQUIRE(g.size() == 2);
    // SGLang's totals: 32 x 16 = 512 running requests, 2,080 x 16 = 33,280 chunked-prefill tokens.
    CHECK(g[1] ==
          "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 16 --dp 16 --enable-dp-attention --ep 16 --nnodes 2 "
          "--node-rank 1 --dist-init-addr HEAD_IP:5000 --max-running-requests 512 --context-length 4096 --chunked-prefill-size 33280 "
          "--mem-fraction-static 0.85 --kv-cache-dtype auto");
    std::string head = g[1];
    head.replace(head.find("--node-rank 1"), 13, "--node-rank 0");
    CHECK(g[0] == head);
}

TEST_CASE("a layout over two nodes: one trtllm-serve under srun, its settings in the YAML with the LLM API's field names") {
    const Candidate c = two_nodes();
    // TP counts all 16 GPUs, EP the 16 experts' ranks; the limits are per attention-DP rank.
    CHECK(trtllm_yaml(c) ==
          "tensor_parallel_size: 16\n"
          "moe_expert_parallel_size: 16\n"
          "enable_attention_dp: true\n"
          "max_batch_size: 32\n"
          "max_num_tokens: 2080\n"
          "max_seq_len: 4096\n"
          "kv_cache_config:\n"
          "  free_gpu_memory_fraction: 0.88\n");
    // 16 MPI ranks, 8 a node.
    CHECK(trtllm_command(c, deepseek()) ==
          "srun -N 2 --ntasks 16 --ntasks-per-node 8 --mpi=pmix trtllm-llmapi-launch trtllm-serve deepseek-ai/DeepSeek-V3 "
          "--extra_llm_api_options trtllm.yaml");
    // Pasted into a shell, the here-document writes the file and ends at "EOF" alone on its line.
    const std::string lines = trtllm_command_lines(c, deepseek(), true);
    CHECK(lines.rfind("  cat > trtllm.yaml <<'EOF'\ntensor_parallel_size: 16\n", 0) == 0);
    CHECK(lines.find("\n  free_gpu_memory_fraction: 0.88\nEOF\n  srun -N 2 ") != std::string::npos);
}

TEST_CASE("one node: TensorRT-LLM's YAML carries an FP8 KV cache and the MTP drafts, and the commands are not split by node") {
    Candidate c;
    c.tp = 2;
    c.batch = 300;
    c.max_model_len = 8192;
    c.max_num_batched_tokens = 8492;
    c.kv_dtype = Dtype::Fp8;
    c.trtllm_free_fraction = 0.9;
    c.spec_method = "mtp";
    c.spec_tokens = 2;
    CHECK(trtllm_yaml(c) ==
          "tensor_parallel_size: 2\n"
          "max_batch_size: 300\n"
          "max_num_tokens: 8492\n"
          "max_seq_len: 8192\n"
          "kv_cache_config:\n"
          "  free_gpu_memory_fraction: 0.90\n"
          "  dtype: fp8\n"
          "speculative_config:\n"
          "  decoding_type: MTP\n"
          "  num_nextn_predict_layers: 2\n");
    const ServeOptions s;
    CHECK(trtllm_command(c, s) == "trtllm-serve CHECKPOINT --extra_llm_api_options trtllm.yaml");
    CHECK(vllm_node_commands(c, s) == std::vector<std::string>{vllm_command(c, s)});
    CHECK(vllm_command_lines(c, s, true).find("# node") == std::string::npos);
}

TEST_CASE("the reasons are shell comments, wrapped within 100 columns") {
    ServeOptions s;
    s.reasons = {
        "--max-num-seqs 2709: the most sequences whose decode step at 8,192 tokens meets TPOT <= 50.0 ms (vLLM's default on "
        "h100-sxm: 1024)"};
    const std::string text = reason_lines(s, false);
    CHECK(text ==
          "  # --max-num-seqs 2709: the most sequences whose decode step at 8,192 tokens meets TPOT <= 50.0 ms\n"
          "  #   (vLLM's default on h100-sxm: 1024)\n");
    CHECK(reason_lines(s, true) == "  # " + s.reasons.front() + "\n");
}
