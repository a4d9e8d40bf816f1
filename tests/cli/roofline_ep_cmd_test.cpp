// `kvplan roofline` with data-parallel attention and expert parallelism
// (docs/scale-out.md, "Step cost"), in process through run().
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

std::vector<std::string> v3_dp8(std::vector<std::string> extra = {}) {
    // DeepEP's dispatch, as expert_parallel_step_test.cpp derives it; vLLM's default is collectives_test.cpp's.
    std::vector<std::string> a{"roofline",
                               "--model",
                               "deepseek-v3",
                               "--gpu",
                               "h200",
                               "--engine",
                               "vllm",
                               "--dp",
                               "8",
                               "--enable-expert-parallel",
                               "--all2all-backend",
                               "deepep_low_latency",
                               "--batch",
                               "64,512"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

}  // namespace

TEST_CASE("roofline --dp 8 --enable-expert-parallel --json carries the layout and the all-to-all per step") {
    auto r = kvplan_run(v3_dp8({"--json"}));
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["layout"]["dp"] == 8);
    CHECK(j["layout"]["ep"] == 8);
    CHECK(j["layout"]["gpus"] == 8);
    CHECK(j["layout"]["experts_per_gpu"] == 32);  // 256 / 8
    CHECK(j["layout"]["expert_imbalance"] == 1.0);
    CHECK(j["tp"] == 1);  // attention TP
    REQUIRE(j["rows"].size() == 2);
    CHECK(j["rows"][0]["rank_sequences"] == 8);   // 64 / 8
    CHECK(j["rows"][1]["rank_sequences"] == 64);  // 512 / 8
    // 58 MoE layers x (77 + 114) us: both batches at DeepEP's published floor.
    CHECK(j["rows"][0]["all_to_all_s"].get<double>() == Approx(58 * 191e-6));
    CHECK(j["rows"][0]["all_to_all_bytes"].get<double>() == Approx(70'572'544));  // 58 x 56 x 21,728 B
    // The replica's tokens/s: batch / step.
    CHECK(j["rows"][1]["tokens_per_s_total"].get<double>() == Approx(512 / j["rows"][1]["decode_step_s"].get<double>()));
}

TEST_CASE("roofline prints the a2a column and term only with expert parallelism") {
    auto ep = kvplan_run(v3_dp8());
    REQUIRE(ep.code == 0);
    CHECK_THAT(ep.out, Catch::Contains("a2a") && Catch::Contains("EP all-to-alls") && Catch::Contains("Layout: 8 DP ranks"));
    auto plain = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "64,512"});
    REQUIRE(plain.code == 0);
    CHECK_THAT(plain.out, !Catch::Contains("a2a") && !Catch::Contains("all-to-all") && !Catch::Contains("Layout:"));
}

TEST_CASE("roofline --dp 1 prices exactly the plain TP step") {
    auto a = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "1,64", "--json"});
    auto b = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--dp", "1", "--batch", "1,64", "--json"});
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(a.out == b.out);
}

TEST_CASE("roofline refuses a bad expert imbalance or an EP that does not divide the experts") {
    for (const char* bad : {"0.9", "nan", "-1"}) {
        auto r = kvplan_run(v3_dp8({"--expert-imbalance", bad}));
        INFO(bad);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains("--expert-imbalance"));
        if (std::string(bad) == "0.9") CHECK_THAT(r.err, Catch::Contains("found 0.9") && !Catch::Contains("0.900000"));  // echoed as given
    }
    auto no_ep = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--expert-imbalance", "1.5"});
    CHECK(no_ep.code == 2);
    CHECK_THAT(no_ep.err, Catch::Contains("--expert-imbalance needs expert parallelism"));
    auto six = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--dp", "6", "--enable-expert-parallel"});
    CHECK(six.code == 2);
    CHECK(six.out.empty());
    CHECK_THAT(six.err, Catch::Contains("EP 6 does not divide the 256 routed experts"));
}

TEST_CASE("roofline --format csv adds the layout columns only with a layout") {
    auto r = kvplan_run(v3_dp8({"--format", "csv"}));
    REQUIRE(r.code == 0);
    const std::string header = r.out.substr(0, r.out.find('\n'));
    CHECK_THAT(header, Catch::EndsWith("allreduce_s,dp,ep,expert_imbalance,all_to_all_s,all_to_all_bytes,rank_sequences,rank_expert_tokens"));
    // Batch 64: 8 sequences a rank, 64 pairs, 58 x 56 x 21,728 B.
    CHECK_THAT(r.out, Catch::Contains(",8,8,1,0.011078,70572544,8,64\n"));
    auto plain = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--format", "csv"});
    CHECK_THAT(plain.out.substr(0, plain.out.find('\n')), Catch::EndsWith("allreduce_s"));
}

