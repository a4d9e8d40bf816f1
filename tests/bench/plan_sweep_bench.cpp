// Speed benchmark (not a test): how many plan evaluations per second the
// step-cost model sustains, how long `recommend` over every GPU takes, and
// how long reading a 10,000-scenario baseline takes (`kvplan check` at scale),
// and how fast `simulate` replays the whole Azure conversation trace
// (Llama-3.1-8B on one H100, vLLM's pool), against the same simulation with
// every decode step walked one by one (jump_decode_runs off).
//
//   build/tests/kvplan_bench [repeats]        (or: make bench)
//   build/tests/kvplan_bench [repeats] sweep  the sweep alone, without its baseline (to profile it)
//
// The sweep: every bundled preset x every GPU in the database x TP 1, 2, 4, 8
// x batch 1, 2, 4, ..., 1024 x 8 contexts. For each (preset, GPU, TP) the cost
// model and the memory capacity at the 8 contexts are computed once, and a
// step's batch-only and context-only terms once per batch size and context;
// each (batch, context) point is then one decode step from those terms and
// one fits check: one "plan evaluation". Reported as the median of repeated runs, and as a ratio
// to a baseline measured in the same run: the naive loop that rebuilds the
// cost model for every point (what a planner without CostModel would do).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <time.h>
#include <unistd.h>

#include "cli/cmd_recommend.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/config_parser.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "core/speed/recommend.hpp"
#include "core/speed/step_cost.hpp"
#include "cpu/timing.hpp"
#include "io/baseline_file.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"
#include "io/trace_reader.hpp"

using namespace kvplan;

namespace {

using Clock = std::chrono::steady_clock;

const std::int64_t kContexts[] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 131072};
const std::int64_t kTps[] = {1, 2, 4, 8};
const std::int64_t kBatches[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};

struct Sweep {
    double seconds = 0;
    std::int64_t evaluations = 0;
    double checksum = 0;  // keeps the work observable
};

// naive: rebuild the cost model for every point, and only sweep `gpu_limit` GPUs (it is slow).
Sweep sweep(const std::vector<ModelSpec>& models, const std::vector<Gpu>& gpus, bool naive, std::size_t gpu_limit) {
    Sweep s;
    const auto start = Clock::now();
    for (const ModelSpec& m : models)
        for (std::int64_t tp : kTps) {
            try {
                check_tp(m, tp);  // once per model and TP: whether TP splits its heads does not depend on the GPU
            } catch (const Error&) {
                continue;
            }
            for (std::size_t gi = 0; gi < gpus.size() && gi < gpu_limit; ++gi) {
                const CostModelInputs in{&m, gpus[gi], WeightFormat{}, std::nullopt, tp, Efficiency{}, std::nullopt};
                const CostModel cm = make_cost_model(in);
                CapacityInputs cap;
                cap.gpu = gpus[gi];
                cap.tp = tp;
                cap.contexts.assign(std::begin(kContexts), std::end(kContexts));
                cap.overhead_bytes = 0;
                cap.longest_lengths = false;  // the sweep reads the rows only
                cap.tp_search = false;        // and tries every TP itself
                const CapacityPlan plan = plan_capacity(m, cap);
                // The batch-only terms once per batch size, the context-only ones once per context.
                DecodeBatchTerms batch[std::size(kBatches)];
                for (std::size_t bi = 0; bi < std::size(kBatches); ++bi) batch[bi] = decode_batch_terms(cm, kBatches[bi]);
                for (std::size_t ci = 0; ci < std::size(kContexts); ++ci) {
                    const DecodeSeqTerms seq = decode_seq_terms(cm, kContexts[ci]);
                    for (std::size_t bi = 0; bi < std::size(kBatches); ++bi) {
                        const std::int64_t b = kBatches[bi];
                        const StepCost c = naive ? decode_step(make_cost_model(in), b, kContexts[ci]) : decode_step(cm, batch[bi], seq);
                        const bool fits = b <= plan.rows[ci].max_requests;
                        s.checksum += c.total_s + (fits ? 1 : 0);
                        ++s.evaluations;
                    }
                }
            }
        }
    s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return s;
}

