#include "core/speed/step_cost.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Sum over query positions i = 1..n of the tokens each attends to, min(i, window)
// (window 0: all of them): the causal-attention work of a prefill of n tokens.
double causal_pairs(std::int64_t n, std::int64_t window) {
    const double N = static_cast<double>(n);
    if (window <= 0 || window >= n) return N * (N + 1) / 2;
    const double w = static_cast<double>(window);
    return w * (w + 1) / 2 + (N - w) * w;
}

}  // namespace

double experts_touched(std::int64_t experts, std::int64_t per_token, std::int64_t tokens) {
    if (experts <= 0) return 0;
    const double E = static_cast<double>(experts);
    const double miss = 1.0 - static_cast<double>(per_token) / E;
    return E * (1.0 - std::pow(miss, static_cast<double>(tokens)));
}

void check_expert_imbalance(double imbalance) {
    if (!(imbalance >= 1.0) || !std::isfinite(imbalance)) {
        std::ostringstream found;  // as given: 0.5, not std::to_string's 0.500000
        found << imbalance;
        usage_error("--expert-imbalance: expected the busiest EP rank's routed tokens over the mean, a number >= 1, found " + found.str());
    }
}

void set_two_batch_overlap(ExpertLayoutInputs& in, bool sglang) {
    in.overlap_decode_tokens = sglang ? 2 : 32;
    in.overlap_prefill_tokens = sglang ? 2 : 512;
}

namespace {

// The layout's terms of one GPU (docs/scale-out.md, "Step cost").
ExpertLayout make_layout(const CostModel& m, const ModelSpec& spec, const ExpertLayoutInputs& in) {
    check_expert_imbalance(in.expert_imbalance);
    const ScaleOut& so = in.scale_out;
    // All routed tokens on one rank is EP x the mean: no routing is more
    // lopsided, and beyond it the busiest rank would hold more tokens than exist.
    if (so.ep > 1 && in.expert_imbalance > static_cast<double>(so.ep)) {
        std::ostringstream found;
        found << in.expert_imbalance;
        usage_error("--expert-imbalance: expected at most the EP size " + std::to_string(so.ep) + " (every routed token on one rank), found " +
                    found.str());
    }
    ExpertLayout L;
    L.gpus = checked_mul(so.dp, so.attention_tp, "GPUs per replica");
    L.dp = so.dp;
    L.ep = so.ep;
    L.imbalance = so.ep > 1 ? in.expert_imbalance : 1.0;
    // EP > 1: physical_experts / ep whole experts (stage_weights_scaled);
    // EP 1: every expert, each a tensor shard of 1 / expert TP.
    L.local_experts = so.ep > 1 ? so.experts_per_gpu : spec.experts;
    // m.expert_bytes is one expert of one layer split over the attention TP.
    const double attention_tp = static_cast<double>(so.attention_tp);
    L.expert_bytes_per_gpu = m.expert_bytes * attention_tp / static_cast<double>(so.expert_tp);
    // m.expert_flops_per_token is a token's k experts over the attention TP;
    // a replica's token-expert pairs are spread over EP ranks, each expert
    // split over expert TP.
    L.expert_flops_scale = attention_tp / static_cast<double>(so.ep * so.expert_tp);
    // DeepEP dispatches fp8 with one fp32 scale per 128 channels and combines
    // in bf16 (deepseek-ai/DeepEP docs/legacy.md, "FP8 dispatching and BF16
    // combining"; deep_ep/buffer.py low_latency_dispatch, use_fp8): fp8 where
    // the model's experts run fp8 GEMMs, else bf16 both ways.
    const double hidden = static_cast<double>(spec.hidden);
    L.fp8_dispatch = m.math_dtype == Dtype::Fp8;
    L.dispatch_bytes_per_copy = L.fp8_dispatch ? hidden + 4.0 * std::ceil(hidden / 128.0) : 2.0 * hidden;
    L.combine_bytes_per_copy = 2.0 * hidden;
    L.deepep = so.deepep;
    L.gather_bytes_per_token = 2.0 * hidden;
    if (so.ep > 1 && so.deepep) {
        L.dispatch_latency_s = all_to_all_latency(in.all_to_all, AllToAllOp::Dispatch, so.ep).value_or(0.0);
        L.combine_latency_s = all_to_all_latency(in.all_to_all, AllToAllOp::Combine, so.ep).value_or(0.0);
    }
    if (in.overlap_decode_tokens < 0 || in.overlap_prefill_tokens < 0 || (in.overlap_decode_tokens > 0) != (in.overlap_prefill_tokens > 0))
        throw std::logic_error("two-batch overlap: both thresholds positive, or both 0");
    L.overlap_decode_tokens = in.overlap_decode_tokens;
    L.overlap_prefill_tokens = in.overlap_prefill_tokens;
    // Nodes: GPUs beyond one scale-up link are reached over the NIC.
    L.gpus_per_node = in.gpus_per_node > 0 ? std::min(in.gpus_per_node, L.gpus) : L.gpus;
    L.nodes = ceil_div(L.gpus, L.gpus_per_node);
    if (L.nodes > 1) {
        if (!(in.nic.bytes_per_s > 0))
            usage_error("--gpus-per-node: a layout over " + std::to_string(L.nodes) + " nodes needs the NIC between them (--nic)");
        L.nic_bytes_per_s = in.nic.bytes_per_s;
        L.nic = in.nic.id;
    }
    return L;
}

std::string datasheet_label(const Gpu& gpu) {
    return std::string("analytic: ") + link_family_name(link_family(gpu)) + " datasheet";
}

// The all-gather and reduce-scatter of vLLM's default dispatch over the DP
// group: the device's NCCL tables, its link family's curve, else the
// datasheet: NCCL's published small-message latency (models/interconnects.json)
// plus the (n - 1) / n of the message a rank receives over the link.
void set_dispatch_curves(ExpertLayout& L, const Gpu& gpu, const EngineProfile& profile) {
    if (L.deepep || L.ep < 2 || L.dp < 2) return;
    for (auto [curve, op] : {std::pair{&L.gather, CollectiveOp::AllGather}, std::pair{&L.scatter, CollectiveOp::ReduceScatter}}) {
        if (profile.collectives) *curve = collective_curve(*profile.collectives, gpu, op, L.dp, profile.id);
        if (curve->priced()) continue;
        const double n = static_cast<double>(L.dp);
        curve->fixed_s = allreduce_latency(profile.links, AllreduceImpl::Nccl, link_family(gpu), L.dp).value_or(profile.fixed_allreduce_latency_s);
        curve->bytes_per_s = static_cast<double>(gpu.interconnect_bytes_per_s) * n / (n - 1);
        curve->label = datasheet_label(gpu);
    }
}

// `moe_layers` in proportion to a share of the layers, at least one.
std::int64_t moe_layers_in_share(std::int64_t moe_layers, double share) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(static_cast<double>(moe_layers) * share)));
}

