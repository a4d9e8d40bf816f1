// The cost of one forward step on one GPU, from first principles: bytes moved
// (weights, KV cache read and written) over achievable bandwidth, FLOPs
// (weight matmuls, attention) over achievable FLOP/s, whichever is larger,
// plus a fixed per-step overhead and tensor-parallel all-reduces. Decode is a
// step of 1 new token per sequence; prefill is a step of P new tokens.
//
// CostModel is built once per (model, GPU, formats, TP) and step_cost() is
// then a short loop over a handful of layer groups that allocates nothing,
// so sweeps and searches can call it millions of times a second.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/hardware.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weight_format.hpp"
#include "core/speed/engine_profile.hpp"

namespace kvplan {

// What fraction of the datasheet a real engine reaches, or measured figures
// that replace them (kvplan measure --output, read with --calibration). The
// engine's profile gives every default (EngineProfile: the generic profile's
// values were derived from tests/fixtures/reference/decode_measurements.jsonl;
// see docs/roofline.md, "Efficiency defaults", and "Engine profiles"); the
// optional fields override it, a calibration overrides both.
struct Efficiency {
    EngineProfile profile;
    // Of datasheet memory bandwidth: the KV cache (profile: kv_fraction) and
    // weight streaming (profile: weights_fraction by memory technology).
    std::optional<double> bandwidth_fraction;
    std::optional<double> weights_bandwidth_fraction;
    // Of dense peak tensor FLOP/s (profile: flops_fraction by math dtype).
    std::optional<double> flops_fraction;
    std::optional<double> step_overhead_s;                 // launches, scheduling, sampling per step
    std::optional<double> allreduce_latency_s;             // per all-reduce (profile: its implementation over the device's link)
    std::optional<double> measured_bandwidth_bytes_per_s;  // calibration: replaces fraction x datasheet
    std::optional<double> measured_flops_per_s;
    std::string calibration_source;  // the file, when calibrated
};

// Data-parallel attention with expert parallelism (docs/scale-out.md, "Step
// cost"): the layout plan_scale_out resolves, how much busier than the mean
// the busiest EP rank's experts are, and the published all-to-all table.
struct ExpertLayoutInputs {
    ScaleOut scale_out;
    double expert_imbalance = 1.0;            // busiest rank's routed tokens / the mean, >= 1
    std::vector<AllToAllLatency> all_to_all;  // models/interconnects.json all_to_all_latency
    // Nodes: GPUs that share the scale-up link (an HGX node's 8, a GB200
    // NVL72's 72); the replica's GPUs beyond them are reached over `nic`
    // (docs/scale-out.md, "Nodes and NICs"). 0: every GPU on one link.
    std::int64_t gpus_per_node = 0;
    Nic nic;
    // Two-batch overlap (SGLang --enable-two-batch-overlap, vLLM --enable-dbo;
    // docs/scale-out.md, "Two-batch overlap"): each rank's batch in two
    // micro-batches, one's compute hiding the other's all-to-all, in a wave
    // whose every rank with work holds at least `overlap_decode_tokens` new
    // tokens (decode only) or `overlap_prefill_tokens` (a prefill in it).
    // 0: no overlap.
    std::int64_t overlap_decode_tokens = 0;
    std::int64_t overlap_prefill_tokens = 0;
};

// The engines' micro-batching thresholds: vLLM's --dbo-decode-token-threshold
// 32 and --dbo-prefill-token-threshold 512 (vllm/config/parallel.py); SGLang
// splits any batch of two tokens or more (two_batch_overlap.py).
void set_two_batch_overlap(ExpertLayoutInputs& in, bool sglang);

// Throws Error(Usage) naming --expert-imbalance unless it is a finite number >= 1.
void check_expert_imbalance(double imbalance);

struct CostModelInputs {
    const ModelSpec* model = nullptr;
    Gpu gpu;
    WeightFormat weights;           // default: the checkpoint as served
    std::optional<Dtype> kv_dtype;  // default: serving dtype
    std::int64_t tp = 1;
    Efficiency efficiency;
    // Cost only the first `sample_layers` decoder layers, without the
    // embedding and the LM head: what `kvplan measure` times on a sample.
    std::optional<std::int64_t> sample_layers;
};

// One group of layers that cache the same way, per GPU.
struct CostGroup {
    LayerKind kind = LayerKind::Full;
    std::int64_t layers = 0;
    std::int64_t window_tokens = 0;             // sliding/chunked: tokens attended
    double kv_bytes_per_token = 0;              // all layers of the group, one GPU
    double state_bytes = 0;                     // recurrent state per sequence, one GPU
    double attention_flops_per_token_pair = 0;  // per (query token, attended token), all layers, one GPU
    double state_flops_per_token = 0;
};

// What the step of one DP rank needs to know about the layout (all ones: none).
struct ExpertLayout {
    std::int64_t gpus = 1;  // GPUs of the replica: DP ranks x attention TP
    std::int64_t dp = 1;
    std::int64_t ep = 1;
    std::int64_t local_experts = 0;      // physical experts per GPU per MoE layer (EP 1: all, as tensor shards)
    double imbalance = 1.0;              // applies when ep > 1
    double expert_bytes_per_gpu = 0;     // one whole routed expert of one MoE layer on one GPU (/ expert TP)
    double expert_flops_scale = 1.0;     // attention TP / (EP x expert TP): a replica token's expert FLOPs on one GPU
    double dispatch_bytes_per_copy = 0;  // one token sent to one expert: hidden x dispatch dtype (+ fp8 scales)
    double combine_bytes_per_copy = 0;   // its result sent back: hidden x 2 B (bf16)
    double dispatch_latency_s = 0;       // per MoE layer, per call
    double combine_latency_s = 0;
    std::int64_t gpus_per_node = 1;  // GPUs on one scale-up link (all of them: one node)
    std::int64_t nodes = 1;          // ceil(gpus / gpus_per_node)
    double nic_bytes_per_s = 0;      // per direction, per GPU, between nodes (0: one node)
    std::string nic;                 // its id
    bool fp8_dispatch = false;
    // The MoE dispatch backend (docs/collectives.md, "Expert-parallel dispatch"): DeepEP where
    // selected (SGLang --moe-a2a-backend deepep), else vLLM's default allgather_reducescatter
    // (vllm/config/parallel.py, all2all_backend): the DP group all-gathers every rank's tokens'
    // hidden states before the experts and reduce-scatters their outputs after.
    bool deepep = false;
    double gather_bytes_per_token = 0;       // a token's hidden state, bf16 (2 x hidden)
    CollectiveCurve gather, scatter;         // over the DP group
    std::int64_t overlap_decode_tokens = 0;  // two-batch overlap thresholds (ExpertLayoutInputs); 0: off
    std::int64_t overlap_prefill_tokens = 0;
    bool active() const { return dp > 1 || ep > 1; }
    bool overlap() const { return overlap_decode_tokens > 0; }
};

struct CostModel {
    std::string gpu_id;
    std::int64_t tp = 1;
    double bandwidth_bytes_per_s = 0;          // achievable reading and writing the KV cache
    double weights_bandwidth_bytes_per_s = 0;  // achievable streaming the weights
    double flops_per_s = 0;                    // achievable (0: no FLOP/s figure for this device and dtype)
    double flops_fraction = 0;                 // of dense peak, what flops_per_s is (0: measured or unknown)
    double link_bytes_per_s = 0;               // per direction
    double step_overhead_s = 0;
    double layer_overhead_s = 0;  // the profile's per-layer cost x this GPU's layers, every step
    double allreduce_latency_s = 0;
    // The TP all-reduce as the engine runs it: measured or family curve where priced, else the
    // datasheet (latency + ring bytes over the link); allreduce_source says which.
    CollectiveCurve allreduce_curve;
    std::string allreduce_source;
    double prefill_half_tokens = 0;      // compute efficiency x T / (T + this) for T tokens in a step
    double expert_bandwidth_factor = 1;  // routed experts stream, and their GEMMs compute, at this x the dense rate
    std::string engine = "generic";      // the profile
    double dense_weight_bytes = 0;       // read every step, one GPU
    double expert_bytes = 0;             // one routed expert of one MoE layer, one GPU
    std::int64_t moe_layers = 0, experts = 0, experts_per_token = 0;
    double matmul_flops_per_token = 0;      // 2 x active matmul parameters, one GPU
    double expert_flops_per_token = 0;      // of which the routed experts' (2 x k/E x expert parameters)
    double activation_bytes_per_token = 0;  // one all-reduce message per token (hidden x 2 B)
    std::int64_t allreduces_per_step = 0;
    double send_bytes_per_token = 0;  // a pipeline stage's hidden state and residual to the next (2 x hidden x 2 B; 0: none)
    double weight_bytes_total = 0;    // the whole model as stored in the format
    std::int64_t active_params = 0;
    Dtype math_dtype = Dtype::Bf16;
    Dtype kv_dtype = Dtype::Bf16;
    std::vector<CostGroup> groups;
    ExpertLayout layout;
    std::vector<std::string> notes;  // e.g. no FLOP/s figure, calibration in use
};

CostModel make_cost_model(const CostModelInputs& in);
// The cost model of one DP rank under DP attention + EP: `in.tp` is then the
// attention TP of one DP rank (ScaleOut::attention_tp); not with sample_layers.
CostModel make_cost_model(const CostModelInputs& in, const ExpertLayoutInputs& layout);

// The cost model of one pipeline stage of `pp` (pipeline_stages): its
// layers, the LM head on the last stage, the send of its activations to the
// next stage on every other, and the per-step overhead on the first only
// (the step is scheduled and its inputs prepared once, before stage 0 runs;
// docs/simulate.md, "Pipeline parallelism"). Not with sample_layers.
CostModel make_stage_cost_model(const CostModelInputs& in, const PipelineStage& stage, std::int64_t pp);

// One step's terms, one GPU.
struct StepCost {
    double weight_bytes = 0;
    double expert_weight_bytes = 0;  // of weight_bytes, the routed experts the step's tokens touch
    double kv_read_bytes = 0;
    double kv_write_bytes = 0;
    double matmul_flops = 0;
    double attention_flops = 0;
    double memory_s = 0;
    double compute_s = 0;
    double overhead_s = 0;
    double allreduce_s = 0;
    double send_s = 0;  // a pipeline stage's activations to the next stage
    // DP attention + EP (CostModel::layout active; else all 0): the slowest rank's.
    double rank_sequences = 0;      // sequences of the busiest DP rank: ceil(batch / DP)
    double rank_expert_tokens = 0;  // token-expert pairs on the busiest EP rank, per MoE layer
    double experts_read = 0;        // distinct local experts those pairs touch, per MoE layer
    double all_to_all_bytes = 0;    // dispatch + combine over the link, all MoE layers
    double all_to_all_s = 0;
    double all_to_all_nic_bytes = 0;  // of all_to_all_bytes, those to GPUs in other nodes
    // Two-batch overlap: the step ran as two micro-batches (the terms above
    // are both halves summed), and the time the overlap hid.
    bool overlapped = false;
    double overlap_hidden_s = 0;
    double total_s = 0;
    bool compute_bound = false;

