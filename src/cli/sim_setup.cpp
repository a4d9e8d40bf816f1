// What `simulate` and `recommend`'s SLO search both need to set a
// simulation up: the workload from flags, vLLM's and SGLang's engine
// configuration for a model on a device, and the step pricers. Moved from
// cmd_simulate.cpp unchanged.
#include "cli/sim_setup.hpp"
#include "cli/flag_checks.hpp"
#include "core/model/weights.hpp"
#include "core/speed/speculative.hpp"
#include "cli/spec_options.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/byte_size.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/digits.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/weight_format.hpp"
#include "core/sim/disagg.hpp"
#include "io/engine_db.hpp"
#include "io/trace_reader.hpp"

namespace kvplan {

namespace {

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
    if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0) usage_error(flag + ": \"" + text + "\": expected a number");
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
        if (value.ends_with("ms")) { scale = 1e-3; value.resize(value.size() - 2); }
        else if (value.ends_with("s")) value.resize(value.size() - 1);
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

Workload make_workload(const SimulateOptions& o, std::string& label) {
    const bool synthetic = o.rate > 0 || o.concurrency > 0 || o.requests > 0 || !o.input_len.empty() || !o.output_len.empty();
    if (!o.trace.empty() && synthetic) usage_error("give either --trace or synthetic traffic (--rate/--concurrency, --requests, --input-len, --output-len), not both");
    if (!o.trace.empty()) {
        Workload w = read_trace(o.trace, TraceOptions{o.trace_format, o.time_scale, o.limit});
        label = fmt::format("{} ({} requests)", o.trace, group_digits(static_cast<std::int64_t>(w.requests.size())));
        return w;
    }
    if (!synthetic) usage_error("no workload: pass --trace FILE, or --rate R (or --concurrency C) --requests N --input-len D --output-len D");
    if (o.rate > 0 && o.concurrency > 0) usage_error("give --rate (open loop) or --concurrency (closed loop), not both");
    if (o.requests == 0 || o.input_len.empty() || o.output_len.empty())
        usage_error("synthetic traffic needs --requests, --input-len and --output-len");
    SyntheticSpec s{o.rate, o.requests, o.concurrency, o.burstiness, o.seed, parse_dist("--input-len", o.input_len, true),
                    parse_dist("--output-len", o.output_len, false)};
    label = o.concurrency > 0 ? fmt::format("{} clients, {} requests", o.concurrency, group_digits(o.requests))
                              : fmt::format("{} {} req/s, {} requests", o.burstiness == 1.0 ? "Poisson" : "gamma", o.rate, group_digits(o.requests));
    return synthetic_workload(s);
}

// --cpu-offload SIZE: vLLM's CPU tier for the plan's blocks. vLLM splits the
// size over TP x PP ranks (NativeOffloadingParser.configure_kv_transfer);
// a block on one rank is block_size x the KV bytes per token per GPU.
CpuTierConfig cpu_tier_config(const std::string& size, const CapacityPlan& p, const Gpu& gpu, bool hybrid) {
    const std::int64_t bytes = parse_byte_size("--cpu-offload", size, false);
    if (hybrid || p.kv_bytes_per_token_per_gpu <= 0)
        usage_error("--cpu-offload: only models with one full-attention (or MLA) KV-cache group are simulated");
    if (gpu.host_link_bytes_per_s <= 0)
        usage_error("--cpu-offload: " + gpu.name + " has no host-link figure to time the copies; pass --gpu ID (see `kvplan gpus`)");
    CpuTierConfig c;
    c.block_bytes = checked_mul(p.block_size, p.kv_bytes_per_token_per_gpu);
    c.blocks = cpu_tier_blocks(bytes, checked_mul(p.tp, p.pp), c.block_bytes);
    c.link_bytes_per_s = static_cast<double>(gpu.host_link_bytes_per_s);
    return c;
}

std::vector<CostModel> stage_cost_models(const CostModelInputs& in, std::int64_t pp) {
    std::vector<CostModel> out;
    for (const PipelineStage& st : pipeline_stages(static_cast<std::int64_t>(in.model->layers.size()), pp))
        out.push_back(make_stage_cost_model(in, st, pp));
    return out;
}

StagePricers stage_pricers(const std::vector<CostModel>& stages) {
    StagePricers out;
    for (const CostModel& m : stages) out.push_back([&m](const std::vector<SeqWork>& seqs) { return mixed_step(m, seqs).total_s; });
    return out;
}

// --weights-dtype as the engine's speed profile stores it (an int4 group's
// scale and zero point), so that the pool holds what the step prices read;
// nullopt for auto (the checkpoint as served).
std::optional<WeightFormat> stored_weights(const SimulateOptions& o) {
    if (o.weights_dtype == "auto") return std::nullopt;
    const EngineProfile& p = find_engine("--engine", o.engine);
    return int4_as_stored(parse_weight_format("--weights-dtype", o.weights_dtype), p.int4_group_bits, p.quantize_head);
}

// The KV pool and scheduler limits vLLM would start with (concurrency --engine vllm).
SchedulerConfig engine_config(const SimulateOptions& o, const ModelSpec& model, const Gpu& gpu, std::int64_t& max_model_len, std::string& source) {
    CapacityInputs in;
    in.gpu = gpu;
    in.engine = Engine::Vllm;
    in.tp = o.tp;
    in.pp = o.pp;  // the pool of the binding stage (concurrency --pp)
    in.weights_format = stored_weights(o);
    if (o.mem_util > 0) in.mem_util = o.mem_util;
    in.kv_dtype = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    if (o.block_size > 0) in.block_size = o.block_size;
    if (o.max_model_len > 0) in.max_model_len = o.max_model_len;
    if (o.max_num_batched_tokens > 0) in.max_batched_tokens = o.max_num_batched_tokens;
    if (o.max_num_seqs > 0) in.max_num_seqs = o.max_num_seqs;
    if (!o.vllm_version.empty()) in.vllm_sampler = parse_vllm_version(o.vllm_version);
    in.longest_lengths = false;
    // --dp / --ep: each DP rank is an engine core with its own pool and limits (concurrency --dp).
    in.scale_out = scale_out_from_flags(layout_flags(o), ScaleOutRules::Vllm);
    const CapacityPlan p = plan_capacity(model, in);
    SchedulerConfig c;
    c.block_size = p.block_size;
    c.max_num_seqs = p.max_num_seqs;
    c.max_num_batched_tokens = p.max_batched_tokens;
    c.long_prefill_token_threshold = o.long_prefill_threshold;
    c.prefix_caching = !o.no_prefix_caching;
    // The KV-cache groups the pool was sized for, each taking its own blocks.
    if (p.vllm) c.groups = kv_groups_for(*p.vllm, p.max_model_len);
    if (!c.groups.empty()) c.block_size = p.vllm->block_tokens;
    // vLLM leaves prefix caching off by default for hybrid Mamba models
    // (vllm/engine/arg_utils.py, default_prefix_caching).
    for (const KvGroup& g : c.groups)
        if (g.kind == KvGroupKind::Mamba) c.prefix_caching = false;
    c.num_gpu_blocks = o.num_gpu_blocks > 0 ? o.num_gpu_blocks : p.num_blocks.value_or(0);
    source = o.num_gpu_blocks > 0                          ? "--num-gpu-blocks"
             : p.scale_out && p.scale_out->dp > 1 ? "vLLM's budget per DP rank"
                                                  : "vLLM's budget on this device";
    max_model_len = p.max_model_len;
    if (c.num_gpu_blocks <= 0) usage_error("the model leaves no KV cache memory on " + gpu.name + " (see kvplan concurrency)");
    if (!o.cpu_offload.empty()) c.cpu_tier = cpu_tier_config(o.cpu_offload, p, gpu, !c.groups.empty());
    return c;
}

// SGLang's pool in tokens and its scheduler's defaults (concurrency --engine
// sglang computes the pool and chunked_prefill_size); r.config gets the same
// figures for the report (blocks are token slots there).
SglangConfig sglang_config(const SimulateOptions& o, const ModelSpec& model, const Gpu& gpu, SimulateResult& r) {
    if (o.block_size > 1)
        usage_error("--block-size " + std::to_string(o.block_size) + ": with --engine sglang it is SGLang's --page-size, and only page size 1 (SGLang's default) is simulated");
    if (o.long_prefill_threshold > 0) usage_error("--long-prefill-token-threshold is vLLM's; with --engine sglang prompts are chunked by --max-num-batched-tokens (SGLang's --chunked-prefill-size)");
    CapacityInputs in;
    in.gpu = gpu;
    in.engine = Engine::Sglang;
    in.tp = o.tp;
    in.weights_format = stored_weights(o);
    if (o.mem_util > 0) in.mem_util = o.mem_util;
    in.kv_dtype = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    if (o.max_model_len > 0) in.max_model_len = o.max_model_len;
    if (o.max_num_batched_tokens > 0) in.max_batched_tokens = o.max_num_batched_tokens;
    in.longest_lengths = false;
    // --dp: DP attention, each rank its own pool (concurrency --engine sglang --dp).
    in.scale_out = scale_out_from_flags(layout_flags(o), ScaleOutRules::Sglang);
    const CapacityPlan p = plan_capacity(model, in);
    const std::int64_t dp = p.scale_out ? p.scale_out->dp : 1;
    SglangConfig c;
    c.max_total_tokens = o.num_gpu_blocks > 0 ? o.num_gpu_blocks : p.kv_cache_tokens.value_or(0);
    if (c.max_total_tokens <= 0) usage_error("the model leaves no KV cache memory on " + gpu.name + " (see kvplan concurrency --engine sglang)");
    c.context_len = p.max_model_len;
    c.chunked_prefill_size = p.max_batched_tokens;
    c.max_running_requests = o.max_num_seqs > 0 ? o.max_num_seqs : sglang_default_max_running_requests(c.max_total_tokens, c.context_len);
    if (dp > 1) {
        // server_args.py _handle_data_parallelism: with DP attention the
        // server's chunked_prefill_size is divided over the DP ranks and
        // schedule_conservativeness scaled by 0.3; the scheduler
        // (tp_worker.py / model_runner.py) divides --max-running-requests
        // over them too. The default is computed on each rank's own pool.
        c.chunked_prefill_size = p.max_batched_tokens / dp;
        if (c.chunked_prefill_size < 1)
            usage_error("--max-num-batched-tokens " + std::to_string(p.max_batched_tokens) + ": SGLang divides its chunked prefill size over the " +
                        std::to_string(dp) + " DP ranks; pass at least " + std::to_string(dp));
        if (o.max_num_seqs > 0) {
            c.max_running_requests = o.max_num_seqs / dp;
            if (c.max_running_requests < 1)
                usage_error("--max-num-seqs " + std::to_string(o.max_num_seqs) + ": SGLang divides --max-running-requests over the " +
                            std::to_string(dp) + " DP ranks; pass at least " + std::to_string(dp));
        }
        c.schedule_conservativeness = 0.3;
    }
    c.radix_cache = !o.no_prefix_caching;
    c.policy = o.schedule_policy == "lpm" ? SglangPolicy::Lpm : SglangPolicy::Fcfs;
    r.engine = "sglang";
    r.schedule_policy = o.schedule_policy;
    r.config.num_gpu_blocks = c.max_total_tokens;
    r.config.block_size = 1;
    r.config.max_num_seqs = c.max_running_requests;
    r.config.max_num_batched_tokens = c.chunked_prefill_size;
    r.config.prefix_caching = c.radix_cache;
    r.pool_source = o.num_gpu_blocks > 0 ? "--num-gpu-blocks"
                    : dp > 1             ? "SGLang's max_total_num_tokens per DP rank"
                                         : "SGLang's max_total_num_tokens on this device";
    r.max_model_len = p.max_model_len;
    return c;
}

// vLLM refuses such a request; SGLang cuts its max_new_tokens to fit the
// context, which would change the workload: both are refused here.
void refuse_long_requests(const Workload& w, std::int64_t max_model_len, const std::string& source, bool sglang) {
    // What to change: a synthetic workload's length distributions, or how much of a trace is replayed.
    const bool synthetic = source == kSyntheticSource;
    const std::string fix = synthetic ? "draw shorter --input-len / --output-len, or raise --max-model-len" : "raise --max-model-len or --limit the trace";
    for (std::size_t i = 0; i < w.requests.size(); ++i)
        if (w.requests[i].input_tokens + w.requests[i].output_tokens > max_model_len)
            data_error(source + ": request " + std::to_string(i + 1) + ": " + std::to_string(w.requests[i].input_tokens) + " + " +
                       std::to_string(w.requests[i].output_tokens) + " tokens exceed max_model_len " + std::to_string(max_model_len) +
                       (sglang ? " (SGLang would cut its output to fit; " : " (vLLM refuses it; ") + fix + ")");
}

std::optional<ScaleOut> layout_of(const SimulateOptions& o, const ModelSpec& model, const Gpu& gpu) {
    const std::optional<ScaleOutInputs> in = scale_out_from_flags(layout_flags(o), scale_out_rules(o.engine));
    std::optional<ScaleOut> so;
    if (in) so = plan_scale_out(model, *in);
    if (so && so->dp == 1 && so->ep == 1) so.reset();
    const bool placed = o.nodes.nodes > 0 || o.nodes.gpus_per_node > 0 || o.nodes.nic != "ib-ndr";
    if (!so) {
        if (placed) usage_error("--nodes, --gpus-per-node and --nic place a DP attention + EP layout: add --dp or --ep");
        if (o.expert_imbalance != 0) usage_error("--expert-imbalance needs expert parallelism (--dp N with --enable-expert-parallel)");
        if (o.two_batch_overlap) add_two_batch_overlap(nullptr, o.engine);  // refused: no layout
        return so;
    }
    if (o.expert_imbalance != 0) {
        check_expert_imbalance(o.expert_imbalance);
        if (so->ep < 2) usage_error("--expert-imbalance needs expert parallelism (--dp N with --enable-expert-parallel)");
    }
    // vLLM synchronizes DP ranks only for MoE models (their experts' collectives); a dense model's engine cores run independently.
    if (model.experts <= 0 && o.engine != "sglang")
        usage_error("--dp: a dense model's DP ranks run independently in vLLM (no expert all-to-all to wait for); simulate them as --replicas " +
                    std::to_string(so->dp));
    if (model.experts <= 0) usage_error("--dp: SGLang's DP attention is simulated for mixture-of-experts models only; simulate a dense model's copies as --replicas");
    if (!gpu.from_database) usage_error("--dp / --ep: a device given by --gpu-mem has no interconnect figure for the all-to-alls; pass --gpu ID");
    if (o.pp > 1) usage_error("--dp / --ep with --pp: a pipeline of DP groups is not simulated; pass --pp 1");
    return so;
}

PdSide pd_side(const SimulateOptions& o, const ModelSpec& model, const Gpu& gpu, const Efficiency& efficiency) {
    PdSide out;
    out.gpu = gpu;
    out.tp = o.tp;
    check_tp(model, out.tp);
    out.layout = layout_of(o, model, out.gpu);
    out.config = engine_config(o, model, out.gpu, out.max_model_len, out.pool_source);
    const CostModelInputs in{&model, out.gpu, parse_weight_format("--weights-dtype", o.weights_dtype), parse_dtype_flag("--kv-dtype", o.kv_dtype),
                             out.kv_tp(), efficiency, std::nullopt};
    if (out.layout) {
        ExpertLayoutInputs li{*out.layout, o.expert_imbalance != 0 ? o.expert_imbalance : 1.0, bundled_all_to_all_latencies(),
                              resolve_gpus_per_node(o.nodes, out.layout->gpus, default_gpus_per_node(out.gpu.interconnect)), find_nic(o.nodes.nic)};
        if (o.two_batch_overlap) add_two_batch_overlap(&li, o.engine);
        out.cost = make_cost_model(in, li);
    } else {
        out.cost = make_cost_model(in);
    }
    return out;
}

PoolPricing pool_pricing(const PdSide& side) {
    PoolPricing p;
    if (side.layout && side.layout->dp > 1) {
        p.dp = side.layout->dp;
        p.wave = dp_step_pricer(side.cost);
    } else if (side.layout) {
        p.step = [&cost = side.cost](const std::vector<SeqWork>& seqs) { return dp_mixed_step(cost, {&seqs}).total_s; };
    } else {
        p.step = step_pricer(side.cost);
        p.decode = decode_pricer(side.cost);
    }
    return p;
}


void require_flops(const CostModel& cost, const Gpu& gpu) {
    if (cost.flops_per_s <= 0)
        usage_error(gpu.name + " (" + gpu.id + ") has no FLOP/s figure for " + std::string(dtype_name(cost.math_dtype)) +
                    " (peak_tflops in its device file): simulate prices every prefill with it; add the figure, or pass --calibration FILE from "
                    "`kvplan measure`");
}

StepPricer step_pricer(const CostModel& cost) {
    return [&cost](const std::vector<SeqWork>& seqs) { return mixed_step(cost, seqs).total_s; };
}

DpStepPricer dp_step_pricer(const CostModel& cost) {
    return [&cost](const std::vector<const std::vector<SeqWork>*>& ranks) { return dp_mixed_step(cost, ranks).total_s; };
}

DecodePricer decode_pricer(const CostModel& cost) {
    return [&cost](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
        const std::optional<StepCost> c = decode_batch_step(cost, batch, context_sum);
        return c ? std::optional<double>(c->total_s) : std::nullopt;
    };
}

// --kv-link: a named link or "<N>GB/s" (10^9 bytes per second, per
// direction per rank); "nvlink" needs both sides' devices on NVLink and
// takes the slower one's bandwidth.
KvLink parse_kv_link(const std::string& text, const Gpu& prefill, const Gpu& decode) {
    if (text == "nvlink") {
        for (const Gpu* g : {&prefill, &decode})
            if (link_family(*g) != LinkFamily::Nvlink || g->interconnect_bytes_per_s <= 0)
                usage_error("--kv-link nvlink: " + g->name + " has no NVLink figure; pass ib-ndr, ib-xdr, roce or a bandwidth such as 50GB/s");
        return named_kv_link(KvLinkKind::Nvlink, std::min(prefill.interconnect_bytes_per_s, decode.interconnect_bytes_per_s));
    }
    if (text == "ib-ndr") return named_kv_link(KvLinkKind::IbNdr, 0);
    if (text == "ib-xdr") return named_kv_link(KvLinkKind::IbXdr, 0);
    if (text == "roce") return named_kv_link(KvLinkKind::Roce, 0);
    double gbs = 0;
    const std::string number = text.ends_with("GB/s") ? text.substr(0, text.size() - 4) : "";
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), gbs);
    if (number.empty() || ec != std::errc() || p != number.data() + number.size() || !std::isfinite(gbs) || !(gbs > 0) || gbs > 1e6)
        usage_error("--kv-link " + text + ": expected nvlink, ib-ndr, ib-xdr, roce or a bandwidth such as 50GB/s");
    return KvLink{gbs * 1e9, kRdmaLatencyS};
}