// The MoE layers among a stage's: those whose routed experts hold bytes. When
// the tensors name no layers, the model's `moe_layers` in proportion.
std::int64_t moe_layers_in(const WeightSizing& w, const PipelineStage& stage, std::int64_t moe_layers, std::int64_t layers) {
    for (const WeightPart& p : w.parts) {
        if (p.part != ParamPart::Experts || p.by_layer.bytes.empty()) continue;
        std::int64_t n = 0;
        for (std::int64_t l = stage.first_layer; l < stage.first_layer + stage.layers && l < layers; ++l)
            if (p.by_layer.bytes[static_cast<std::size_t>(l)] > 0) ++n;
        return n;
    }
    return moe_layers_in_share(moe_layers, static_cast<double>(stage.layers) / static_cast<double>(std::max<std::int64_t>(1, layers)));
}

// make_cost_model, of one pipeline stage when `stage` is given.
CostModel build_cost_model(const CostModelInputs& in, const PipelineStage* stage, std::int64_t pp, const ExpertLayoutInputs* layout = nullptr) {
    const ModelSpec& spec = *in.model;
    CostModel m;
    m.gpu_id = in.gpu.id;
    m.tp = in.tp;
    const Efficiency& e = in.efficiency;
    const EngineProfile& profile = e.profile;
    m.engine = profile.id;
    m.step_overhead_s = e.step_overhead_s.value_or(profile.step_overhead_s);
    m.allreduce_latency_s = e.allreduce_latency_s.value_or(profile.allreduce_latency_s(in.gpu, in.tp));
    // Measured or family curve unless the user gave the latency (docs/collectives.md).
    if (in.tp > 1 && !e.allreduce_latency_s && profile.collectives)
        m.allreduce_curve = collective_curve(*profile.collectives, in.gpu, CollectiveOp::AllReduce, in.tp, profile.id);
    m.link_bytes_per_s = static_cast<double>(in.gpu.interconnect_bytes_per_s);
    if (profile.link_fraction != 1.0) m.link_bytes_per_s *= profile.link_fraction;
    m.prefill_half_tokens = profile.prefill_half_tokens;
    m.expert_bandwidth_factor = profile.moe_efficiency;
    // The format as this engine stores it (an int4 group's scale and zero point, a quantized head).
    const WeightFormat format = int4_as_stored(in.weights, profile.int4_group_bits, profile.quantize_head);

    // Achievable bandwidth and FLOP/s: measured, else a fraction of the datasheet.
    m.math_dtype = format.as_checkpoint ? checkpoint_math_dtype(spec) : format.math;
    const double datasheet = static_cast<double>(in.gpu.bandwidth_bytes_per_s);
    const double kernels = profile.kernel(format.family);
    if (e.measured_bandwidth_bytes_per_s) {
        m.bandwidth_bytes_per_s = *e.measured_bandwidth_bytes_per_s;
        m.weights_bandwidth_bytes_per_s = *e.measured_bandwidth_bytes_per_s * kernels;
    } else {
        m.bandwidth_bytes_per_s = e.bandwidth_fraction.value_or(profile.kv_fraction) * datasheet;
        m.weights_bandwidth_bytes_per_s = e.weights_bandwidth_fraction.value_or(profile.weights_fraction(in.gpu)) * datasheet * kernels;
    }
    std::optional<double> peak = peak_tflops_for(in.gpu, m.math_dtype);
    // fp8 and fp4 weights run weight-only into 16-bit GEMMs where the device has no such tensor cores
    // (vLLM's FP8 and FP4 Marlin kernels); the math is then 16-bit, and so is the profile's fraction.
    if (!peak && (m.math_dtype == Dtype::Fp8 || m.math_dtype == Dtype::Fp4)) {
        m.math_dtype = Dtype::Bf16;
        peak = peak_tflops_for(in.gpu, Dtype::Bf16);
    }
    if (!peak) peak = in.gpu.peak.fp16 ? in.gpu.peak.fp16 : in.gpu.peak.fp32;
    // FP4 GEMMs take the profile's low-precision fraction: no profile has rows to fit an fp4 one.
    const double profile_flops = m.math_dtype == Dtype::Fp8 || m.math_dtype == Dtype::Fp4 ? profile.flops_fp8 : profile.flops_16bit;
    // Tensor parallelism splits each GEMM into narrower ones that reach less of the peak.
    const double tp_loss = 1.0 + profile.tp_flops_loss * std::log2(static_cast<double>(std::max<std::int64_t>(1, in.tp)));
    if (e.measured_flops_per_s) m.flops_per_s = *e.measured_flops_per_s;
    else if (peak) {
        const double fraction = e.flops_fraction.value_or(profile_flops);
        m.flops_fraction = fraction / tp_loss;
        m.flops_per_s = fraction * *peak * 1e12 / tp_loss;
    }
    if (m.flops_per_s <= 0) m.notes.push_back("no FLOP/s figure for " + in.gpu.id + ": compute time is not modelled (memory-bound only)");
    if (!e.calibration_source.empty()) m.notes.push_back("bandwidth and FLOP/s measured: " + e.calibration_source);

    // Weights: everything but the embedding table is read every step (a lookup
    // reads B rows); a tied LM head reads the embedding matrix. Routed experts
    // are read only when touched.
    const WeightSizing w = size_weights_in(spec, format);
    const std::int64_t all_layers = std::max<std::int64_t>(1, static_cast<std::int64_t>(spec.layers.size()));
    const bool sample = in.sample_layers.has_value();
    const bool staged = stage != nullptr && !sample;
    const std::int64_t part_layers = sample ? *in.sample_layers : staged ? stage->layers : all_layers;
    const double layer_share = sample || staged ? static_cast<double>(part_layers) / static_cast<double>(all_layers) : 1.0;
    // The LM head runs on the last stage only (vLLM's PPMissingLayer elsewhere).
    const bool with_head = !sample && (!staged || stage->index == pp - 1);
    m.weight_bytes_total = static_cast<double>(w.bytes);
    const double tp = static_cast<double>(in.tp);
    double dense = 0, expert_part = 0, embedding = 0, expert_params = 0;
    // Tensors TP splits over fewer ranks than it has (WeightPart::capped): the
    // stage's bytes and parameters of them, and one rank's.
    double capped = 0, capped_rank = 0, capped_params = 0, capped_params_rank = 0;
    std::int64_t embedding_params = 0;
    bool has_head = false;
    std::int64_t head_params = 0;
    // Of a per-layer amount, what the priced layers hold: all of it, an
    // average layer's share for a sample, the stage's own layers for a stage.
    auto priced = [&](std::int64_t total, const std::vector<std::int64_t>& by_layer) {
        if (staged) return static_cast<double>(layer_range_amount(total, by_layer, stage->first_layer, stage->layers, all_layers));
        return static_cast<double>(total) * layer_share;
    };
    double stage_active = 0;  // a stage's active parameters, its head aside
    double whole_experts = 0;
    for (const WeightPart& p : w.parts) {
        if (p.part == ParamPart::Embedding) {
            embedding = static_cast<double>(p.bytes);
            embedding_params = p.params;
        } else if (p.part == ParamPart::Experts) {
            whole_experts = static_cast<double>(p.bytes);
            expert_part = priced(p.bytes, p.by_layer.bytes);
            expert_params = priced(p.params, p.by_layer.params);
            if (spec.experts > 0) stage_active += expert_params / static_cast<double>(spec.experts) * static_cast<double>(spec.experts_per_token);
        } else if (p.part == ParamPart::Head) {
            has_head = true;
            head_params = p.params;
            if (with_head) dense += static_cast<double>(p.bytes);
        } else {
            dense += priced(p.bytes, p.by_layer.bytes);
            stage_active += priced(p.params, p.by_layer.params);
            for (const CappedShare& c : p.capped) {
                if (!splits_fewer(c, in.tp)) continue;
                const double split = static_cast<double>(c.max_split);
                const double bytes = priced(c.bytes, c.by_layer.bytes), params = priced(c.params, c.by_layer.params);
                capped += bytes;
                capped_rank += bytes / split;
                capped_params += params;
                capped_params_rank += params / split;
            }
        }
    }
    if (w.parts.empty()) dense = static_cast<double>(w.bytes) * layer_share;  // hand-built: --params only
    if (!has_head && spec.tied_embeddings && with_head) dense += embedding;
    m.experts = spec.experts;
    m.experts_per_token = spec.experts_per_token;
    for (const ParamTensor& t : spec.params)
        if (t.part == ParamPart::Experts && ends_with(t.name, "up_proj") && spec.experts > 0) m.moe_layers = t.copies / spec.experts;
    if (m.moe_layers > 0) {
        m.expert_bytes = whole_experts / static_cast<double>(m.moe_layers * m.experts) / tp;
        // A token runs k of the E experts: 2 FLOPs per active expert weight.
        m.expert_flops_per_token = 2.0 * expert_params * static_cast<double>(m.experts_per_token) / static_cast<double>(m.experts) / tp;
        if (staged) m.moe_layers = moe_layers_in(w, *stage, m.moe_layers, all_layers);
        if (sample) m.moe_layers = moe_layers_in_share(m.moe_layers, layer_share);
    } else dense += expert_part;
    m.dense_weight_bytes = (dense - capped) / tp + capped_rank;
    if (layout) {
        // A sample (a speculative head's one layer) keeps the layout; a pipeline stage does not take one.
        if (staged) usage_error("--dp / --ep: the data-parallel step is priced for the whole model, without --pp");
        m.layout = make_layout(m, spec, *layout);
        set_dispatch_curves(m.layout, in.gpu, profile);
        if (m.layout.ep > 1 && m.link_bytes_per_s <= 0)
            m.notes.push_back("no interconnect figure for " + in.gpu.id + ": all-to-alls timed by latency only");
        if (in.tp > m.layout.gpus_per_node) {
            // A ring all-reduce over nodes runs at the slowest hop's rate: the NIC.
            m.link_bytes_per_s = m.layout.nic_bytes_per_s;
            m.allreduce_curve = CollectiveCurve{};  // the tables are one node's
            m.notes.push_back("attention TP " + std::to_string(in.tp) + " spans nodes of " + std::to_string(m.layout.gpus_per_node) +
                              " GPUs: its all-reduces cross the NIC (" + m.layout.nic +
                              "), priced at its line rate with the in-node latency, "
                              "a lower bound; engines put data or pipeline parallelism, not TP, across nodes");
        }
    }
    m.layer_overhead_s = profile.layer_overhead_s * static_cast<double>(part_layers);
    m.allreduce_source = m.allreduce_curve.priced() ? m.allreduce_curve.label : datasheet_label(in.gpu);

    // Matmul FLOPs: 2 per active parameter per token, without the embedding lookup, with a tied head.
    std::int64_t active = w.active_params - (w.parts.empty() ? 0 : embedding_params);
    if (!has_head && spec.tied_embeddings) active += embedding_params;
    if (sample)
        active = static_cast<std::int64_t>(static_cast<double>(active - head_params - (!has_head && spec.tied_embeddings ? embedding_params : 0)) *
                                           layer_share);
    if (staged) {
        const std::int64_t head = head_params + (!has_head && spec.tied_embeddings ? embedding_params : 0);
        active = (w.parts.empty() ? static_cast<std::int64_t>(static_cast<double>(active - head) * layer_share)
                                  : static_cast<std::int64_t>(std::llround(stage_active))) +
                 (with_head ? head : 0);
    }
    m.active_params = active;
    m.matmul_flops_per_token = 2.0 * ((static_cast<double>(active) - capped_params) / tp + capped_params_rank);

    // KV and state per layer group, one GPU.
    KvOptions kvo;
    kvo.kv_dtype = in.kv_dtype;
    kvo.context = 1;
    kvo.tp = in.tp;
    ModelSpec sampled;
    if (sample) {
        sampled = spec;
        sampled.layers.resize(static_cast<std::size_t>(std::min<std::int64_t>(*in.sample_layers, all_layers)));
    }
    if (staged) sampled = stage_model(spec, *stage);
    const KvSizing s = size_kv(sample || staged ? sampled : spec, kvo);
    m.kv_dtype = s.kv_dtype;
    const double query_heads = spec.heads > 0 ? static_cast<double>(spec.heads) / tp : 0;
    for (const LayerGroup& g : s.groups) {
        CostGroup c;
        c.kind = g.spec.kind;
        c.layers = g.layers;
        c.window_tokens = g.spec.window_tokens;
        c.kv_bytes_per_token = static_cast<double>(layer_bytes_per_token_per_gpu(g.spec, in.tp, s.kv_dtype) * g.layers);
        c.state_bytes = static_cast<double>(layer_state_bytes_per_gpu(g.spec, in.tp, s.conv_state_dtype, s.ssm_state_dtype) * g.layers);
        const double L = static_cast<double>(g.layers);
        if (g.spec.kind == LayerKind::Mla) {
            // Absorbed MLA: each head scores against the latent and sums over it (2 x 2 x latent).
            c.attention_flops_per_token_pair = 4.0 * query_heads * static_cast<double>(g.spec.latent_dim) * L;
        } else if (holds_per_token(g.spec.kind)) {
            // Q.K^T and the weighted sum of V: 2 x (head_dim_k + head_dim_v) per query head.
            c.attention_flops_per_token_pair = 2.0 * query_heads * static_cast<double>(g.spec.k_head_dim + g.spec.v_head_dim) * L;
        } else if (g.spec.kind == LayerKind::State) {
            c.state_flops_per_token =
                6.0 * static_cast<double>(g.spec.ssm_state_elements) / std::min<double>(tp, std::max<std::int64_t>(1, g.spec.state_tp_unit)) * L;
        }
        m.groups.push_back(c);
    }

    // Tensor parallelism: two all-reduces of the hidden state per layer (after attention and after the MLP).
    m.activation_bytes_per_token = 2.0 * static_cast<double>(spec.hidden);
    m.allreduces_per_step = in.tp > 1 ? 2 * (sample || staged ? part_layers : static_cast<std::int64_t>(spec.layers.size())) : 0;
    if (in.tp > 1 && m.link_bytes_per_s <= 0) m.notes.push_back("no interconnect figure for " + in.gpu.id + ": all-reduces not timed");
    if (staged) {
        // A stage that is not the last returns IntermediateTensors holding
        // the hidden state and the residual (vllm/model_executor/models/
        // llama.py, LlamaModel.forward), sent point to point to the next
        // stage: two 16-bit vectors of `hidden` per token.
        if (stage->index < pp - 1) m.send_bytes_per_token = 2.0 * m.activation_bytes_per_token;
        if (stage->index > 0) m.step_overhead_s = 0;
        if (pp > 1 && m.link_bytes_per_s <= 0) m.notes.push_back("no interconnect figure for " + in.gpu.id + ": stage sends not timed");
    }
    return m;
}

}  // namespace