    double bytes() const { return weight_bytes + kv_read_bytes + kv_write_bytes; }
    double flops() const { return matmul_flops + attention_flops; }
};

// A decode step: `batch` sequences, each with `context` tokens already cached, each adding one token.
StepCost decode_step(const CostModel& m, std::int64_t batch, std::int64_t context);

// What one decoding sequence of `context` cached tokens costs a step, summed
// over the model's layer groups: the context-only part of decode_step,
// computed once per context by a sweep over batch sizes.
struct DecodeSeqTerms {
    double kv_read_bytes = 0;
    double kv_write_bytes = 0;
    double attention_flops = 0;
};
DecodeSeqTerms decode_seq_terms(const CostModel& m, std::int64_t context);
// decode_step from those terms: what decode_step(m, batch, context) gives.
StepCost decode_step(const CostModel& m, std::int64_t batch, const DecodeSeqTerms& seq);
// The batch-only part of decode_step: the weights (and the routed experts
// `batch` tokens touch) and their read time, the FLOP/s the GEMMs reach at
// that many tokens, the fixed overheads, the all-reduce and the stage send;
// computed once per batch size by a sweep over contexts.
struct DecodeBatchTerms {
    std::int64_t batch = 0;
    double weight_bytes = 0, expert_weight_bytes = 0;
    double weights_s = 0;         // the weight reads
    double flops_per_s = 0;       // at this token count's GEMM efficiency; 0: compute not modelled
    double expert_compute_s = 0;  // the routed experts' grouped-GEMM shortfall
    double overhead_s = 0, allreduce_s = 0, send_s = 0;
};
DecodeBatchTerms decode_batch_terms(const CostModel& m, std::int64_t batch);
// decode_step from both: what decode_step(m, batch, context) gives, bit for bit.
StepCost decode_step(const CostModel& m, const DecodeBatchTerms& b, const DecodeSeqTerms& seq);

// A prefill: `batch` prompts of `prompt` tokens each, from an empty cache, in one step.
StepCost prefill_step(const CostModel& m, std::int64_t batch, std::int64_t prompt);

// One sequence's share of a continuous-batching step: `new_tokens` tokens
// computed on top of `cached` tokens already in the KV cache. A decode is
// {context, 1}; a prefill chunk is {tokens done so far, chunk}.
struct SeqWork {
    std::int64_t cached = 0;
    std::int64_t new_tokens = 0;
};

// A mixed step (vLLM V1 runs decodes and prefill chunks as one forward pass):
// the weights once for all the step's tokens, each sequence's cached KV read
// once (within its window), its new tokens' KV written, and attention over
// its cached prefix plus causal pairs among its new tokens. Priced for the
// plain TP layout (CostModel::layout is read by decode_step and prefill_step only).
StepCost mixed_step(const CostModel& m, const std::vector<SeqWork>& seqs);

// The lockstep step of a replica's DP ranks under DP attention + EP
// (CostModel::layout active; `ranks` one batch per DP rank, some may be
// empty): each rank's attention, KV and dense layers over its own
// sequences, the routed experts and all-to-alls over the tokens of all of
// them (uniform routing, the busiest EP rank `imbalance` x the mean). Every
// MoE layer's dispatch waits for the slowest rank, so the step is that
// rank's, returned with its terms; an empty rank runs a dummy batch and
// never sets the pace (docs/simulate.md, "Data-parallel attention").
// For DP equal batches it is layout_step's price of their union.
StepCost dp_mixed_step(const CostModel& m, const std::vector<const std::vector<SeqWork>*>& ranks);

// mixed_step of a pure decode batch, {c_1, 1} .. {c_batch, 1}, from the batch
// size and the sum of the contexts alone, in O(layer groups) instead of
// O(batch): what the simulator prices a run of decode steps with. It is the
// same number bit for bit, because every per-sequence term mixed_step adds is
// then an integer and every partial sum stays below 2^53, where doubles add
// exactly in any order. nullopt where that cannot be promised, and the caller
// prices the step sequence by sequence: a sliding or chunked window (each
// sequence's min(context, window) is not a function of the sum), a
// coefficient that is not a whole number (e.g. a recurrent state's FLOPs
// split over TP ranks), or a sum past 2^53.
std::optional<StepCost> decode_batch_step(const CostModel& m, std::int64_t batch, std::int64_t context_sum);

// Expected routed experts a batch of `tokens` touches in one MoE layer under
// uniform routing: E x (1 - (1 - k/E)^tokens).
double experts_touched(std::int64_t experts, std::int64_t per_token, std::int64_t tokens);

}  // namespace kvplan