// A baseline of `n` scenarios, one preset on one GPU at n contexts, in the
// layout `kvplan baseline` writes (one key per line).
std::string big_baseline(int n) {
    std::string text = "{\n  \"schema_version\": 1,\n  \"scenarios\": [\n";
    for (int i = 0; i < n; ++i) {
        text += "    {\n      \"name\": \"llama-3.1-8b/h100-sxm/" + std::to_string(i + 1) + "\",\n";
        text += "      \"model\": \"llama-3.1-8b\",\n      \"gpu\": \"h100-sxm\",\n      \"engine\": \"vllm\",\n";
        text += "      \"tp\": 1,\n      \"context_tokens\": " + std::to_string(i + 1) + ",\n";
        text += "      \"expected\": {\n        \"kv_bytes_per_token\": 131072,\n        \"kv_bytes_per_sequence\": " +
                std::to_string(131072LL * (i + 1)) + ",\n        \"kv_cache_tokens\": 419392,\n        \"max_requests\": 1\n      }\n    }";
        text += i + 1 < n ? ",\n" : "\n";
    }
    return text + "  ]\n}\n";
}

// CPU time of this thread: on a shared machine, what the simulation itself
// costs on one core, without the time other processes held the core.
double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct SimTiming {
    std::vector<double> seconds, stepped_seconds, cpu_seconds, stepped_cpu_seconds;
    std::int64_t requests = 0, steps = 0, decode_run_steps = 0;
};

// The Azure conversation trace through `simulate` as the CLI runs it:
// vLLM's pool for Llama-3.1-8B on an H100, every step priced by the roofline.
SimTiming time_simulation(const std::vector<ModelSpec>& models, const std::vector<Gpu>& gpus, int repeats, double& checksum) {
    const ModelSpec* model = nullptr;
    for (std::size_t i = 0; i < presets().size(); ++i)
        if (presets()[i].name == std::string("llama-3.1-8b")) model = &models[i];
    const Gpu* h100 = nullptr;
    for (const Gpu& g : gpus)
        if (g.id == "h100-sxm") h100 = &g;
    if (!model || !h100) {
        std::fprintf(stderr, "kvplan_bench: llama-3.1-8b or h100-sxm missing\n");
        std::exit(1);
    }
    CapacityInputs cap;
    cap.gpu = *h100;
    cap.engine = Engine::Vllm;
    cap.longest_lengths = false;
    const CapacityPlan plan = plan_capacity(*model, cap);
    SchedulerConfig c;
    c.block_size = plan.block_size;
    c.max_num_seqs = plan.max_num_seqs;
    c.max_num_batched_tokens = plan.max_batched_tokens;
    c.num_gpu_blocks = plan.num_blocks.value_or(0);
    const CostModel cost = make_cost_model(CostModelInputs{model, *h100, WeightFormat{}, std::nullopt, 1, Efficiency{}, std::nullopt});
    const StepPricer price = [&](const std::vector<SeqWork>& seqs) { return mixed_step(cost, seqs).total_s; };
    const DecodePricer decode = [&](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
        const std::optional<StepCost> s = decode_batch_step(cost, batch, context_sum);
        return s ? std::optional<double>(s->total_s) : std::nullopt;
    };
    const Workload w = read_trace("azure-2023-conv", TraceOptions{});
    SimTiming t;
    t.requests = static_cast<std::int64_t>(w.requests.size());
    for (int r = 0; r < repeats; ++r)
        for (const bool jump : {true, false}) {
            c.jump_decode_runs = jump;
            const auto start = Clock::now();
            const double cpu_start = thread_cpu_s();
            const SimRun run = simulate(w, c, price, decode);
            const SimSummary s = summarise(run, {});
            (jump ? t.cpu_seconds : t.stepped_cpu_seconds).push_back(thread_cpu_s() - cpu_start);
            (jump ? t.seconds : t.stepped_seconds).push_back(std::chrono::duration<double>(Clock::now() - start).count());
            t.steps = run.steps;
            if (jump) t.decode_run_steps = run.decode_run_steps;
            checksum += s.e2e_s.p99 + s.itl_s.mean;
        }
    return t;
}