CostModel make_cost_model(const CostModelInputs& in) {
    return build_cost_model(in, nullptr, 1);
}

CostModel make_cost_model(const CostModelInputs& in, const ExpertLayoutInputs& layout) {
    return build_cost_model(in, nullptr, 1, &layout);
}

CostModel make_stage_cost_model(const CostModelInputs& in, const PipelineStage& stage, std::int64_t pp) {
    return build_cost_model(in, &stage, pp);
}

namespace {

// `expert_tokens`: the tokens whose routed-expert FLOPs this GPU computes
// (< 0: `tokens`, the plain TP step).
// A step's terms that depend on its weight bytes and token count only.
DecodeBatchTerms token_terms(const CostModel& m, double weight_bytes, double expert_weight_bytes, std::int64_t tokens, double expert_tokens) {
    DecodeBatchTerms b;
    b.weight_bytes = weight_bytes;
    b.expert_weight_bytes = expert_weight_bytes;
    // Routed experts stream at the profile's MoE efficiency of the weight bandwidth (grouped GEMMs).
    b.weights_s = m.expert_bandwidth_factor == 1.0 ? weight_bytes / m.weights_bandwidth_bytes_per_s
                                                   : (weight_bytes - expert_weight_bytes) / m.weights_bandwidth_bytes_per_s +
                                                         expert_weight_bytes / (m.weights_bandwidth_bytes_per_s * m.expert_bandwidth_factor);
    // GEMMs over few tokens reach less of the peak (the profile's prefill_half_tokens; 0: no fall-off).
    const double T = static_cast<double>(std::max<std::int64_t>(1, tokens));
    const double gemm_efficiency = m.prefill_half_tokens > 0 ? T / (T + m.prefill_half_tokens) : 1.0;
    b.flops_per_s = m.flops_per_s > 0 ? m.flops_per_s * gemm_efficiency : 0;
    // The routed experts' grouped GEMMs run at the profile's MoE efficiency of that.
    if (b.flops_per_s > 0 && m.expert_bandwidth_factor != 1.0)
        b.expert_compute_s =
            (expert_tokens < 0 ? T : expert_tokens) * m.expert_flops_per_token * (1.0 / m.expert_bandwidth_factor - 1.0) / b.flops_per_s;
    b.overhead_s = m.step_overhead_s + m.layer_overhead_s;
    const double message = m.activation_bytes_per_token * static_cast<double>(tokens);
    if (m.allreduces_per_step > 0 && m.allreduce_curve.priced()) {
        b.allreduce_s = static_cast<double>(m.allreduces_per_step) * m.allreduce_curve.time_s(message);
    } else if (m.allreduces_per_step > 0 && m.link_bytes_per_s > 0) {
        // Ring all-reduce: each rank sends and receives 2 (tp - 1) / tp of the message.
        const double tp = static_cast<double>(m.tp);
        b.allreduce_s = static_cast<double>(m.allreduces_per_step) * (m.allreduce_latency_s + 2.0 * (tp - 1) / tp * message / m.link_bytes_per_s);
    }
    if (m.send_bytes_per_token > 0 && m.link_bytes_per_s > 0) b.send_s = m.send_bytes_per_token * static_cast<double>(tokens) / m.link_bytes_per_s;
    return b;
}

// The step's times from its bytes and FLOPs and the terms above.
StepCost combine(const CostModel& m, StepCost c, const DecodeBatchTerms& b) {
    c.memory_s = b.weights_s + (c.kv_read_bytes + c.kv_write_bytes) / m.bandwidth_bytes_per_s;
    c.compute_s = b.flops_per_s > 0 ? c.flops() / b.flops_per_s : 0;
    c.compute_s += b.expert_compute_s;
    c.compute_bound = c.compute_s > c.memory_s;
    c.overhead_s = b.overhead_s;
    c.allreduce_s = b.allreduce_s;
    c.send_s = b.send_s;
    c.total_s = std::max(c.memory_s, c.compute_s) + c.overhead_s + c.allreduce_s;
    if (c.send_s > 0) c.total_s += c.send_s;
    if (c.all_to_all_s > 0) c.total_s += c.all_to_all_s;
    return c;
}

StepCost finish(const CostModel& m, StepCost c, std::int64_t tokens, double expert_tokens = -1) {
    return combine(m, c, token_terms(m, c.weight_bytes, c.expert_weight_bytes, tokens, expert_tokens));
}

double routed_weight_bytes(const CostModel& m, std::int64_t tokens) {
    if (m.moe_layers == 0) return 0;
    return static_cast<double>(m.moe_layers) * experts_touched(m.experts, m.experts_per_token, tokens) * m.expert_bytes;
}

// vLLM's allgather_reducescatter dispatch per MoE layer: the DP group
// all-gathers the replica's tokens' hidden states, M = tokens x hidden x 2 B,
// and reduce-scatters the experts' outputs, M again (vllm/distributed/
// device_communicators/all2all.py, AgRsAll2AllManager). A rank receives
// (n - 1) / n of each. Over nodes, the share from other nodes crosses the NIC
// at its line rate, at the same time as the in-node part.
void gather_scatter(const CostModel& m, StepCost& c, double replica_tokens) {
    const ExpertLayout& L = m.layout;
    const double n = static_cast<double>(L.dp), layers = static_cast<double>(m.moe_layers);
    const double message = replica_tokens * L.gather_bytes_per_token;
    const double far = L.nodes > 1 ? static_cast<double>(L.gpus - L.gpus_per_node) / static_cast<double>(L.gpus) : 0.0;
    const double nic_s = far > 0 ? message * far / L.nic_bytes_per_s : 0.0;
    c.all_to_all_bytes = layers * 2.0 * message * (n - 1) / n;
    c.all_to_all_nic_bytes = layers * 2.0 * message * far;
    c.all_to_all_s = layers * (std::max(L.gather.time_s(message), nic_s) + std::max(L.scatter.time_s(message), nic_s));
}

// The step of one DP rank holding `c`'s sequences (c.rank_sequences, and
// their KV and attention terms) and `rank_tokens` new tokens, while the
// replica's DP ranks together compute `replica_tokens` (docs/scale-out.md,
// "Step cost"): the rank's own attention and dense layers, the experts and
// all-to-alls of the whole replica's tokens.
StepCost rank_step(const CostModel& m, StepCost c, std::int64_t rank_tokens, double replica_tokens) {
    const ExpertLayout& L = m.layout;
    // Routed experts: the replica's T x k token-expert pairs spread uniformly
    // over EP ranks (T x k / EP each), the busiest rank `imbalance` x that.
    const double load = replica_tokens * L.imbalance;  // the busiest rank's share, in replica tokens
    const double k = static_cast<double>(m.experts_per_token);
    if (m.moe_layers > 0) {
        c.rank_expert_tokens = load * k / static_cast<double>(L.ep);
        // A local expert is missed by a token with probability 1 - k/E
        // (k distinct experts of E, uniform); by `load` tokens, (1 - k/E)^load.
        const double miss = 1.0 - k / static_cast<double>(m.experts);
        c.experts_read = static_cast<double>(L.local_experts) * (1.0 - std::pow(miss, load));
        c.expert_weight_bytes = static_cast<double>(m.moe_layers) * c.experts_read * L.expert_bytes_per_gpu;
    }
    c.weight_bytes = m.dense_weight_bytes + c.expert_weight_bytes;
    // Dense FLOPs over this rank's tokens; expert FLOPs over its pairs.
    const double expert_tokens = load * L.expert_flops_scale;
    c.matmul_flops =
        static_cast<double>(rank_tokens) * (m.matmul_flops_per_token - m.expert_flops_per_token) + expert_tokens * m.expert_flops_per_token;
    if (L.ep > 1 && m.moe_layers > 0 && !L.deepep) {
        if (L.dp > 1) gather_scatter(m, c, replica_tokens);
    } else if (L.ep > 1 && m.moe_layers > 0) {
        // Dispatch and combine per MoE layer: the busiest rank receives its
        // pairs and sends their results back; (EP - 1) / EP of them cross the link.
        // EP ranks fill nodes in order: min(G, EP) - 1 peers share this
        // rank's scale-up link, the other EP - min(G, EP) sit behind the NIC.
        const double ep = static_cast<double>(L.ep);
        const double in_node = static_cast<double>(std::min(L.gpus_per_node, L.ep));
        const double pairs = c.rank_expert_tokens;
        const double copy = L.dispatch_bytes_per_copy + L.combine_bytes_per_copy;
        const double near = pairs * (in_node - 1.0) / ep;  // over the scale-up link
        const double far = pairs * (ep - in_node) / ep;    // over the NIC
        const double layers = static_cast<double>(m.moe_layers);
        c.all_to_all_bytes = layers * (near + far) * copy;
        c.all_to_all_nic_bytes = layers * far * copy;
        // Each call takes at least DeepEP's published time of one call, else
        // the longer of its bytes over the link and over the NIC (both run at once).
        const auto call_s = [&](double floor_s, double bytes_per_copy) {
            const double link = m.link_bytes_per_s > 0 ? near * bytes_per_copy / m.link_bytes_per_s : 0.0;
            const double nic = far > 0 ? far * bytes_per_copy / L.nic_bytes_per_s : 0.0;
            return std::max({floor_s, link, nic});
        };
        c.all_to_all_s = layers * (call_s(L.dispatch_latency_s, L.dispatch_bytes_per_copy) + call_s(L.combine_latency_s, L.combine_bytes_per_copy));
    }
    return finish(m, c, rank_tokens, expert_tokens);
}

// Two-batch overlap (docs/scale-out.md, "Two-batch overlap"): the rank's
// batch `c` (rank_tokens new tokens) as two micro-batches of half its
// sequences and tokens each, the replica's tokens halved too. Each
// micro-batch reads the weights again and pays its own all-to-all floors;
// one's compute runs while the other's dispatch or combine is in flight, so
// the layers go at the pace of the busier stream:
//   step = overhead + 2 x max(body, all-to-all) of one micro-batch,
// body = max(memory, compute) + all-reduce + send.
StepCost overlapped_rank_step(const CostModel& m, const StepCost& c, std::int64_t rank_tokens, double replica_tokens) {
    StepCost half = c;
    half.kv_read_bytes /= 2;
    half.kv_write_bytes /= 2;
    half.attention_flops /= 2;
    half.rank_sequences /= 2;
    const StepCost h = rank_step(m, half, ceil_div(rank_tokens, 2), replica_tokens / 2);
    StepCost out = h;
    for (double StepCost::*f :
         {&StepCost::weight_bytes, &StepCost::expert_weight_bytes, &StepCost::kv_read_bytes, &StepCost::kv_write_bytes, &StepCost::matmul_flops,
          &StepCost::attention_flops, &StepCost::memory_s, &StepCost::compute_s, &StepCost::allreduce_s, &StepCost::send_s,
          &StepCost::rank_expert_tokens, &StepCost::all_to_all_bytes, &StepCost::all_to_all_s, &StepCost::all_to_all_nic_bytes})
        out.*f = 2 * h.*f;
    out.rank_sequences = c.rank_sequences;
    const double body = std::max(h.memory_s, h.compute_s) + h.allreduce_s + h.send_s;
    out.total_s = h.overhead_s + 2 * std::max(body, h.all_to_all_s);
    out.overlap_hidden_s = h.overhead_s + 2 * (body + h.all_to_all_s) - out.total_s;
    out.overlapped = true;
    return out;
}

// Whether a wave runs as two micro-batches: overlap on, and every rank with
// work holds at least the threshold of new tokens (vLLM: "either all ranks
// run with microbatching or none of them do", vllm/v1/worker/ubatch_utils.py;
// SGLang's DP attention agrees the same way across ranks), at least 2.
bool overlaps(const ExpertLayout& L, bool decode_only, const std::int64_t* rank_tokens, std::size_t ranks) {
    if (!L.overlap()) return false;
    const std::int64_t least = std::max<std::int64_t>(2, decode_only ? L.overlap_decode_tokens : L.overlap_prefill_tokens);
    bool any = false;
    for (std::size_t i = 0; i < ranks; ++i) {
        const std::int64_t t = rank_tokens[i];
        if (t == 0) continue;  // a dummy batch follows the others
        if (t < least) return false;
        any = true;
    }
    return any;
}

// One DP rank's step of `seqs` replica sequences of `tokens_per_seq` new
// tokens each, `seq` being one sequence's KV and attention terms; the step
// is the slowest rank's, the one holding ceil(seqs / DP) of them.
StepCost layout_step(const CostModel& m, std::int64_t seqs, std::int64_t tokens_per_seq, const DecodeSeqTerms& seq) {
    StepCost c;
    const std::int64_t rank_seqs = ceil_div(seqs, m.layout.dp);
    const double b = static_cast<double>(rank_seqs);
    const std::int64_t rank_tokens = checked_mul(rank_seqs, tokens_per_seq, "tokens per DP rank");
    c.rank_sequences = b;
    // Attention and KV: this rank's own sequences, heads over the attention TP.
    c.kv_read_bytes = b * seq.kv_read_bytes;
    c.kv_write_bytes = b * seq.kv_write_bytes;
    c.attention_flops = b * seq.attention_flops;
    const double replica_tokens = static_cast<double>(seqs) * static_cast<double>(tokens_per_seq);
    if (overlaps(m.layout, tokens_per_seq == 1, &rank_tokens, 1)) return overlapped_rank_step(m, c, rank_tokens, replica_tokens);
    return rank_step(m, c, rank_tokens, replica_tokens);
}

// One sequence's KV read and written and its attention FLOPs in a mixed
// step, added to c; returns its new tokens.
std::int64_t add_seq_work(const CostModel& m, const SeqWork& w, StepCost& c) {
    const double n = static_cast<double>(w.new_tokens);
    for (const CostGroup& g : m.groups) {
        const std::int64_t held = g.window_tokens > 0 ? std::min(w.cached, g.window_tokens) : w.cached;
        c.kv_read_bytes += g.kv_bytes_per_token * static_cast<double>(held) + g.state_bytes;
        const double kept = g.window_tokens > 0 ? std::min(n, static_cast<double>(g.window_tokens)) : n;
        c.kv_write_bytes += g.kv_bytes_per_token * kept + g.state_bytes;
        // Each new token attends to the cached prefix (within the window) and the new tokens before it.
        const double pairs = n * static_cast<double>(held) + causal_pairs(w.new_tokens, g.window_tokens);
        c.attention_flops += g.attention_flops_per_token_pair * pairs + g.state_flops_per_token * n;
    }
    return w.new_tokens;
}

}  // namespace

