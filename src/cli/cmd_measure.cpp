#include "cli/cmd_measure.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/overhead.hpp"
#include "core/model/config_parts.hpp"
#include "core/speed/measure_prediction.hpp"
#include "core/speed/step_cost.hpp"
#include "core/units.hpp"
#include "cpu/decode_step.hpp"
#include "cpu/flops.hpp"
#include "cpu/stream.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "io/gpu_bench.hpp"
#include "io/gpu_db.hpp"
#include "io/host_load.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"
#include "report/measure_report.hpp"

namespace kvplan {

CLI::App* setup_measure(CLI::App& app, MeasureOptions& o) {
    CLI::App* cmd = app.add_subcommand("measure", "time bandwidth, a decode step and a prefill on this machine; write a calibration file");
    add_model_source_options(*cmd, o.model);  // no hand-built shape: the benchmark builds a real model's layers
    cmd->add_option("--device", o.device, "cpu (this host, every core) or cuda (GPU 0, via kvplan-gpu-bench)")->check(CLI::IsMember({"cpu", "cuda"}));
    cmd->add_option("--kv-dtype", o.kv_dtype, "cuda: KV cache dtype, bf16 or fp8 (weights are bf16)")->check(CLI::IsMember({"bf16", "fp8"}));
    cmd->add_option("--from", o.from, "cuda: read the JSON a kvplan-gpu-bench run saved (e.g. by kernels/gpu-check.sh) instead of running it");
    cmd->add_option("--layers", o.layers, "how many of the model's layers to build and time; the figures are scaled to all of them (default 2)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000}));
    cmd->add_option("-b,--batch", o.batches, "batch sizes, comma-separated (default 1,8)")
        ->delimiter(',')
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("-c,--context", o.contexts, "cached tokens per sequence, comma-separated (default 1024)")
        ->delimiter(',')
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    cmd->add_option("--prompt", o.prompts, "prefill lengths, comma-separated (default 128)")
        ->delimiter(',')
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{65536}));
    cmd->add_option("--precision", o.precision, "weights and KV cache: bf16 or fp32")->check(CLI::IsMember({"bf16", "fp32"}));
    cmd->add_option("--threads", o.threads, "threads (default: every core)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
    cmd->add_option("--stream-size", o.stream_size, "bytes per STREAM array, well above the last-level cache (default 256MiB)");
    cmd->add_option("--repeats", o.repeats, "timed runs per figure; the median is reported, with the range and spread of the runs (default 5)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000}));
    cmd->add_flag("--json", o.json, "print the calibration JSON (schema: docs/measure.md)");
    cmd->add_option("--output", o.output, "write the calibration JSON to FILE (for kvplan roofline --calibration FILE)");
    cmd->add_option("--engine", o.engine, "cuda: beside each measured step, what this speed profile predicts on the device (`kvplan engines`)");
    cmd->add_option("--gpu", o.gpu, "with --engine: the database device the profile predicts for (default: the device measured, by name)");
    cmd->footer(
        "Examples:\n"
        "  kvplan measure --device cpu --model gpt2 --layers 2 --batch 1,8 --context 512 --prompt 64 \\\n"
        "      --output /tmp/kvplan-host.json\n"
        "  kvplan measure --model gpt2 --layers 1 --batch 1 --context 256 --prompt 32 --repeats 9 --json   # the calibration JSON\n"
        "Then `kvplan roofline --model gpt2 --gpu h100 --batch 1,8 --context 512 --calibration /tmp/kvplan-host.json` predicts from the measured\n"
        "figures. A real model's layers take longer: --model llama-3.1-8b --layers 1 --batch 1,8 --context 1024 is about 30 s on 2 cores.\n"
        "A 1-minute load average above the online cores is warned about: the timings are then unreliable.\n"
        "A saved GPU run beside an engine's speed profile on that device (docs/measure.md):\n"
        "`kvplan measure --device cuda --model llama-3.1-8b --from RUN.json --engine vllm --gpu h100`.");
    return cmd;
}

namespace {

// A step's median run (its components are that run's) and the extremes of all runs.
struct TimedStep {
    kernels::StepTimes median;
    double fastest_s = 0;
    double slowest_s = 0;
};

RepeatRange range_of(const kernels::Spread& s) {
    return {s.min, s.max};
}

// The load warning, on stderr now and in the JSON's `warnings`. Online cores,
// not the --threads asked for: the load counts every runnable task on the host.
void warn_if_loaded(MeasureResult& r, std::ostream& progress) {
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    const unsigned cores = online > 0 ? static_cast<unsigned>(online) : std::thread::hardware_concurrency();
    if (auto w = host_load_warning("/proc/loadavg", cores)) {
        progress << "kvplan: warning: " << *w << "\n" << std::flush;
        r.warnings.push_back(*w);
    }
}

// The layer the benchmark builds (core/speed/measure_prediction.hpp), in the kernels' terms.
kernels::LayerShape layer_shape(const ModelSpec& spec) {
    const MeasuredLayer l = measured_layer(spec);
    return kernels::LayerShape{l.hidden, l.heads, l.kv_heads, l.head_dim, l.intermediate, l.gated};
}

std::string join(const std::vector<std::int64_t>& v) {
    std::string out;
    for (std::int64_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return out;
}

// Runs kvplan-gpu-bench for the model's shape and returns its JSON.
std::string run_gpu_bench(const MeasureOptions& o, const kernels::LayerShape& s, std::int64_t layers, std::int64_t total_layers, MeasureResult& r,
                          std::ostream& progress) {
    const std::string bench = gpu_bench_path();
    if (!std::filesystem::exists(bench))
        unavailable_error("this kvplan has no CUDA benchmark (" + bench +
                          " is missing: nvcc was not found when kvplan was configured); "
                          "build it with kernels/gpu-check.sh, or pass --from FILE");
    const std::string probe = run_gpu_bench_command(bench, "--probe");
    warn_if_loaded(r, progress);  // once a GPU answered: without one, the one line is exit 69's
    progress << "measure: " << probe.substr(0, probe.find('\n')) << ": running kvplan-gpu-bench (a minute or two)\n" << std::flush;
    return run_gpu_bench_command(bench, "--hidden " + std::to_string(s.hidden) + " --heads " + std::to_string(s.heads) + " --kv-heads " +
                                            std::to_string(s.kv_heads) + " --head-dim " + std::to_string(s.head_dim) + " --intermediate " +
                                            std::to_string(s.intermediate) + " --layers " + std::to_string(total_layers) + " --sample " +
                                            std::to_string(layers) + " --batch " +
                                            join(o.batches.empty() ? std::vector<std::int64_t>{1, 16, 64} : o.batches) + " --context " +
                                            join(o.contexts.empty() ? std::vector<std::int64_t>{1024, 8192} : o.contexts) + " --prompt " +
                                            join(o.prompts.empty() ? std::vector<std::int64_t>{512} : o.prompts) + " --kv-dtype " + o.kv_dtype +
                                            " --repeats " + std::to_string(std::max<std::int64_t>(20, o.repeats)));
}

MeasureResult measure_cuda(const MeasureOptions& o, const ModelSpec& spec, std::ostream& progress) {
    const kernels::LayerShape shape = layer_shape(spec);
    const std::int64_t total_layers = static_cast<std::int64_t>(spec.layers.size());
    const std::int64_t layers = std::min(o.layers, total_layers);
    const std::string source = o.from.empty() ? "kvplan-gpu-bench" : o.from;
    MeasureResult r;
    const nlohmann::json j =
        o.from.empty() ? parse_json_text(run_gpu_bench(o, shape, layers, total_layers, r, progress), source) : read_json_file(o.from);
    read_gpu_bench_result(j, source, spec.name, r);
    if (r.layers_total != total_layers)
        data_error(source + ": layers_total " + std::to_string(r.layers_total) + " does not match " + spec.name + "'s " +
                   std::to_string(total_layers) + " layers");
    r.threads = 0;
    r.repeats = o.from.empty() ? std::max<std::int64_t>(20, o.repeats) : 0;  // what run_gpu_bench asks for; a saved file does not say
    if (r.layers_measured < r.layers_total)
        r.notes.push_back(std::to_string(r.layers_measured) + " of " + std::to_string(r.layers_total) +
                          " layers were built and timed; figures are scaled to all layers");
    r.notes.push_back(
        "the \"STREAM\" figures are the GPU's read and copy kernels; the copy figure is the ceiling for the attention and GEMM kernels");
    return r;
}

// Times STREAM, the kernels' matrix-product rate, decode steps and prefills
// on this host; every figure scaled to all the model's layers.
MeasureResult measure_cpu(const MeasureOptions& o, const ModelSpec& spec, std::ostream& progress) {
    const kernels::LayerShape shape = layer_shape(spec);
    const std::int64_t total_layers = static_cast<std::int64_t>(spec.layers.size());
    const std::int64_t layers = std::min(o.layers, total_layers);
    const std::vector<std::int64_t> batches = o.batches.empty() ? std::vector<std::int64_t>{1, 8} : o.batches;
    const std::vector<std::int64_t> contexts = o.contexts.empty() ? std::vector<std::int64_t>{1024} : o.contexts;
    const std::vector<std::int64_t> prompts = o.prompts.empty() ? std::vector<std::int64_t>{128} : o.prompts;
    const kernels::Precision precision = o.precision == "fp32" ? kernels::Precision::F32 : kernels::Precision::Bf16;
    const std::int64_t element = precision == kernels::Precision::F32 ? 4 : 2;
    const std::int64_t stream_bytes = parse_byte_size("--stream-size", o.stream_size, false);
    const int repeats = static_cast<int>(o.repeats);
    std::vector<std::int64_t> windows;
    for (std::int64_t i = 0; i < layers; ++i) windows.push_back(spec.layers[static_cast<std::size_t>(i)].window_tokens);

    // Memory: weights of the sampled layers, the largest cache, the STREAM arrays; at most 60% of this machine.
    const std::int64_t max_batch = *std::max_element(batches.begin(), batches.end());
    const std::int64_t capacity =
        std::max(*std::max_element(contexts.begin(), contexts.end()) + 1, *std::max_element(prompts.begin(), prompts.end()));
    const std::int64_t q = shape.heads * shape.head_dim, kv = shape.kv_heads * shape.head_dim;
    const std::int64_t layer_weights =
        ((q + 2 * kv) * shape.hidden + shape.hidden * q + (shape.gated ? 3 : 2) * shape.intermediate * shape.hidden) * element;
    const std::int64_t needed = layers * (layer_weights + 2 * max_batch * capacity * kv * element) + 3 * stream_bytes;
    const std::int64_t memory = physical_memory_bytes();
    if (memory > 0 && needed > memory / 10 * 6)
        usage_error("measure would need " + binary_size(needed) + " of this machine's " + binary_size(memory) +
                    "; use fewer --layers, a smaller --batch or --context, or --stream-size");

    kernels::ThreadPool pool(o.threads > 0 ? static_cast<unsigned>(o.threads) : std::max(1u, std::thread::hardware_concurrency()));
    MeasureResult r;
    warn_if_loaded(r, progress);
    r.model = spec.name;
    r.device = "cpu: " + cpu_name() + " (" + std::to_string(pool.size()) + " threads)";
    r.precision = o.precision;
    r.layers_measured = layers;
    r.layers_total = total_layers;
    r.threads = pool.size();

    progress << "measure: STREAM bandwidth, 3 arrays of " << binary_size(stream_bytes) << "\n" << std::flush;
    const kernels::StreamResult stream = kernels::measure_stream(pool, static_cast<std::size_t>(stream_bytes), repeats);
    r.read_bytes_per_s = stream.read_bytes_per_s;
    r.copy_bytes_per_s = stream.copy_bytes_per_s;
    r.triad_bytes_per_s = stream.triad_bytes_per_s;
    r.read_range = range_of(stream.read);
    r.copy_range = range_of(stream.copy);
    r.triad_range = range_of(stream.triad);
    r.stream_array_bytes = static_cast<std::int64_t>(stream.array_bytes);
    r.repeats = repeats;

    // The kernels' own FLOP rate: the MLP up projection over 128 tokens (a matrix product, compute-bound).
    progress << "measure: matrix-product FLOP/s\n" << std::flush;
    const kernels::Spread flops = kernels::measure_matmul_flops(pool, shape.intermediate, shape.hidden, 128, precision, repeats);
    r.flops_per_s = flops.median;
    r.flops_range = range_of(flops);

    const double scale = static_cast<double>(total_layers) / static_cast<double>(layers);

    auto to_all_layers = [&](const TimedStep& t, MeasuredStep& m) {
        m.measured_s = t.median.total() * scale;
        m.measured_range = {t.fastest_s * scale, t.slowest_s * scale};
        m.qkv_s = t.median.qkv_s * scale;
        m.attention_s = t.median.attention_s * scale;
        m.o_proj_s = t.median.o_proj_s * scale;
        m.mlp_s = t.median.mlp_s * scale;
        m.other_s = t.median.other_s * scale;
    };
    auto median_step = [&](auto&& one) {
        one();  // warm-up
        std::vector<kernels::StepTimes> runs;
        for (int i = 0; i < repeats; ++i) runs.push_back(one());
        std::sort(runs.begin(), runs.end(), [](const kernels::StepTimes& a, const kernels::StepTimes& b) { return a.total() < b.total(); });
        return TimedStep{runs[runs.size() / 2], runs.front().total(), runs.back().total()};
    };

    for (std::int64_t b : batches) {
        kernels::CpuModel model(pool, shape, layers, b, capacity, precision, windows);
        for (std::int64_t c : contexts) {
            progress << "measure: decode, batch " << b << ", context " << group_digits(c) << "\n" << std::flush;
            MeasuredStep m;
            m.batch = b;
            m.tokens = c;
            to_all_layers(median_step([&] { return model.decode(c); }), m);
            r.decode.push_back(m);
        }
    }
    {
        kernels::CpuModel model(pool, shape, layers, 1, capacity, precision, windows);
        for (std::int64_t p : prompts) {
            progress << "measure: prefill, " << group_digits(p) << " tokens\n" << std::flush;
            MeasuredStep m;
            m.tokens = p;
            to_all_layers(median_step([&] { return model.prefill(p); }), m);
            r.prefill.push_back(m);
        }
    }
    if (layers < total_layers)
        r.notes.push_back(std::to_string(layers) + " of " + std::to_string(total_layers) +
                          " layers were built and timed; figures are scaled to all layers");
    if (shape.intermediate != spec.intermediate && spec.experts > 0)
        r.notes.push_back("MoE: the MLP is built dense with the width a token runs through (experts per token x expert width)");

    return r;
}

}  // namespace

std::string run_measure(const MeasureOptions& o, std::ostream& progress) {
    if (o.model.model.empty())
        usage_error("kvplan measure needs --model NAME|PATH: it builds and times that model's layers (presets: " + preset_names() + ")");
    if (!o.engine.empty() && o.device != "cuda")
        usage_error("--engine: the speed profiles describe GPUs; on this host's CPU the measured figures are the calibration (drop --engine)");
    if (!o.gpu.empty() && o.engine.empty()) usage_error("--gpu names the device an engine profile predicts for; add --engine");
    if (!o.engine.empty()) find_engine("--engine", o.engine);  // before measuring, not after
    if (!o.gpu.empty()) find_gpu(known_gpus(), o.gpu, "--gpu");
    const ModelSpec spec = resolve_model(o.model);
    if (!o.output.empty()) check_writable(o.output);  // before minutes of measuring, not after
    MeasureResult r;
    if (o.device == "cuda") {
        // kvplan-gpu-bench builds full-attention layers with bf16 weights.
        r = measure_cuda(o, spec, progress);
        const bool fp8 = r.precision.find("fp8 KV") != std::string::npos;
        add_predictions(r, spec, parse_weight_format("--precision", "bf16"), fp8 ? Dtype::Fp8 : Dtype::Bf16, 2, fp8 ? 1 : 2, 0);
        if (!o.engine.empty()) {
            const std::optional<Gpu> gpu = o.gpu.empty() ? gpu_named_by_device(r.device) : find_gpu(known_gpus(), o.gpu, "--gpu");
            if (!gpu)
                usage_error("--engine: the measured device \"" + r.device.substr(r.device.find(": ") + 2) +
                            "\" is not in the database; name the one to predict for with --gpu ID (see `kvplan gpus`)");
            add_engine_predictions(r, spec, find_engine("--engine", o.engine), *gpu, fp8 ? Dtype::Fp8 : Dtype::Bf16);
        }
    } else {
        r = measure_cpu(o, spec, progress);
        const bool fp32 = o.precision == "fp32";
        add_predictions(r, spec, parse_weight_format("--precision", o.precision), fp32 ? Dtype::Fp32 : Dtype::Bf16, fp32 ? 4 : 2, fp32 ? 4 : 2,
                        spec.layers.front().window_tokens);
    }
    const std::string json = render_measure_json(r);
    if (!o.output.empty()) write_file_atomically(o.output, json);
    return o.json ? json : render_measure_table(r);
}

}  // namespace kvplan