TEST_CASE("roofline --nodes: the layout's nodes, NIC and the NIC's share of the all-to-all bytes") {
    // DeepSeek-V3, vLLM DP 16 + EP 16 on H200 at 256 sequences a rank: two
    // nodes of 8 by default; 1,024 of the busiest rank's 2,048 pairs cross the
    // NIC (tests/core/speed/expert_parallel_step_test.cpp derives the step).
    const std::vector<std::string> a{"roofline",
                                     "--model",
                                     "deepseek-v3",
                                     "--gpu",
                                     "h200",
                                     "--engine",
                                     "vllm",
                                     "--dp",
                                     "16",
                                     "--enable-expert-parallel",
                                     "--all2all-backend",
                                     "deepep_low_latency",
                                     "--batch",
                                     "4096",
                                     "--json"};
    auto r = kvplan_run(a);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["layout"]["nodes"] == 2);
    CHECK(j["layout"]["gpus_per_node"] == 8);
    CHECK(j["layout"]["nic"] == "ib-ndr");
    CHECK(j["rows"][0]["all_to_all_nic_bytes"].get<double>() == Approx(58.0 * 1024 * 21'728));
    CHECK(j["rows"][0]["all_to_all_s"].get<double>() == Approx(25.809e-3).epsilon(1e-4));
    // --nodes 2 says the same; --nic ib-xdr halves the NIC time: 58 x max(118, 75.7) + max(195, 146.8) us.
    auto same = kvplan_run([&] {
        auto b = a;
        b.insert(b.end(), {"--nodes", "2"});
        return b;
    }());
    REQUIRE(same.code == 0);
    CHECK(same.out == r.out);
    auto xdr = kvplan_run([&] {
        auto b = a;
        b.insert(b.end(), {"--nic", "ib-xdr"});
        return b;
    }());
    REQUIRE(xdr.code == 0);
    CHECK(nlohmann::json::parse(xdr.out)["rows"][0]["all_to_all_s"].get<double>() == Approx(58 * 313e-6));
    // One NVL-style domain of 16: nothing crosses a NIC.
    auto one = kvplan_run([&] {
        auto b = a;
        b.insert(b.end(), {"--gpus-per-node", "16"});
        return b;
    }());
    REQUIRE(one.code == 0);
    auto jo = nlohmann::json::parse(one.out);
    CHECK(jo["layout"]["nodes"] == 1);
    CHECK(jo["layout"]["nic"].is_null());
    CHECK(jo["rows"][0]["all_to_all_nic_bytes"] == 0);
    // The text names the nodes.
    auto text = kvplan_run(
        {"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--dp", "16", "--enable-expert-parallel", "--batch", "4096"});
    REQUIRE(text.code == 0);
    CHECK_THAT(text.out, Catch::Contains("2 nodes") && Catch::Contains("ib-ndr between them (50 GB/s a GPU per direction)"));
}

TEST_CASE("roofline --nodes, --gpus-per-node and --nic refuse a layout they do not describe") {
    const std::vector<std::string> a{
        "roofline", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--dp", "16", "--enable-expert-parallel", "--batch", "4096"};
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
        {{"--nodes", "3"}, "--nodes 3: the layout's 16 GPUs do not split evenly over them"},
        {{"--nodes", "2", "--gpus-per-node", "4"}, "--nodes 2 x --gpus-per-node 4 is 8 GPUs; the layout has 16"},
        {{"--nic", "bogus"}, "--nic bogus: expected one of ib-hdr, ib-ndr, ib-xdr, roce-400, efa-p5"},
        {{"--nodes", "0"}, "--nodes"},
    };
    for (const auto& [extra, message] : bad) {
        auto b = a;
        b.insert(b.end(), extra.begin(), extra.end());
        auto r = kvplan_run(b);
        INFO(message);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(message));
    }
    auto plain = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--nodes", "1"});
    CHECK(plain.code == 2);
    CHECK_THAT(plain.err, Catch::Contains("place a DP attention + EP layout: add --dp or --ep"));
}

