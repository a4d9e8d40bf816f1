// `kvplan simulate --dp N --enable-expert-parallel` end to end (in
// process): every DP rank holds the pool `concurrency --dp` computes, a lone
// request's times are the roofline's lockstep steps, and the flags the DP
// group does not simulate are refused in one line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/memory/parallel.hpp"
#include "core/speed/speculative.hpp"
#include "core/speed/step_cost.hpp"
#include "io/engine_db.hpp"
#include "sim_cli_support.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const std::vector<std::string> kDp8 = {"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "8", "--enable-expert-parallel"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

// DeepSeek-V3's lockstep wave on 8 H200s under layout `si` with engine
// `engine`'s profile: rank 0 computes `tokens` new tokens over `cached`
// while seven ranks run dummy batches (dp_mixed_step, as simulate prices it).
std::function<double(std::int64_t, std::int64_t)> lone_rank_wave(const ScaleOutInputs& si, const std::string& engine) {
    const ModelSpec m = preset("deepseek-v3");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h200");
    in.tp = 1;
    in.efficiency.profile = find_engine("--engine", engine);
    const CostModel cost = make_cost_model(in, ExpertLayoutInputs{plan_scale_out(m, si), 1.0, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")});
    return [cost](std::int64_t cached, std::int64_t tokens) {
        const std::vector<SeqWork> busy{{cached, tokens}}, idle;
        std::vector<const std::vector<SeqWork>*> ranks(8, &idle);
        ranks[0] = &busy;
        return dp_mixed_step(cost, ranks).total_s;
    };
}

}  // namespace

TEST_CASE("simulate --dp 8 --enable-expert-parallel: eight pools of concurrency's per-rank blocks, a lone request priced by the lockstep step") {
    // concurrency --dp 8 --enable-expert-parallel (tests/cli/concurrency_cmd_test.cpp):
    // 23,209 blocks of 16 tokens per DP rank on an H200.
    const std::string trace = write_temp("one.csv", "arrival_s,input_tokens,output_tokens\n0,2000,3\n");
    auto r = kvplan_run(with(kDp8, {"--trace", trace, "--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["layout"]["dp"] == 8);
    CHECK(j["layout"]["ep"] == 8);
    CHECK(j["layout"]["attention_tp"] == 1);
    CHECK(j["layout"]["experts_per_gpu"] == 32);
    CHECK(j["layout"]["nodes"] == 1);
    CHECK(j["layout"]["nic"].is_null());
    CHECK(j["layout"]["kv_blocks_per_rank"] == 23'209);
    CHECK(j["kv_blocks_total"] == 8 * 23'209);
    REQUIRE(j["dp_ranks"].size() == 8);
    CHECK(j["dp_ranks"][0]["requests"] == 1);  // every score 0: rank 0
    CHECK(j["dp_ranks"][1]["requests"] == 0);
    CHECK(j["steps"] == 3);

    // By hand: rank 0 prefills 2,000 tokens while seven ranks run dummy
    // batches, then decodes at contexts 2,000 and 2,001; each wave is
    // dp_mixed_step's price with the vLLM profile, experts over EP 8.
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 8;
    si.enable_expert_parallel = true;
    const auto wave = lone_rank_wave(si, "vllm");
    const double ttft = wave(0, 2000);
    CHECK(j["ttft_s"]["mean"].get<double>() == Approx(ttft).epsilon(1e-9));
    CHECK(j["e2e_s"]["mean"].get<double>() == Approx(ttft + wave(2000, 1) + wave(2001, 1)).epsilon(1e-9));
}

TEST_CASE("simulate --dp 8 on a busy workload: every request served, a table of DP ranks within 100 columns") {
    auto r = kvplan_run(with(kDp8, {"--rate", "40", "--requests", "400", "--input-len", "fixed:1500", "--output-len", "fixed:200", "--seed", "3"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    std::string flat = r.out;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    CHECK(flat.find("DP 8 x TP 1 (EP 8) = 8 GPUs a replica, 32 routed experts a GPU") != std::string::npos);
    CHECK(flat.find("the fullest of 8 DP ranks") != std::string::npos);
    CHECK(flat.find("400 of 400") != std::string::npos);
    CHECK(flat.find("DP rank") != std::string::npos);
    CHECK(flat.find("DP 8 x TP 1 (EP 8) on NVIDIA H200") != std::string::npos);
}

TEST_CASE("simulate --dp 8 --enable-expert-parallel --spec-method mtp: the head's KV and its weights per GPU out of each rank's pool, drafts kept") {
    // Each rank's pool without speculation: 23,209 blocks of 16 tokens of
    // 70,272 B (61 MLA layers x 576 x 2 B). The MTP head adds one layer's
    // latent, 1,152 B a token, to every block, and its weights on one GPU
    // (its 256 routed experts over EP 8, the rest whole, and vLLM's bf16
    // decode copy of its fp8 kv_b_proj at attention TP 1: 128 heads x
    // (128 + 128) x 512 x 2 B = 33,554,432) come out first:
    // blocks = floor((23,209 x 16 x 70,272 - head bytes) / (16 x 71,424)).
    auto r = kvplan_run(with(kDp8, {"--rate", "10", "--requests", "300", "--input-len", "fixed:2000", "--output-len", "fixed:200", "--seed", "2",
                                    "--spec-method", "mtp", "--spec-tokens", "1", "--acceptance", "0.8", "--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    const ModelSpec m = preset("deepseek-v3");
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 8;
    si.enable_expert_parallel = true;
    const std::int64_t head = draft_head_weight_bytes_per_gpu(m, plan_scale_out(m, si)) + 33'554'432;
    const double pool = 23'209.0 * 16 * 70'272 - static_cast<double>(head);
    CHECK(j["speculative"]["draft_weights_bytes_per_gpu"] == head);
    CHECK(j["speculative"]["draft_kv_bytes_per_token"] == 1'152);
    CHECK(j["layout"]["kv_blocks_per_rank"] == static_cast<std::int64_t>(pool / (16.0 * 71'424)));
    CHECK(j["completed"] == 300);
    // Each verified step keeps 1 + 0.8 tokens on average (seeded draws).
    CHECK(j["speculative"]["mean_tokens_per_step"].get<double>() == Approx(1.8).margin(0.02));
    // A separate draft model is not priced under a layout; SGLang's speculation is not simulated.
    const std::vector<std::string> load = {"--rate", "1", "--requests", "5", "--input-len", "fixed:100", "--output-len", "fixed:5"};
    expect_usage_error(
        with(with(kDp8, load), {"--spec-method", "draft", "--draft-model", "llama-3.1-8b", "--spec-tokens", "2", "--acceptance", "0.7"}),
        "use mtp or eagle");
    expect_usage_error(with({"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "8", "--spec-method",
                             "mtp", "--spec-tokens", "1", "--acceptance", "0.8"},
                            load),
                       "vLLM's engine only");
}

TEST_CASE("simulate --dp 16 over two nodes names the NIC, and the layout flags are refused where they cannot apply") {
    auto r = kvplan_run({"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "16", "--enable-expert-parallel", "--nodes", "2", "--rate",
                         "10", "--requests", "50", "--input-len", "fixed:500", "--output-len", "fixed:20", "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["layout"]["nodes"] == 2);
    CHECK(j["layout"]["gpus_per_node"] == 8);
    CHECK(j["layout"]["nic"] == "ib-ndr");
    CHECK(j["layout"]["experts_per_gpu"] == 16);
    CHECK(j["completed"] == 50);

    const std::vector<std::string> load = {"--rate", "1", "--requests", "5", "--input-len", "fixed:100", "--output-len", "fixed:5"};
    expect_usage_error(with(with(kDp8, load), {"--engine", "sglang"}), "SGLang takes --ep N");
    expect_usage_error(with(with(kDp8, load), {"--pp", "2"}), "--pp 1");
    expect_usage_error(with({"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--nodes", "2"}, load), "add --dp or --ep");
    expect_usage_error(with({"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--expert-imbalance", "1.2"}, load),
                       "--expert-imbalance needs expert parallelism");
    expect_usage_error(with(with(kDp8, load), {"--expert-imbalance", "0.5"}), "--expert-imbalance");
    // A dense model's DP ranks do not wait for each other in vLLM: they are replicas.
    expect_usage_error(with({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--dp", "2"}, load), "simulate them as --replicas 2");
    expect_usage_error(with({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--tp", "2", "--dp", "2"}, load),
                       "mixture-of-experts models only");
    // SGLang divides --max-running-requests and its chunked prefill size over the DP ranks.
    const std::vector<std::string> sg8 = {"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "8"};
    expect_usage_error(with(with(sg8, load), {"--max-num-seqs", "4"}), "pass at least 8");
    expect_usage_error(with(with(sg8, load), {"--max-num-batched-tokens", "7"}), "pass at least 8");
}

TEST_CASE("simulate --dp 8 --cpu-offload: each DP rank's CPU tier holds the whole size, and a request evicted from the GPU loads from it") {
    // A Mooncake trace (512-token hash blocks): A at 0 s and C at 20 s share
    // their first two hash ids, 1,024 tokens; B at 10 s shares nothing. Each
    // prompt is 1,040 tokens and each output 2, so a request takes
    // ceil(1,041 / 16) = 66 blocks: --num-gpu-blocks 66 lets B evict A from
    // the GPU. Every request goes to rank 0 (all ranks idle: scores 0).
    const std::string trace = write_temp("offload.jsonl",
                                         "{\"timestamp\": 0, \"input_length\": 1040, \"output_length\": 2, \"hash_ids\": [1, 2, 10]}\n"
                                         "{\"timestamp\": 10000, \"input_length\": 1040, \"output_length\": 2, \"hash_ids\": [3, 4, 11]}\n"
                                         "{\"timestamp\": 20000, \"input_length\": 1040, \"output_length\": 2, \"hash_ids\": [1, 2, 12]}\n");
    auto r = kvplan_run(with(kDp8, {"--trace", trace, "--num-gpu-blocks", "66", "--cpu-offload", "64GiB", "--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    // DeepSeek-V3's MLA latent at TP 1: 61 layers x 576 x 2 B = 70,272 B a
    // token, 1,124,352 B a block of 16. vLLM divides --kv-offloading-size
    // over TP x PP = 1 only, so each DP rank's tier holds
    // floor(64 GiB / 1,124,352 B) = 61,119 blocks.
    CHECK(j["cpu_tier_blocks"] == 61'119);
    // C loads A's 64 shared blocks from rank 0's tier.
    CHECK(j["onload_bytes"] == 64LL * 1'124'352);
    CHECK(j["completed"] == 3);
    // A's and B's TTFT: a lone 1,040-token prefill wave. C's: the load over
    // the H200's host link (from its arrival, every rank idle), then its
    // last 16 tokens over 1,024 cached while seven ranks run dummy batches.
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 8;
    si.enable_expert_parallel = true;
    const auto wave = lone_rank_wave(si, "vllm");
    const double load_s = 64.0 * 1'124'352 / static_cast<double>(gpu("h200").host_link_bytes_per_s);
    CHECK(j["ttft_s"]["mean"].get<double>() == Approx((2 * wave(0, 1040) + load_s + wave(1024, 16)) / 3).epsilon(1e-9));
}

TEST_CASE("simulate P/D with --prefill-dp 8 --decode-dp 8: both pools DP groups, a lone request priced by lockstep waves and the pull") {
    // One 2,000-token prompt, 3 output tokens, through one prefill and one
    // decode replica, each DeepSeek-V3 at DP 8 x TP 1 (EP 8) on 8 H200s.
    // By hand: the prefill wave computes 2,000 tokens while seven ranks run
    // dummy batches; the decode rank pulls 2,000 x 70,272 B (the MLA latent
    // at TP 1) over InfiniBand NDR, 25 us + 140,544,000 B / 50 GB/s; then it
    // computes the last prompt token again (1,999 cached), sampling the
    // first token, and decodes the other two at contexts 2,000 and 2,001.
    const std::string trace = write_temp("pd-one.csv", "arrival_s,input_tokens,output_tokens\n0,2000,3\n");
    auto r = kvplan_run({"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--enable-expert-parallel", "--prefill-replicas", "1",
                         "--decode-replicas", "1", "--prefill-dp", "8", "--decode-dp", "8", "--trace", trace, "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["prefill_pool"]["dp"] == 8);
    CHECK(j["decode_pool"]["ep"] == 8);
    CHECK(j["decode_pool"]["kv_blocks_per_replica"] == 23'209);  // a DP rank's, as concurrency --dp 8 gives
    CHECK(j["kv_transfer_bytes_per_token"] == 70'272);
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 8;
    si.enable_expert_parallel = true;
    const auto wave = lone_rank_wave(si, "vllm");
    const double pull = 25e-6 + 2000.0 * 70'272 / 50e9;
    CHECK(j["kv_transfer_s"]["mean"].get<double>() == Approx(pull).epsilon(1e-9));
    const double ttft = wave(0, 2000) + pull + wave(1999, 1);
    CHECK(j["ttft_s"]["mean"].get<double>() == Approx(ttft).epsilon(1e-9));
    CHECK(j["e2e_s"]["mean"].get<double>() == Approx(ttft + wave(2000, 1) + wave(2001, 1)).epsilon(1e-9));
    // Each pool lists its replica's eight engine cores: the one request on
    // one prefill core (a step) and on one decode core (three steps: the
    // recomputed last prompt token and two decodes), each core its own pool.
    for (const char* pool : {"prefill_pool", "decode_pool"}) {
        INFO(pool);
        const auto& ranks = j[pool]["dp_ranks"];
        REQUIRE(ranks.size() == 8);
        std::int64_t requests = 0;
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            CHECK(ranks[i]["replica"] == 0);
            CHECK(ranks[i]["rank"] == i);
            CHECK(ranks[i]["kv_blocks_total"] == j[pool]["kv_blocks_per_replica"]);
            requests += ranks[i]["requests"].get<std::int64_t>();
        }
        CHECK(requests == 1);
    }

    const std::vector<std::string> pd = {"simulate",     "--model", "deepseek-v3", "--gpu", "h200",        "--enable-expert-parallel",
                                         "--rate",       "1",       "--requests",  "5",     "--input-len", "fixed:100",
                                         "--output-len", "fixed:5"};
    expect_usage_error(with(pd, {"--decode-dp", "8"}), "need --prefill-replicas and --decode-replicas");
    expect_usage_error(with(pd, {"--prefill-replicas", "1", "--decode-replicas", "1", "--dp", "8", "--nodes", "1"}), "--gpus-per-node");
    expect_usage_error({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--prefill-replicas", "1", "--decode-replicas", "1",
                        "--decode-dp", "2", "--rate", "1", "--requests", "5", "--input-len", "fixed:100", "--output-len", "fixed:5"},
                       "simulate them as --replicas 2");
}

TEST_CASE(
    "simulate --engine sglang --tp 8 --dp 8 --ep 8: SGLang's DP attention, each rank concurrency's pool, a lone request priced by the lockstep "
    "step") {
    // concurrency --engine sglang --tp 8 --dp 8 (tests/cli/concurrency_cmd_test.cpp):
    // 323,065 tokens per DP rank on an H200. SGLang's server_args.py divides the
    // chunked prefill size, 8,192 on this device, over the 8 ranks: 1,024.
    const std::string trace = write_temp("one-sglang.csv", "arrival_s,input_tokens,output_tokens\n0,2000,3\n");
    auto r = kvplan_run({"simulate", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "8", "--ep", "8",
                         "--trace", trace, "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["engine"] == "sglang");
    CHECK(j["layout"]["dp"] == 8);
    CHECK(j["layout"]["ep"] == 8);
    CHECK(j["layout"]["attention_tp"] == 1);
    CHECK(j["layout"]["experts_per_gpu"] == 32);
    CHECK(j["layout"]["kv_blocks_per_rank"] == 323'065);
    CHECK(j["kv_blocks_total"] == 8 * 323'065);
    REQUIRE(j["dp_ranks"].size() == 8);
    CHECK(j["dp_ranks"][0]["requests"] == 1);  // round robin starts at rank 0
    CHECK(j["steps"] == 4);

    // By hand: rank 0 prefills 2,000 tokens in chunks of 1,024 and 976 while
    // seven ranks run idle batches, then decodes at contexts 2,000 and 2,001;
    // each wave is dp_mixed_step's price with the SGLang profile, experts over EP 8.
    ScaleOutInputs si;
    si.rules = ScaleOutRules::Sglang;
    si.tp = 8;
    si.dp = 8;
    si.ep = 8;
    const auto wave = lone_rank_wave(si, "sglang");
    const double ttft = wave(0, 1024) + wave(1024, 976);
    CHECK(j["ttft_s"]["mean"].get<double>() == Approx(ttft).epsilon(1e-9));
    CHECK(j["e2e_s"]["mean"].get<double>() == Approx(ttft + wave(2000, 1) + wave(2001, 1)).epsilon(1e-9));
}

TEST_CASE("simulate --engine sglang --dp 8 on a busy workload: round robin deals the requests evenly, the table names the schedulers") {
    auto r = kvplan_run({"simulate", "--model",     "deepseek-v3", "--gpu",        "h200",      "--engine", "sglang", "--tp",
                         "8",        "--dp",        "8",           "--ep",         "8",         "--rate",   "40",     "--requests",
                         "400",      "--input-len", "fixed:1500",  "--output-len", "fixed:200", "--seed",   "3",      "--max-num-seqs",
                         "256"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    std::string flat = r.out;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    CHECK(flat.find("8 DP attention schedulers stepping in lockstep") != std::string::npos);
    CHECK(flat.find("max_running_requests 32") != std::string::npos);  // 256 over 8 ranks
    CHECK(flat.find("400 of 400") != std::string::npos);
    // --two-batch-overlap: the layout line and JSON say so, and every request is still served.
    auto t = kvplan_run({"simulate",    "--model",
                         "deepseek-v3", "--gpu",
                         "h200",        "--engine",
                         "sglang",      "--tp",
                         "8",           "--dp",
                         "8",           "--ep",
                         "8",           "--rate",
                         "40",          "--requests",
                         "100",         "--input-len",
                         "fixed:1500",  "--output-len",
                         "fixed:200",   "--two-batch-overlap",
                         "--json"});
    INFO(t.err);
    REQUIRE(t.code == 0);
    const auto tj = nlohmann::json::parse(t.out);
    CHECK(tj["layout"]["two_batch_overlap"] == true);
    CHECK(tj["completed"] == 100);
    // 400 requests dealt over 8 ranks: 50 each.
    CHECK(flat.find("0              50") != std::string::npos);
    CHECK(flat.find("7              50") != std::string::npos);
}

TEST_CASE("published prefill pools beside kvplan's saturated simulated pools: the figures docs/scale-out.md tabulates") {
    // Each row: input tokens/s per node of a 32-GPU SGLang DP attention +
    // DeepEP prefill pool over 4 nodes (16,384 tokens and 256 requests a
    // rank, the published launch's totals over 32 ranks), prompts with one
    // output token each, 4,096 clients; `published` is the deployment's own
    // figure, `kvplan` the table's.
    struct Row {
        std::string gpu;
        std::int64_t prompt, prefix;
        bool overlap;
        double kvplan, published;
    };
    const std::vector<Row> rows{
        // lmsys.org 2025-05-05: 52.3k input tokens/s per H100 node at 2,000-token inputs; 50,302 for 4K prompts.
        {"h100-sxm", 2000, 0, true, 52868, 52300},
        {"h100-sxm", 4096, 0, true, 52858, 50302},
        {"h100-sxm", 2000, 0, false, 31523, 52300},
        // DeepSeek Day 6: 73.7k per H800 node with cache hits (56.3% of input tokens).
        {"h800", 4096, 2306, true, 120069, 73700},
        {"h800", 4096, 2306, false, 60983, 73700},
    };
    for (const Row& row : rows) {
        std::vector<std::string> a{"simulate",
                                   "--engine",
                                   "sglang",
                                   "--model",
                                   "deepseek-v3",
                                   "--gpu",
                                   row.gpu,
                                   "--tp",
                                   "32",
                                   "--dp",
                                   "32",
                                   "--ep",
                                   "32",
                                   "--moe-a2a-backend",
                                   "deepep",
                                   "--redundant-experts",
                                   "32",
                                   "--nodes",
                                   "4",
                                   "--concurrency",
                                   "4096",
                                   "--requests",
                                   "16384",
                                   "--input-len",
                                   "fixed:" + std::to_string(row.prompt),
                                   "--output-len",
                                   "fixed:1",
                                   "--max-num-batched-tokens",
                                   "524288",
                                   "--max-num-seqs",
                                   "8192",
                                   "--json"};
        if (row.prefix > 0) a.insert(a.end(), {"--prefix-tokens", std::to_string(row.prefix)});
        if (row.overlap) a.push_back("--two-batch-overlap");
        auto r = kvplan_run(a);
        INFO(r.err);
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        const double per_node = j["throughput_input_tokens_per_s"].get<double>() / 4;
        INFO(row.gpu << " " << row.prompt << (row.overlap ? " overlap" : "") << ": " << per_node << " per node, published " << row.published);
        CHECK(per_node == Approx(row.kvplan).epsilon(0.001));
        CHECK(j["completed"] == 16384);
        if (row.prefix > 0) CHECK(j["prefix_cache_hit_rate"].get<double>() == Approx(0.563).margin(0.005));
    }
}
