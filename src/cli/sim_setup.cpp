// What `simulate` and `recommend`'s SLO search both read from their flags
// to set a simulation up: the workload, the SLO, the KV link and the serving
// knobs the engine set-up (core/plan/engine_setup.hpp) takes.
#include "cli/sim_setup.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "cli/flag_checks.hpp"
#include "cli/model_options.hpp"
#include "cli/scale_out_options.hpp"
#include "core/byte_size.hpp"
#include "core/checked.hpp"
#include "core/digits.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/engine.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/weight_format.hpp"
#include "core/sim/disagg.hpp"
#include "io/engine_db.hpp"
#include "io/trace_reader.hpp"

namespace kvplan {

namespace {

// One side of a P/D run (core/plan/engine_setup.hpp, pd_side); `name` ("prefill"
// or "decode") prefixes what the side's own TP, layout and pool refuse, so
// that the message says which pool has no room.
PdSide named_pd_side(const SimulateOptions& o, const ModelSpec& model, const Efficiency& efficiency, const char* name, const std::string& gpu_id,
                     std::int64_t tp, std::int64_t dp) {
    SimulateOptions side = o;
    if (!gpu_id.empty()) {
        side.gpu.gpu = gpu_id;
        side.gpu.gpu_mem.clear();
        side.gpu.flag = std::string("--") + name + "-gpu";
    }
    if (tp > 0) side.tp = tp;
    if (dp > 0) side.dp = dp;
    const Gpu gpu = resolve_gpu(side.gpu);
    if (!gpu.from_database) usage_error("--prefill-replicas: each pool's device must come from the database; pass --gpu ID (see `kvplan gpus`)");
    try {
        PdSide out = pd_side(serve_knobs(side), model, gpu, efficiency);
        require_flops(out.cost, gpu);
        return out;
    } catch (const Error& e) {
        throw Error(e.kind(), std::string("the ") + name + " pool (" + gpu.name + ", TP " + std::to_string(side.tp) + "): " + e.what());
    }
}

std::int64_t whole(const std::string& flag, const std::string& text) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || v < 1 || v > kMaxTokens)
        usage_error(flag + ": \"" + text + "\": expected a whole number of tokens from 1 to " + std::to_string(kMaxTokens));
    return v;
}

double number(const std::string& flag, const std::string& text) {
    double v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0)
        usage_error(flag + ": \"" + text + "\": expected a number");
    return v;
}

}  // namespace

// fixed:N, uniform:A-B, lognormal:MEAN,SIGMA or from:TRACE.
LengthDist parse_dist(const std::string& flag, const std::string& text, bool input) {
    const auto colon = text.find(':');
    const std::string kind = text.substr(0, colon), arg = colon == std::string::npos ? "" : text.substr(colon + 1);
    LengthDist d;
    if (kind == "fixed") d.a = static_cast<double>(whole(flag, arg));
    else if (kind == "uniform" && arg.find('-') != std::string::npos) {
        d.kind = LengthDist::Kind::Uniform;
        d.a = static_cast<double>(whole(flag, arg.substr(0, arg.find('-'))));
        d.b = static_cast<double>(whole(flag, arg.substr(arg.find('-') + 1)));
    } else if (kind == "lognormal" && arg.find(',') != std::string::npos) {
        d.kind = LengthDist::Kind::Lognormal;
        d.a = number(flag, arg.substr(0, arg.find(',')));
        d.b = number(flag, arg.substr(arg.find(',') + 1));
    } else if (kind == "from" && !arg.empty()) {
        d.kind = LengthDist::Kind::Empirical;
        for (const SimRequest& r : read_trace(arg, TraceOptions{}).requests) d.values.push_back(input ? r.input_tokens : r.output_tokens);
    } else {
        usage_error(flag + " " + text + ": expected fixed:N, uniform:A-B, lognormal:MEAN,SIGMA or from:TRACE");
    }
    return d;
}

// "ttft=2s,tpot=50ms,e2e=30s".
Slo parse_slo(const std::string& text) {
    Slo slo;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, end - start);
        const auto eq = item.find('=');
        std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
        double scale = 1;
        if (value.ends_with("ms")) {
            scale = 1e-3;
            value.resize(value.size() - 2);
        } else if (value.ends_with("s")) value.resize(value.size() - 1);
        else usage_error("--slo " + item + ": expected NAME=TIME with a unit, e.g. ttft=2s or tpot=50ms");
        const double s = number("--slo", value) * scale;
        const std::string key = item.substr(0, eq);
        if (key == "ttft") slo.ttft_s = s;
        else if (key == "tpot") slo.tpot_s = s;
        else if (key == "e2e") slo.e2e_s = s;
        else usage_error("--slo " + item + ": expected ttft, tpot or e2e");
        start = end + 1;
    }
    return slo;
}

SyntheticSpec synthetic_spec(const SimulateOptions& o) {
    return SyntheticSpec{o.rate,
                         o.requests,
                         o.concurrency,
                         o.burstiness,
                         o.seed,
                         parse_dist("--input-len", o.input_len, true),
                         parse_dist("--output-len", o.output_len, false)};
}