struct SearchTiming {
    std::vector<double> seconds;
    std::int64_t candidates = 0, simulated_requests = 0, simulations = 0;
};

// `kvplan recommend --slo` as the CLI runs it (both cores): Llama-3.1-8B
// over every GPU, TP 1, 2, 4, 8 and the three knob settings, at 20 req/s of
// vllm bench serve's default 1024-in/128-out requests.
SearchTiming time_slo_search(int repeats, double& checksum) {
    RecommendOptions o;
    o.model.model = "llama-3.1-8b";
    o.slo = "ttft=2s,tpot=50ms";
    o.rate = 20;
    o.json = true;
    SearchTiming t;
    for (int r = 0; r < repeats; ++r) {
        const auto start = Clock::now();
        const CommandOutput out = run_recommend(o);
        t.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        const nlohmann::json j = nlohmann::json::parse(out.text);
        t.candidates = j["candidates_tried"].get<std::int64_t>();
        t.simulated_requests = j["simulated_requests"].get<std::int64_t>();
        t.simulations = j["simulations"].get<std::int64_t>();
        checksum += static_cast<double>(j["candidates"].size());
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    const bool sweep_only = argc > 2 && std::string(argv[2]) == "sweep";
    std::vector<ModelSpec> models;
    for (const Preset& p : presets()) models.push_back(parse_model_config(parse_json_text(std::string(p.config_text), p.name), p.name));
    const std::vector<Gpu>& gpus = bundled_gpus();

    std::vector<double> rates, naive_rates, recommend_s;
    std::int64_t evaluations = 0;
    double checksum = 0;
    for (int r = 0; r < repeats; ++r) {
        Sweep fast = sweep(models, gpus, false, gpus.size());
        rates.push_back(static_cast<double>(fast.evaluations) / fast.seconds);
        evaluations = fast.evaluations;
        checksum += fast.checksum;
        if (sweep_only) continue;
        Sweep slow = sweep(models, gpus, true, 2);  // the baseline, on 2 GPUs
        naive_rates.push_back(static_cast<double>(slow.evaluations) / slow.seconds);
        checksum += slow.checksum;

        RecommendInputs in;
        in.model = &models[1];  // llama-3.1-8b
        in.gpus = gpus;
        in.context = 8192;
        in.ttft_s = 0.5;
        in.tpot_s = 0.05;
        const auto start = Clock::now();
        Recommendation rec = recommend(in);
        recommend_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        checksum += static_cast<double>(rec.candidates.size());
    }
    if (sweep_only) {
        std::printf("plan evaluations per second: %.3g (median of %d; %lld per sweep; checksum %.6g)\n", kernels::median(rates), repeats,
                    static_cast<long long>(evaluations), checksum);
        return 0;
    }
    // Reading a 10,000-scenario baseline (every field checked, each scenario's
    // line found), against the floor of parsing the same JSON text.
    constexpr int kScenarios = 10'000;
    const std::string text = big_baseline(kScenarios);
    const std::string path = (std::filesystem::temp_directory_path() / ("kvplan_bench_baseline_" + std::to_string(::getpid()) + ".json")).string();
    std::ofstream(path) << text;
    std::vector<double> read_s, parse_s;
    for (int r = 0; r < repeats; ++r) {
        auto start = Clock::now();
        const BaselineFile f = read_baseline_file(path, true);
        read_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        checksum += static_cast<double>(f.baseline.scenarios.back().line);
        start = Clock::now();
        const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
        parse_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        checksum += static_cast<double>(doc["scenarios"].size());
    }
    std::filesystem::remove(path);
    const SimTiming sim = time_simulation(models, gpus, repeats, checksum);

    const double rate = kernels::median(rates), base = kernels::median(naive_rates);
    std::printf("kvplan_bench: %d repeats (median reported)\n", repeats);
    std::printf("  sweep: %zu presets x %zu GPUs x TP 1,2,4,8 x batch 1..1024 x 8 contexts = %lld plan evaluations\n", models.size(), gpus.size(),
                static_cast<long long>(evaluations));
    std::printf("  plan evaluations per second:          %.3g (median; %.3g s per sweep)\n", rate, static_cast<double>(evaluations) / rate);
    std::printf("  baseline, cost model rebuilt per point: %.3g per second\n", base);
    std::printf("  ratio to baseline:                      %.1fx\n", rate / base);
    std::printf("  recommend over all %zu GPUs (llama-3.1-8b, 8K, TTFT 0.5 s, TPOT 50 ms): %.1f ms (median)\n", gpus.size(),
                kernels::median(recommend_s) * 1e3);
    std::printf("  read a %d-scenario baseline (%.1f MB): %.1f ms (median); JSON parse alone: %.1f ms; ratio %.1fx\n", kScenarios,
                static_cast<double>(text.size()) / 1e6, kernels::median(read_s) * 1e3, kernels::median(parse_s) * 1e3,
                kernels::median(read_s) / kernels::median(parse_s));
    const double sim_s = kernels::median(sim.seconds), stepped_s = kernels::median(sim.stepped_seconds);
    std::printf("  simulate the Azure conversation trace (%lld requests, %lld steps; llama-3.1-8b, h100-sxm, vLLM's pool):\n",
                static_cast<long long>(sim.requests), static_cast<long long>(sim.steps));
    std::printf("    decode runs jumped:   %.3f s (median): %.3g simulated requests/s, %.3g steps/s (%.0f%% of steps in runs)\n", sim_s,
                static_cast<double>(sim.requests) / sim_s, static_cast<double>(sim.steps) / sim_s,
                100.0 * static_cast<double>(sim.decode_run_steps) / static_cast<double>(sim.steps));
    std::printf("    baseline, every step walked: %.3f s: %.3g requests/s, %.3g steps/s\n", stepped_s, static_cast<double>(sim.requests) / stepped_s,
                static_cast<double>(sim.steps) / stepped_s);
    std::printf("    ratio to baseline:    %.1fx\n", stepped_s / sim_s);
    const double cpu_s = kernels::median(sim.cpu_seconds), stepped_cpu_s = kernels::median(sim.stepped_cpu_seconds);
    std::printf("    CPU time of the thread (median): jumped %.3f s, %.3g requests/s, %.3g steps/s; stepped %.3f s, %.3g requests/s; ratio %.1fx\n",
                cpu_s, static_cast<double>(sim.requests) / cpu_s, static_cast<double>(sim.steps) / cpu_s, stepped_cpu_s,
                static_cast<double>(sim.requests) / stepped_cpu_s, stepped_cpu_s / cpu_s);
    const SearchTiming search = time_slo_search(std::min(repeats, 3), checksum);
    const double search_s = kernels::median(search.seconds);
    std::printf(
        "  recommend --slo (llama-3.1-8b, every GPU x TP 1,2,4,8 x PP 1,2,4 x 3 knob settings, 20 req/s, TTFT 2 s, TPOT 50 ms; %u threads):\n",
        std::max(1u, std::thread::hardware_concurrency()));
    std::printf("    %.2f s (median): %lld candidates, %.3g candidates/s; %lld simulations, %.3g simulated requests/s\n", search_s,
                static_cast<long long>(search.candidates), static_cast<double>(search.candidates) / search_s,
                static_cast<long long>(search.simulations), static_cast<double>(search.simulated_requests) / search_s);
    std::printf("  (checksum %.6g)\n", checksum);
    return 0;
}