DecodeSeqTerms decode_seq_terms(const CostModel& m, std::int64_t context) {
    DecodeSeqTerms t;
    for (const CostGroup& g : m.groups) {
        const std::int64_t held = g.window_tokens > 0 ? std::min(context, g.window_tokens) : context;
        t.kv_read_bytes += g.kv_bytes_per_token * static_cast<double>(held) + g.state_bytes;
        t.kv_write_bytes += g.kv_bytes_per_token + g.state_bytes;
        // A new token attends to its context and to itself.
        t.attention_flops += g.attention_flops_per_token_pair * static_cast<double>(held + 1) + g.state_flops_per_token;
    }
    return t;
}

// Every sequence of the batch costs the same: the batch's terms are B times
// one sequence's, plus the weights read once (the experts the batch's
// tokens touch, for MoE layers).
DecodeBatchTerms decode_batch_terms(const CostModel& m, std::int64_t batch) {
    const double experts = routed_weight_bytes(m, batch);
    DecodeBatchTerms b = token_terms(m, m.dense_weight_bytes + experts, experts, batch, -1);
    b.batch = batch;
    return b;
}

StepCost decode_step(const CostModel& m, const DecodeBatchTerms& b, const DecodeSeqTerms& seq) {
    if (m.layout.active()) return layout_step(m, b.batch, 1, seq);
    StepCost c;
    const double B = static_cast<double>(b.batch);
    c.expert_weight_bytes = b.expert_weight_bytes;
    c.weight_bytes = b.weight_bytes;
    c.kv_read_bytes = B * seq.kv_read_bytes;
    c.kv_write_bytes = B * seq.kv_write_bytes;
    c.attention_flops = B * seq.attention_flops;
    c.matmul_flops = B * m.matmul_flops_per_token;
    return combine(m, c, b);
}