Workload make_workload(const SimulateOptions& o, std::string& label) {
    const bool synthetic = o.rate > 0 || o.concurrency > 0 || o.requests > 0 || !o.input_len.empty() || !o.output_len.empty();
    if (!o.trace.empty() && synthetic)
        usage_error("give either --trace or synthetic traffic (--rate/--concurrency, --requests, --input-len, --output-len), not both");
    if (!o.trace.empty()) {
        Workload w = read_trace(o.trace, TraceOptions{o.trace_format, o.time_scale, o.limit});
        label = fmt::format("{} ({} requests)", o.trace, group_digits(static_cast<std::int64_t>(w.requests.size())));
        return w;
    }
    if (!synthetic) usage_error("no workload: pass --trace FILE, or --rate R (or --concurrency C) --requests N --input-len D --output-len D");
    if (o.rate > 0 && o.concurrency > 0) usage_error("give --rate (open loop) or --concurrency (closed loop), not both");
    if (o.requests == 0 || o.input_len.empty() || o.output_len.empty())
        usage_error("synthetic traffic needs --requests, --input-len and --output-len");
    const SyntheticSpec s = synthetic_spec(o);
    label = o.concurrency > 0 ? fmt::format("{} clients, {} requests", o.concurrency, group_digits(o.requests))
                              : fmt::format("{} {} req/s, {} requests", o.burstiness == 1.0 ? "Poisson" : "gamma", o.rate, group_digits(o.requests));
    return synthetic_workload(s);
}

ServedRun read_compare_run(const SimulateOptions& o) {
    if (o.trace.empty()) usage_error("--compare needs --trace RUN: vllm bench serve's --save-detailed JSON, or a requests.jsonl with queued_ts");
    if (o.limit > 0 || o.time_scale != 1.0 || o.prefix_tokens > 0)
        usage_error("--compare replays the run as it was measured: drop --limit, --time-scale and --prefix-tokens");
    ServedRun run = read_served_run(o.trace, TraceOptions{o.trace_format, 1.0, 0});
    if (run.requests.empty())
        usage_error("--compare: " + o.trace +
                    " holds no measured latencies (expected vllm bench serve's --save-detailed JSON, or JSON lines with queued_ts, "
                    "scheduled_ts, first_token_ts and last_token_ts)");
    return run;
}

// The flags' engine settings, parsed once: dtypes, the release, the CPU
// tier's size, the stored weights (by the engine's speed profile), the NIC.
ServeKnobs serve_knobs(const SimulateOptions& o) {
    ServeKnobs k;
    k.engine = parse_engine(o.engine);  // vllm or sglang (the flag's choices): the one place the name is read
    k.policy = o.schedule_policy == "lpm" ? SglangPolicy::Lpm : SglangPolicy::Fcfs;
    k.tp = o.tp;
    k.pp = o.pp;
    k.max_num_seqs = o.max_num_seqs;
    k.max_num_batched_tokens = o.max_num_batched_tokens;
    k.long_prefill_threshold = o.long_prefill_threshold;
    k.block_size = o.block_size;
    k.num_gpu_blocks = o.num_gpu_blocks;
    k.max_model_len = o.max_model_len;
    k.mem_util = o.mem_util;
    if (!o.vllm_version.empty()) k.vllm_sampler = parse_vllm_version(o.vllm_version);
    k.kv_dtype = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    k.weights = parse_weight_format("--weights-dtype", o.weights_dtype);
    // As the engine's speed profile stores them (an int4 group's scale and
    // zero point), so that the pool holds what the step prices read.
    if (o.weights_dtype != "auto") {
        const EngineProfile& p = find_engine("--engine", o.engine);
        k.stored_weights = int4_as_stored(k.weights, p.int4_group_bits, p.quantize_head);
    }
    k.prefix_caching = !o.no_prefix_caching;
    if (!o.cpu_offload.empty()) k.cpu_offload_bytes = parse_byte_size("--cpu-offload", o.cpu_offload, false);
    k.layout = layout_flags(o);
    k.expert_imbalance = o.expert_imbalance;
    k.two_batch_overlap = o.two_batch_overlap;
    k.nodes.nodes = o.nodes.nodes;
    k.nodes.gpus_per_node = o.nodes.gpus_per_node;
    k.nodes.nic_given = o.nodes.nic != "ib-ndr";
    k.nodes.nic = find_nic(o.nodes.nic);
    k.all_to_all = bundled_all_to_all_latencies();
    k.seed = o.seed;
    return k;
}

// The proposer, resolved from the flags (a draft model's config is read here).
SpecResolver spec_resolver(const SpecFlags& flags, const ModelSpec& model) {
    if (flags.method.empty()) return {};
    return [&flags, &model](const CostModelInputs& target, const ExpertLayoutInputs* layout, ModelSpec& draft) {
        return resolve_spec(flags, model, target, draft, layout);
    };
}

// A P/D unit's two sides and the link between them.
PdUnit pd_unit(const SimulateOptions& o, const ModelSpec& model, const Efficiency& efficiency) {
    PdUnit u;
    u.prefill = named_pd_side(o, model, efficiency, "prefill", o.prefill_gpu, o.prefill_tp, o.prefill_dp);
    u.decode = named_pd_side(o, model, efficiency, "decode", o.decode_gpu, o.decode_tp, o.decode_dp);
    u.prefill_replicas = o.prefill_replicas;
    u.decode_replicas = o.decode_replicas;
    u.link = parse_kv_link(o.kv_link, u.prefill.gpu, u.decode.gpu);
    u.link_name = o.kv_link;
    u.layerwise = o.layerwise_transfer;
    return u;
}

}  // namespace kvplan
