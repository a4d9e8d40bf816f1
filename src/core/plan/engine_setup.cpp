// The engine a simulation runs, from the model, the device, the speed
// profile's efficiencies and the serving knobs. Moved from the command line
// (cli/sim_setup.cpp), where it read flag strings; it now reads ServeKnobs.
#include "core/plan/engine_setup.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "core/bounds.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/speed/speculative.hpp"

namespace kvplan {

// vLLM's CPU tier (--kv-offloading-size) for the plan's blocks. vLLM splits the
// size over TP x PP ranks (NativeOffloadingParser.configure_kv_transfer);
// a block on one rank is block_size x the KV bytes per token per GPU.
CpuTierConfig cpu_tier_config(std::int64_t bytes, const CapacityPlan& p, const Gpu& gpu, bool hybrid) {
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

// The KV pool and scheduler limits vLLM would start with (concurrency --engine vllm).
SchedulerConfig engine_config(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu, std::int64_t& max_model_len, std::string& source) {
    CapacityInputs in;
    in.gpu = gpu;
    in.engine = Engine::Vllm;
    in.tp = k.tp;
    in.pp = k.pp;  // the pool of the binding stage (concurrency --pp)
    in.weights_format = k.stored_weights;
    if (k.mem_util > 0) in.mem_util = k.mem_util;
    in.kv_dtype = k.kv_dtype;
    if (k.block_size > 0) in.block_size = k.block_size;
    if (k.max_model_len > 0) in.max_model_len = k.max_model_len;
    if (k.max_num_batched_tokens > 0) in.max_batched_tokens = k.max_num_batched_tokens;
    if (k.max_num_seqs > 0) in.max_num_seqs = k.max_num_seqs;
    if (k.vllm_sampler) in.vllm_sampler = *k.vllm_sampler;
    in.longest_lengths = false;
    // --dp / --ep: each DP rank is an engine core with its own pool and limits (concurrency --dp).
    in.scale_out = scale_out_from_flags(k.layout, ScaleOutRules::Vllm);
    const CapacityPlan p = plan_capacity(model, in);
    SchedulerConfig c;
    c.block_size = p.block_size;
    c.max_num_seqs = p.max_num_seqs;
    c.max_num_batched_tokens = p.max_batched_tokens;
    c.long_prefill_token_threshold = k.long_prefill_threshold;
    c.prefix_caching = k.prefix_caching;
    // The KV-cache groups the pool was sized for, each taking its own blocks.
    if (p.vllm) c.groups = kv_groups_for(*p.vllm, p.max_model_len);
    if (!c.groups.empty()) c.block_size = p.vllm->block_tokens;
    // vLLM leaves prefix caching off by default for hybrid Mamba models
    // (vllm/engine/arg_utils.py, default_prefix_caching).
    for (const KvGroup& g : c.groups)
        if (g.kind == KvGroupKind::Mamba) c.prefix_caching = false;
    c.num_gpu_blocks = k.num_gpu_blocks > 0 ? k.num_gpu_blocks : p.num_blocks.value_or(0);
    source = k.num_gpu_blocks > 0                 ? "--num-gpu-blocks"
             : p.scale_out && p.scale_out->dp > 1 ? "vLLM's budget per DP rank"
                                                  : "vLLM's budget on this device";
    max_model_len = p.max_model_len;
    if (c.num_gpu_blocks <= 0) usage_error("the model leaves no KV cache memory on " + gpu.name + " (see kvplan concurrency)");
    if (k.cpu_offload_bytes > 0) c.cpu_tier = cpu_tier_config(k.cpu_offload_bytes, p, gpu, !c.groups.empty());
    return c;
}

// SGLang's pool in tokens and its scheduler's defaults (concurrency --engine
// sglang computes the pool and chunked_prefill_size); r.config gets the same
// figures for the report (blocks are token slots there).
SglangConfig sglang_config(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu, SimulateResult& r) {
    if (k.block_size > 1)
        usage_error("--block-size " + std::to_string(k.block_size) +
                    ": with --engine sglang it is SGLang's --page-size, and only page size 1 (SGLang's default) is simulated");
    if (k.long_prefill_threshold > 0)
        usage_error(
            "--long-prefill-token-threshold is vLLM's; with --engine sglang prompts are chunked by --max-num-batched-tokens (SGLang's "
            "--chunked-prefill-size)");
    CapacityInputs in;
    in.gpu = gpu;
    in.engine = Engine::Sglang;
    in.tp = k.tp;
    in.weights_format = k.stored_weights;
    if (k.mem_util > 0) in.mem_util = k.mem_util;
    in.kv_dtype = k.kv_dtype;
    if (k.max_model_len > 0) in.max_model_len = k.max_model_len;
    if (k.max_num_batched_tokens > 0) in.max_batched_tokens = k.max_num_batched_tokens;
    in.longest_lengths = false;
    // --dp: DP attention, each rank its own pool (concurrency --engine sglang --dp).
    in.scale_out = scale_out_from_flags(k.layout, ScaleOutRules::Sglang);
    const CapacityPlan p = plan_capacity(model, in);
    const std::int64_t dp = p.scale_out ? p.scale_out->dp : 1;
    SglangConfig c;
    c.max_total_tokens = k.num_gpu_blocks > 0 ? k.num_gpu_blocks : p.kv_cache_tokens.value_or(0);
    if (c.max_total_tokens <= 0) usage_error("the model leaves no KV cache memory on " + gpu.name + " (see kvplan concurrency --engine sglang)");
    c.context_len = p.max_model_len;
    c.chunked_prefill_size = p.max_batched_tokens;
    c.max_running_requests = k.max_num_seqs > 0 ? k.max_num_seqs : sglang_default_max_running_requests(c.max_total_tokens, c.context_len);
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
        if (k.max_num_seqs > 0) {
            c.max_running_requests = k.max_num_seqs / dp;
            if (c.max_running_requests < 1)
                usage_error("--max-num-seqs " + std::to_string(k.max_num_seqs) + ": SGLang divides --max-running-requests over the " +
                            std::to_string(dp) + " DP ranks; pass at least " + std::to_string(dp));
        }
        c.schedule_conservativeness = 0.3;
    }
    c.radix_cache = k.prefix_caching;
    c.policy = k.policy;
    r.engine = "sglang";
    r.schedule_policy = k.policy == SglangPolicy::Lpm ? "lpm" : "fcfs";
    r.config.num_gpu_blocks = c.max_total_tokens;
    r.config.block_size = 1;
    r.config.max_num_seqs = c.max_running_requests;
    r.config.max_num_batched_tokens = c.chunked_prefill_size;
    r.config.prefix_caching = c.radix_cache;
    r.pool_source = k.num_gpu_blocks > 0 ? "--num-gpu-blocks"
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
    const std::string fix =
        synthetic ? "draw shorter --input-len / --output-len, or raise --max-model-len" : "raise --max-model-len or --limit the trace";
    for (std::size_t i = 0; i < w.requests.size(); ++i)
        if (w.requests[i].input_tokens + w.requests[i].output_tokens > max_model_len)
            data_error(source + ": request " + std::to_string(i + 1) + ": " + std::to_string(w.requests[i].input_tokens) + " + " +
                       std::to_string(w.requests[i].output_tokens) + " tokens exceed max_model_len " + std::to_string(max_model_len) +
                       (sglang ? " (SGLang would cut its output to fit; " : " (vLLM refuses it; ") + fix + ")");
}

std::optional<ScaleOut> layout_of(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu) {
    const std::optional<ScaleOutInputs> in = scale_out_from_flags(k.layout, k.sglang() ? ScaleOutRules::Sglang : ScaleOutRules::Vllm);
    std::optional<ScaleOut> so;
    if (in) so = plan_scale_out(model, *in);
    if (so && so->dp == 1 && so->ep == 1) so.reset();
    const bool placed = k.nodes.nodes > 0 || k.nodes.gpus_per_node > 0 || k.nodes.nic_given;
    if (!so) {
        if (placed) usage_error("--nodes, --gpus-per-node and --nic place a DP attention + EP layout: add --dp or --ep");
        if (k.expert_imbalance != 0) usage_error("--expert-imbalance needs expert parallelism (--dp N with --enable-expert-parallel)");
        if (k.two_batch_overlap) add_two_batch_overlap(nullptr, k.engine);  // refused: no layout
        return so;
    }
    if (k.expert_imbalance != 0) {
        check_expert_imbalance(k.expert_imbalance);
        if (so->ep < 2) usage_error("--expert-imbalance needs expert parallelism (--dp N with --enable-expert-parallel)");
    }
    // vLLM synchronizes DP ranks only for MoE models (their experts' collectives); a dense model's engine cores run independently.
    if (model.experts <= 0 && !k.sglang())
        usage_error("--dp: a dense model's DP ranks run independently in vLLM (no expert all-to-all to wait for); simulate them as --replicas " +
                    std::to_string(so->dp));
    if (model.experts <= 0)
        usage_error("--dp: SGLang's DP attention is simulated for mixture-of-experts models only; simulate a dense model's copies as --replicas");
    if (!gpu.from_database) usage_error("--dp / --ep: a device given by --gpu-mem has no interconnect figure for the all-to-alls; pass --gpu ID");
    if (k.pp > 1) usage_error("--dp / --ep with --pp: a pipeline of DP groups is not simulated; pass --pp 1");
    return so;
}

// SGLang's and vLLM's scale-out rules differ (core/memory/parallel.hpp).
std::int64_t resolve_gpus_per_node(const NodeKnobs& n, std::int64_t gpus, std::int64_t device_default) {
    if (n.nodes > 0 && n.gpus_per_node > 0) {
        if (n.nodes * n.gpus_per_node != gpus)
            usage_error("--nodes " + std::to_string(n.nodes) + " x --gpus-per-node " + std::to_string(n.gpus_per_node) + " is " +
                        std::to_string(n.nodes * n.gpus_per_node) + " GPUs; the layout has " + std::to_string(gpus));
        return n.gpus_per_node;
    }
    if (n.nodes > 0) {
        if (gpus % n.nodes != 0)
            usage_error("--nodes " + std::to_string(n.nodes) + ": the layout's " + std::to_string(gpus) + " GPUs do not split evenly over them");
        return gpus / n.nodes;
    }
    return n.gpus_per_node > 0 ? n.gpus_per_node : device_default;
}

void add_two_batch_overlap(ExpertLayoutInputs* layout, Engine engine) {
    if (engine != Engine::Vllm && engine != Engine::Sglang)
        usage_error("--two-batch-overlap is vLLM's --enable-dbo or SGLang's --enable-two-batch-overlap: pass --engine vllm or --engine sglang");
    if (!layout || layout->scale_out.ep < 2)
        usage_error("--two-batch-overlap hides the expert all-to-all: it needs expert parallelism (--ep N, or --enable-expert-parallel with --dp)");
    set_two_batch_overlap(*layout, engine == Engine::Sglang);
}

ExpertLayoutInputs expert_layout_inputs(const ServeKnobs& k, const ScaleOut& so, const Gpu& gpu) {
    ExpertLayoutInputs li{so, k.expert_imbalance != 0 ? k.expert_imbalance : 1.0, k.all_to_all,
                          resolve_gpus_per_node(k.nodes, so.gpus, default_gpus_per_node(gpu.interconnect)), k.nodes.nic};
    if (k.two_batch_overlap) add_two_batch_overlap(&li, k.engine);
    return li;
}

PdSide pd_side(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu, const Efficiency& efficiency) {
    PdSide out;
    out.gpu = gpu;
    out.tp = k.tp;
    check_tp(model, out.tp);
    out.layout = layout_of(k, model, out.gpu);
    out.config = engine_config(k, model, out.gpu, out.max_model_len, out.pool_source);
    const CostModelInputs in{&model, out.gpu, k.weights, k.kv_dtype, out.kv_tp(), efficiency, std::nullopt};
    if (out.layout) {
        out.cost = make_cost_model(in, expert_layout_inputs(k, *out.layout, out.gpu));
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
    if (!within_bounds(Quantity::LinkBandwidth, gbs * 1e9))
        usage_error("--kv-link " + text + ": " + bounds_refusal(Quantity::LinkBandwidth, gbs * 1e9) + " bytes/s");
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
void add_speculation(const ServeKnobs& k, const ModelSpec& model, const ModelSpec& draft_model, const SpecInputs& spec,
                     const DecodePricer& draft_decode, SimulateResult& r, const ScaleOut* layout) {
    const Dtype kv = kv_sizing_dtype(model, k.kv_dtype, k.tp);
    const std::int64_t target_bytes = kv_transfer_bytes_per_token(model, k.tp, kv);
    SpecReport rep;
    rep.method = spec_method_name(spec.method);
    rep.proposer = spec.method == SpecMethod::Draft ? spec.draft_label : "one layer of the target's shape";
    rep.rates = spec.rates;
    rep.expected_tokens_per_step = expected_tokens_per_step(spec.rates);
    rep.draft_kv_bytes_per_token = proposer_kv_bytes_per_token(spec.method, model, &draft_model, k.tp, kv);
    rep.blocks_without_draft = r.config.num_gpu_blocks;
    // The drafter's weights are loaded beside the target's, before vLLM
    // profiles, so they come out of the same budget, over TP: a draft
    // model's checkpoint, or an EAGLE/MTP head's one layer and projection.
    // Under DP attention + EP the head's routed experts are spread as the target's are.
    rep.draft_weights_bytes_per_gpu = proposer_weight_bytes_per_gpu(spec.method, model, &draft_model, k.tp, layout);
    if (k.num_gpu_blocks == 0 && target_bytes > 0) {
        const double pool =
            static_cast<double>(r.config.num_gpu_blocks) * static_cast<double>(r.config.block_size) * static_cast<double>(target_bytes) -
            static_cast<double>(rep.draft_weights_bytes_per_gpu);
        const double block = static_cast<double>(r.config.block_size) * static_cast<double>(target_bytes + rep.draft_kv_bytes_per_token);
        if (!(pool >= block))
            usage_error("--spec-method " + std::string(spec_method_name(spec.method)) +
                        ": the drafter's weights leave no KV cache memory; pass a larger --tp" +
                        (spec.method == SpecMethod::Draft ? " or a smaller --draft-model" : ""));
        r.config.num_gpu_blocks = static_cast<std::int64_t>(std::floor(pool / block));
    }
    r.config.spec.k = spec.k;
    r.config.spec.rates = spec.rates;
    r.config.spec.seed = k.seed;
    const std::int64_t drafts = spec.k;
    r.config.spec.draft_s = [drafts, &draft_decode](std::int64_t batch, std::int64_t context_sum) {
        const std::optional<double> pass = draft_decode(batch, context_sum);
        if (!pass) throw std::logic_error("the drafter's decode step has no price");
        return static_cast<double>(drafts) * *pass;
    };
    r.spec = std::move(rep);
}

}  // namespace kvplan