StepCost decode_step(const CostModel& m, std::int64_t batch, const DecodeSeqTerms& seq) {
    return decode_step(m, decode_batch_terms(m, batch), seq);
}

StepCost decode_step(const CostModel& m, std::int64_t batch, std::int64_t context) {
    return decode_step(m, batch, decode_seq_terms(m, context));
}

StepCost prefill_step(const CostModel& m, std::int64_t batch, std::int64_t prompt) {
    StepCost c;
    const double B = static_cast<double>(batch);
    const double P = static_cast<double>(prompt);
    const std::int64_t tokens = batch * prompt;
    if (m.layout.active()) {
        // One prompt's terms: its KV written once, its causal attention pairs.
        DecodeSeqTerms one;
        for (const CostGroup& g : m.groups) {
            const double kept = g.window_tokens > 0 ? std::min<double>(P, static_cast<double>(g.window_tokens)) : P;
            one.kv_write_bytes += g.kv_bytes_per_token * kept + g.state_bytes;
            one.attention_flops += g.attention_flops_per_token_pair * causal_pairs(prompt, g.window_tokens) + g.state_flops_per_token * P;
        }
        return layout_step(m, batch, prompt, one);
    }
    c.expert_weight_bytes = routed_weight_bytes(m, tokens);
    c.weight_bytes = m.dense_weight_bytes + c.expert_weight_bytes;
    for (const CostGroup& g : m.groups) {
        // Flash attention keeps the prompt's K and V in on-chip tiles: HBM sees them written once.
        const double kept = g.window_tokens > 0 ? std::min<double>(P, static_cast<double>(g.window_tokens)) : P;
        c.kv_write_bytes += B * (g.kv_bytes_per_token * kept + g.state_bytes);
        c.attention_flops += B * (g.attention_flops_per_token_pair * causal_pairs(prompt, g.window_tokens) + g.state_flops_per_token * P);
    }
    c.matmul_flops = static_cast<double>(tokens) * m.matmul_flops_per_token;
    return finish(m, c, tokens);
}