TEST_CASE("published DeepSeek deployments beside kvplan at their layouts: the figures docs/scale-out.md tabulates") {
    // Each row: kvplan's decode tokens/s per GPU at the deployment's layout
    // and a stated batch a rank; `published` is the deployment's own figure
    // per GPU (per node / 8), `miss` the table's signed error.
    struct Row {
        std::vector<std::string> args;
        std::int64_t batch, context;
        double kvplan_per_gpu, published_per_gpu;
    };
    const std::vector<Row> rows{
        // DeepSeek Day 6: 14.8k output tokens/s per H800 node, decode EP 144 over 18 nodes.
        {{"--gpu", "h800", "--engine", "sglang", "--tp", "144", "--dp", "144", "--ep", "144", "--moe-a2a-backend", "deepep", "--redundant-experts",
          "32", "--nodes", "18"},
         144 * 128,
         4096,
         17346.0 / 8,
         14800.0 / 8},
        // lmsys.org 2025-05-05: 22.3k per H100 node, decode EP 72 over 9 nodes.
        {{"--gpu", "h100-sxm", "--engine", "sglang", "--tp", "72", "--dp", "72", "--ep", "72", "--moe-a2a-backend", "deepep", "--redundant-experts",
          "32", "--nodes", "9"},
         72 * 128,
         2048,
         19751.0 / 8,
         22300.0 / 8},
        {{"--gpu", "h100-sxm", "--engine", "sglang", "--tp", "72", "--dp", "72", "--ep", "72", "--moe-a2a-backend", "deepep", "--redundant-experts",
          "32", "--nodes", "9"},
         72 * 256,
         2048,
         25912.0 / 8,
         22300.0 / 8},
        // lmsys.org 2025-09-25: 9,087 per GB200, 48 decode GPUs in one NVL72.
        {{"--gpu", "gb200", "--engine", "sglang", "--tp", "48", "--dp", "48", "--ep", "48", "--moe-a2a-backend", "deepep", "--redundant-experts",
          "32"},
         48 * 512,
         2048,
         9591.0,
         9087.0},
        // blog.vllm.ai wide-EP: 2.2k per H200, with DeepEP's kernels.
        {{"--gpu", "h200", "--engine", "vllm", "--dp", "16", "--enable-expert-parallel", "--all2all-backend", "deepep_low_latency"},
         16 * 128,
         2048,
         2772.0,
         2200.0},
    };
    for (const Row& row : rows) {
        std::vector<std::string> a{
            "roofline", "--model", "deepseek-v3", "--batch", std::to_string(row.batch), "--context", std::to_string(row.context), "--json"};
        a.insert(a.end(), row.args.begin(), row.args.end());
        auto r = kvplan_run(a);
        REQUIRE(r.code == 0);
        auto j = nlohmann::json::parse(r.out);
        const double per_gpu = j["rows"][0]["tokens_per_s_total"].get<double>() / j["layout"]["gpus"].get<double>();
        INFO(row.args[1] << " batch " << row.batch << ": " << per_gpu << " tokens/s per GPU, published " << row.published_per_gpu);
        CHECK(per_gpu == Approx(row.kvplan_per_gpu).epsilon(0.001));
        CHECK(j["rows"][0]["fits"] == true);
    }
}

TEST_CASE("roofline --two-batch-overlap: vLLM's micro-batches from 32 decode tokens a rank, the hidden time in the JSON, refused without EP") {
    // 64 sequences are 8 a rank (below 32: whole batches, as without the
    // flag); 512 are 64 a rank: two micro-batches, and the JSON says what
    // the overlap hid (core/speed/two_batch_overlap_test.cpp derives the step).
    auto plain = nlohmann::json::parse(kvplan_run(v3_dp8({"--json"})).out);
    auto r = kvplan_run(v3_dp8({"--two-batch-overlap", "--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["layout"]["two_batch_overlap"] == true);
    CHECK(j["layout"]["overlap_decode_tokens"] == 32);
    CHECK(j["layout"]["overlap_prefill_tokens"] == 512);
    CHECK(j["rows"][0]["two_batch_overlap"] == false);
    CHECK(j["rows"][0]["decode_step_s"].get<double>() == plain["rows"][0]["decode_step_s"].get<double>());
    CHECK(j["rows"][1]["two_batch_overlap"] == true);
    CHECK(j["rows"][1]["overlap_hidden_s"].get<double>() > 0);
    CHECK(plain["layout"]["two_batch_overlap"] == false);
    auto table = kvplan_run(v3_dp8({"--two-batch-overlap"}));
    CHECK_THAT(table.out, Catch::Contains("hidden by overlap"));
    std::istringstream lines(table.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "8", "--two-batch-overlap"},
          std::vector<std::string>{"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "8", "--enable-expert-parallel",
                                   "--two-batch-overlap"},
          std::vector<std::string>{"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--dp", "8", "--two-batch-overlap"}}) {
        auto x = kvplan_run(bad);
        CHECK(x.code == 2);
        CHECK(x.out.empty());
        CHECK_THAT(x.err, Catch::Contains("--two-batch-overlap"));
    }
}

TEST_CASE("roofline --dp 8 --enable-expert-parallel --spec-method mtp: speculative rows priced under the layout, a draft model refused there") {
    // core/speed/speculative_test.cpp derives the step; here: the rows, and
    // E = 1 + 0.8 with K = 1.
    auto r = kvplan_run(v3_dp8({"--spec-method", "mtp", "--spec-tokens", "1", "--acceptance", "0.8", "--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["rows"].size() == 2);
    for (const auto& row : j["rows"]) {
        REQUIRE(row.contains("spec"));
        CHECK(row["spec"]["expected_tokens_per_step"].get<double>() == Approx(1.8));
        CHECK(row["spec"]["spec_speedup"].get<double>() > 1.0);
    }
    auto bad = kvplan_run(v3_dp8({"--spec-method", "draft", "--draft-model", "llama-3.1-8b", "--spec-tokens", "2", "--acceptance", "0.7"}));
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("use mtp or eagle"));
}