// The KV dtype `size` resolves ("auto": the serving dtype).
Dtype kv_sizing_dtype(const ModelSpec& model, std::optional<Dtype> kv_dtype, std::int64_t tp) {
    KvOptions k;
    k.kv_dtype = kv_dtype;
    k.context = 1;
    k.tp = tp;
    return size_kv(model, k).kv_dtype;
}

DisaggConfig disagg_config(const ModelSpec& model, std::int64_t prefill_replicas, std::int64_t decode_replicas, const KvLink& link,
                           std::int64_t decode_tp, std::optional<Dtype> kv_dtype, bool layerwise) {
    DisaggConfig k;
    k.prefill_replicas = prefill_replicas;
    k.decode_replicas = decode_replicas;
    k.link = link;
    k.kv_bytes_per_token_per_rank = kv_transfer_bytes_per_token(model, decode_tp, kv_sizing_dtype(model, kv_dtype, decode_tp));
    k.layerwise = layerwise;
    k.layers = static_cast<std::int64_t>(model.layers.size());
    return k;
}

// --spec-method: every decode step of vLLM's engine verifies K drafts
// (SchedulerConfig::spec), the proposer priced as K passes of its own cost
// model, and the pool shares its blocks with the drafter's KV, as vLLM
// allocates the drafter's attention layers from the same KV cache
// (get_kv_cache_spec covers them): the blocks shrink in proportion to the
// bytes per token, unless --num-gpu-blocks fixed them.
void add_speculation(const SimulateOptions& o, const ModelSpec& model, const ModelSpec& draft_model, const SpecInputs& spec,
                     const DecodePricer& draft_decode, SimulateResult& r, const ScaleOut* layout) {
    const Dtype kv = kv_sizing_dtype(model, parse_dtype_flag("--kv-dtype", o.kv_dtype), o.tp);
    const std::int64_t target_bytes = kv_transfer_bytes_per_token(model, o.tp, kv);
    SpecReport rep;
    rep.method = o.spec.method;
    rep.proposer = spec.method == SpecMethod::Draft ? model_label(draft_model) : "one layer of the target's shape";
    rep.rates = spec.rates;
    rep.expected_tokens_per_step = expected_tokens_per_step(spec.rates);
    rep.draft_kv_bytes_per_token = proposer_kv_bytes_per_token(spec.method, model, &draft_model, o.tp, kv);
    rep.blocks_without_draft = r.config.num_gpu_blocks;
    // The drafter's weights are loaded beside the target's, before vLLM
    // profiles, so they come out of the same budget, over TP: a draft
    // model's checkpoint, or an EAGLE/MTP head's one layer and projection.
    // Under DP attention + EP the head's routed experts are spread as the target's are.
    rep.draft_weights_bytes_per_gpu = proposer_weight_bytes_per_gpu(spec.method, model, &draft_model, o.tp, layout);
    if (o.num_gpu_blocks == 0 && target_bytes > 0) {
        const double pool = static_cast<double>(r.config.num_gpu_blocks) * static_cast<double>(r.config.block_size) * static_cast<double>(target_bytes) -
                            static_cast<double>(rep.draft_weights_bytes_per_gpu);
        const double block = static_cast<double>(r.config.block_size) * static_cast<double>(target_bytes + rep.draft_kv_bytes_per_token);
        if (!(pool >= block))
            usage_error("--spec-method " + std::string(spec_method_name(spec.method)) + ": the drafter's weights leave no KV cache memory; pass a larger --tp" +
                        (spec.method == SpecMethod::Draft ? " or a smaller --draft-model" : ""));
        r.config.num_gpu_blocks = static_cast<std::int64_t>(std::floor(pool / block));
    }
    r.config.spec.k = spec.k;
    r.config.spec.rates = spec.rates;
    r.config.spec.seed = o.seed;
    const std::int64_t k = spec.k;
    r.config.spec.draft_s = [k, &draft_decode](std::int64_t batch, std::int64_t context_sum) {
        const std::optional<double> pass = draft_decode(batch, context_sum);
        if (!pass) throw std::logic_error("the drafter's decode step has no price");
        return static_cast<double>(k) * *pass;
    };
    r.spec = std::move(rep);
}

}  // namespace kvplan