StepCost mixed_step(const CostModel& m, const std::vector<SeqWork>& seqs) {
    StepCost c;
    std::int64_t tokens = 0;
    for (const SeqWork& w : seqs) tokens += add_seq_work(m, w, c);
    c.expert_weight_bytes = routed_weight_bytes(m, tokens);
    c.weight_bytes = m.dense_weight_bytes + c.expert_weight_bytes;
    c.matmul_flops = static_cast<double>(tokens) * m.matmul_flops_per_token;
    return finish(m, c, tokens);
}

StepCost dp_mixed_step(const CostModel& m, const std::vector<const std::vector<SeqWork>*>& ranks) {
    if (!m.layout.active()) throw std::logic_error("dp_mixed_step: a cost model without a DP + EP layout");
    if (static_cast<std::int64_t>(ranks.size()) != m.layout.dp) throw std::logic_error("dp_mixed_step: one batch per DP rank");
    std::vector<StepCost> terms(ranks.size());
    std::vector<std::int64_t> tokens(ranks.size(), 0);
    double replica_tokens = 0;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        for (const SeqWork& w : *ranks[i]) tokens[i] += add_seq_work(m, w, terms[i]);
        terms[i].rank_sequences = static_cast<double>(ranks[i]->size());
        replica_tokens += static_cast<double>(tokens[i]);
    }
    if (!(replica_tokens > 0)) throw std::logic_error("dp_mixed_step: a step with no tokens");
    bool decode_only = true;
    for (const auto* r : ranks)
        for (const SeqWork& w : *r) decode_only = decode_only && w.new_tokens == 1;
    const bool overlap = overlaps(m.layout, decode_only, tokens.data(), tokens.size());
    // Every layer's all-to-all waits for the slowest rank: the step is its.
    StepCost slowest;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (tokens[i] == 0) continue;  // it runs a dummy batch, shorter than any rank with work
        const StepCost c = overlap ? overlapped_rank_step(m, terms[i], tokens[i], replica_tokens) : rank_step(m, terms[i], tokens[i], replica_tokens);
        if (c.total_s > slowest.total_s) slowest = c;
    }
    return slowest;
}

namespace {

// Below 2^53 every whole number is a double and sums of them are exact.
constexpr double kExactLimit = 9007199254740992.0;

bool whole(double x) {
    return x >= 0 && x < kExactLimit && std::floor(x) == x;
}

}  // namespace

std::optional<StepCost> decode_batch_step(const CostModel& m, std::int64_t batch, std::int64_t context_sum) {
    if (batch <= 0 || context_sum < 0 || m.layout.active()) return std::nullopt;
    const double B = static_cast<double>(batch);
    const double S = static_cast<double>(context_sum);
    StepCost c;
    for (const CostGroup& g : m.groups) {
        if (g.window_tokens > 0) return std::nullopt;
        if (!whole(g.kv_bytes_per_token) || !whole(g.state_bytes) || !whole(g.attention_flops_per_token_pair) || !whole(g.state_flops_per_token))
            return std::nullopt;
        // mixed_step's terms per sequence i: kv x c_i + state read, kv + state
        // written, pair x (c_i + 1) + state FLOPs (a new token attends to its
        // context and itself); summed over the batch.
        c.kv_read_bytes += g.kv_bytes_per_token * S + B * g.state_bytes;
        c.kv_write_bytes += B * (g.kv_bytes_per_token + g.state_bytes);
        c.attention_flops += g.attention_flops_per_token_pair * (S + B) + B * g.state_flops_per_token;
    }
    // Monotone rounding: a true total at or past 2^53 cannot compute below it.
    if (!(c.kv_read_bytes < kExactLimit) || !(c.kv_write_bytes < kExactLimit) || !(c.attention_flops < kExactLimit)) return std::nullopt;
    c.expert_weight_bytes = routed_weight_bytes(m, batch);
    c.weight_bytes = m.dense_weight_bytes + c.expert_weight_bytes;
    c.matmul_flops = B * m.matmul_flops_per_token;
    return finish(m, c, batch);
}

}  // namespace kvplan
