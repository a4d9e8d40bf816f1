#include "core/memory/capacity.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/digits.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

namespace {

// Whether the engine keeps only the window of a sliding/chunked layer. vLLM
// V1 does (its hybrid allocator, modelled in vllm_kv_cache.cpp) and so does
// the generic engine; kvplan models SGLang, TensorRT-LLM and vLLM V0 with
// full-length pools for every attention layer.
bool engine_saves_windows(Engine e) {
    return e == Engine::Generic;
}

// Everything one pipeline stage needs: its layers, its budget, and how its
// engine packs requests.
// What each caching layer of a stage holds per token and per request, with
// consecutive equal layers merged: the per-context sums walk this list, not
// every layer (most models repeat one layer kind).
struct LayerRun {
    std::int64_t window_tokens = 0;
    std::int64_t per_token = 0;  // KV bytes per token, one GPU
    std::int64_t state = 0;      // recurrent state bytes per request, one GPU
    std::int64_t count = 0;      // consecutive layers alike
};

struct Stage {
    PipelineStage where;
    std::vector<LayerSpec> layers;  // the stage's own (stage_model's, without copying the rest of the spec)
    std::vector<LayerRun> runs;
    MemoryBudget budget;
    std::int64_t bytes_per_token = 0;  // every caching layer at full length, one GPU
    std::optional<VllmLayout> layout;
    std::int64_t num_blocks = 0;
    std::optional<std::int64_t> tokens;
    std::optional<StageWeights> weights;  // with scale_out: by part
};

struct Dtypes {
    Dtype kv, conv, ssm;
};

std::vector<LayerRun> layer_runs(const std::vector<LayerSpec>& layers, std::int64_t tp, const Dtypes& d) {
    std::vector<LayerRun> runs;
    for (const LayerSpec& l : layers) {
        const LayerRun r{l.window_tokens, layer_bytes_per_token_per_gpu(l, tp, d.kv), layer_state_bytes_per_gpu(l, tp, d.conv, d.ssm), 1};
        if (!runs.empty() && runs.back().window_tokens == r.window_tokens && runs.back().per_token == r.per_token && runs.back().state == r.state)
            runs.back().count += 1;
        else runs.push_back(r);
    }
    return runs;
}

// Bytes one request of `context` tokens holds on one GPU of a stage, with
// each caching layer's tokens rounded up to whole blocks.
std::int64_t request_bytes(const std::vector<LayerRun>& runs, std::int64_t context, std::int64_t block, bool windows) {
    std::int64_t bytes = 0;
    for (const LayerRun& l : runs) {
        std::int64_t held = context;
        if (windows && l.window_tokens > 0) held = std::min(context, l.window_tokens);
        std::int64_t layer = l.state;
        if (l.per_token > 0)
            layer = checked_add(layer, checked_mul(checked_mul(ceil_div(held, block), block, "tokens"), l.per_token, "KV bytes per request"));
        bytes = checked_add(bytes, checked_mul(layer, l.count, "KV bytes per request"), "KV bytes per request");
    }
    return bytes;
}

// Bytes of a shared prefix that requests of `context` tokens can share: whole
// blocks of full-attention and MLA layers, windowed layers only while the
// context fits in the window.
std::int64_t shared_prefix_bytes(const std::vector<LayerRun>& runs, std::int64_t prefix, std::int64_t context, std::int64_t block, bool windows) {
    const std::int64_t tokens = std::min(prefix, context) / block * block;
    std::int64_t bytes = 0;
    for (const LayerRun& l : runs) {
        if (windows && l.window_tokens > 0 && context > l.window_tokens) continue;
        bytes = checked_add(bytes, checked_mul(checked_mul(tokens, l.per_token, "prefix bytes"), l.count, "prefix bytes"));
    }
    return bytes;
}

std::vector<std::int64_t> default_contexts(std::int64_t max_model_len) {
    std::vector<std::int64_t> out;
    for (std::int64_t c : {4096, 32768, 131072})
        if (max_model_len <= 0 || c < max_model_len) out.push_back(c);
    if (max_model_len > 0) out.push_back(max_model_len);
    return out;
}

// The settings every pipeline stage shares, resolved from the flags and the
// engine's defaults.
struct Settings {
    Dtypes dt;
    WeightSizing weights;
    std::vector<std::int64_t> contexts;
    std::int64_t longest = 0;  // the context that sets the binding stage and `fits`
    double fraction = 0;       // the engine's memory fraction
    bool windows = false;      // whether sliding/chunked layers keep only their window
};

// GPUs, replicas and the engine's allocation; refuses what cannot be split.
void set_parallelism(CapacityPlan& p, const ModelSpec& spec, const CapacityInputs& in) {
    p.gpu = in.gpu;
    p.engine = in.engine;
    p.tp = in.tp;
    p.pp = in.pp;
    std::int64_t stage_gpus = in.tp;
    if (in.scale_out) {
        if (in.engine == Engine::VllmV0)
            usage_error(std::string("--dp / --ep model vLLM V1, SGLang and TensorRT-LLM (--engine vllm, sglang, trtllm or generic); ") +
                        engine_label(in.engine) + " is not modelled with data-parallel attention");
        ScaleOutInputs so = *in.scale_out;
        so.tp = in.tp;
        p.scale_out = plan_scale_out(spec, so);
        stage_gpus = p.scale_out->gpus;
        check_tp(spec, p.scale_out->attention_tp);
    } else {
        check_tp(spec, in.tp);
    }
    const std::int64_t per_replica = checked_mul(stage_gpus, in.pp, "GPUs per replica");
    p.gpus = in.gpus > 0 ? in.gpus : per_replica;
    if (p.gpus % per_replica != 0)
        usage_error("--gpus " + std::to_string(p.gpus) + " is not a multiple of " +
                    (in.scale_out && in.scale_out->rules == ScaleOutRules::Vllm ? "--tp x --dp x --pp = " : "--tp x --pp = ") +
                    std::to_string(per_replica));
    p.replicas = p.gpus / per_replica;
    if (in.kv_pool_bytes && *in.kv_pool_bytes > in.gpu.memory_bytes)
        usage_error("--kv-pool (" + group_digits(*in.kv_pool_bytes) + " B) exceeds the device's memory (" + group_digits(in.gpu.memory_bytes) +
                    " B); a KV pool is part of one GPU's memory");
    if (in.allocation == Allocation::Contiguous && in.engine != Engine::Generic)
        usage_error(std::string("--allocation contiguous models a naive engine that reserves --max-tokens per request; ") + engine_label(in.engine) +
                    " pages its KV cache (use --engine generic)");
}

// Dtypes, weights, lengths and scheduler limits, each from its flag or the
// engine's default; refuses values no engine accepts.
Settings resolve_settings(CapacityPlan& p, const ModelSpec& spec, const CapacityInputs& in) {
    Settings s;
    const Dtype served = serving_dtype(spec.checkpoint_dtype);
    s.dt = Dtypes{in.kv_dtype.value_or(auto_kv_dtype(spec)), in.state_dtype.value_or(served),
                  in.ssm_state_dtype.value_or(in.state_dtype.value_or(served))};
    p.kv_dtype = s.dt.kv;
    s.weights = in.weights_format ? size_weights_in(spec, *in.weights_format) : size_weights(spec, in.weights_dtype);
    // A format named by a dtype (fp8, int4) is what the header prints, though
    // the tensors it leaves alone (embeddings, norms) keep 16 bits.
    p.weights_dtype = in.weights_format ? parse_dtype(in.weights_format->name).value_or(s.weights.dtype) : s.weights.dtype;
    p.weights_quantization = s.weights.quantization;
    p.model_weights_bytes = s.weights.bytes;

    p.max_model_len = in.max_model_len.value_or(spec.max_position_tokens);
    s.contexts = in.contexts.empty() ? default_contexts(p.max_model_len) : in.contexts;
    s.longest = *std::max_element(s.contexts.begin(), s.contexts.end());
    const std::int64_t shortest = *std::min_element(s.contexts.begin(), s.contexts.end());
    if (p.max_model_len <= 0) p.max_model_len = s.longest;
    for (std::int64_t c : s.contexts)
        if (c < 1) usage_error("--context must be at least 1 token, found " + std::to_string(c));
    p.block_size = in.allocation == Allocation::Contiguous ? 1 : in.block_size.value_or(default_block_size(in.engine));
    if (p.block_size < 1) usage_error("--block-size must be at least 1");
    p.max_batched_tokens = in.max_batched_tokens.value_or(default_max_batched_tokens(in.engine, in.gpu, p.max_model_len));
    p.max_num_seqs = in.max_num_seqs.value_or(default_max_num_seqs(in.engine, in.gpu));
    p.max_tokens = in.max_tokens.value_or(p.max_model_len);
    p.allocation = in.allocation;
    p.prefix_tokens = in.prefix_tokens;
    if (in.prefix_tokens < 0) usage_error("--prefix-tokens must not be negative");
    if (in.prefix_tokens > shortest)
        usage_error("--prefix-tokens " + std::to_string(in.prefix_tokens) + " exceeds the shortest --context (" + std::to_string(shortest) +
                    "): a shared prefix is part of every request");

    const bool has_state = std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) { return l.kind == LayerKind::State; });
    if (in.engine == Engine::VllmV0 && has_state)
        usage_error("--engine vllm-v0: kvplan models V0 for attention-only models; use --engine vllm for Mamba/linear-attention hybrids");

    s.fraction = in.mem_util.value_or(default_mem_fraction(in.engine, in.tp));
    if (!(s.fraction > 0 && s.fraction <= 1)) usage_error("--mem-util must be in (0, 1], found " + std::to_string(s.fraction));
    s.windows = engine_saves_windows(in.engine);
    return s;
}

// The TP that splits attention and its KV heads: --tp, or with DP attention
// the scale-out's attention TP (SGLang: tp / dp).
std::int64_t attention_tp(const CapacityPlan& p, const CapacityInputs& in) {
    return p.scale_out ? p.scale_out->attention_tp : in.tp;
}

// The runtime overhead: given by --overhead, or estimated term by term.
std::vector<OverheadTerm> overhead_terms(const ModelSpec& spec, const CapacityInputs& in, const CapacityPlan& p) {
    if (!in.overhead_bytes) {
        OverheadInputs o{in.engine,
                         attention_tp(p, in),
                         p.max_batched_tokens,
                         p.max_num_seqs,
                         in.vllm_sampler,
                         hopper_gpu(in.gpu),
                         p.scale_out ? p.scale_out->gpus : 0};
        if (in.vllm_release && in.engine == Engine::Vllm) {
            const VllmReleaseRules rules = vllm_release_rules(*in.vllm_release);
            o.sampler = rules.sampler;
            o.vllm_release = true;
            o.graph_profile = rules.graph_profile;
        }
        o.enforce_eager = in.enforce_eager;
        o.weights_given = in.weights_bytes.has_value();
        return estimate_overhead(spec, o);
    }
    OverheadTerm t;
    t.name = "runtime overhead (given by --overhead)";
    t.bytes = t.low_bytes = t.high_bytes = *in.overhead_bytes;
    t.basis = "--overhead";
    return {t};
}

// What vLLM's --cpu-offload-gb moves to host memory on one GPU
// (vllm/model_executor/models/utils.py maybe_offload_to_cpu, applied by
// make_layers to each decoder layer in order): parameter by parameter, each
// moved whole while the bytes moved so far are below the budget, so the last
// one overshoots it. vLLM fuses q/k/v into qkv_proj and gate/up into
// gate_up_proj, so those move as one. Checked by the RTX 3090 0.17.1 logs at
// 12 GiB: Llama-3.1-8B keeps 2.91 GiB, Qwen2.5-7B 2.17 GiB.
std::int64_t vllm_cpu_offload_bytes(const ModelSpec& spec, const WeightSizing& w, std::int64_t budget, std::int64_t tp) {
    const auto layers = static_cast<std::int64_t>(spec.layers.size());
    if (layers == 0) return 0;
    auto fused = [](const std::string& name) -> std::string {
        for (const char* part : {"q_proj", "k_proj", "v_proj"})
            if (name.find(part) != std::string::npos) return "qkv";
        for (const char* part : {"gate_proj", "up_proj"})
            if (name.find(part) != std::string::npos) return "gate_up";
        return name;
    };
    // One layer's tensors in order, fused as vLLM holds them, in bytes on one rank.
    std::vector<std::pair<std::string, std::int64_t>> tensors;
    for (const ParamTensor& t : spec.params) {
        if (t.copies % layers != 0 || t.part == ParamPart::Embedding || t.part == ParamPart::Head) continue;
        const std::int64_t one =
            quantized_bytes(t, spec.quantization).value_or(bytes_for(checked_mul(t.rows, t.cols, "offload"), t.fixed_dtype.value_or(w.dtype)));
        std::int64_t bytes = checked_mul(one, t.copies / layers, "offload");
        if (t.max_tp_split != 1) bytes = ceil_div(bytes, std::min(tp, t.max_tp_split > 0 ? t.max_tp_split : tp));
        const std::string key = fused(t.name);
        if (!tensors.empty() && tensors.back().first == key) tensors.back().second += bytes;
        else tensors.emplace_back(key, bytes);
    }
    std::int64_t moved = 0;
    for (std::int64_t l = 0; l < layers && moved < budget; ++l)
        for (const auto& t : tensors) {
            if (moved >= budget) break;
            moved = checked_add(moved, t.second, "offloaded bytes");
        }
    return moved;
}

// One pipeline stage: its budget, then the pages its engine cuts the pool into.
Stage size_stage(const ModelSpec& spec, const CapacityInputs& in, const CapacityPlan& p, const Settings& s, const PipelineStage& where,
                 const std::vector<OverheadTerm>& overhead) {
    const auto first = spec.layers.begin() + where.first_layer;
    Stage st{where, std::vector<LayerSpec>(first, first + where.layers), {}, {}, 0, std::nullopt, 0, std::nullopt, std::nullopt};
    BudgetInputs b;
    b.engine = in.engine;
    b.total_bytes = in.gpu.engine_total_bytes();
    b.mem_fraction = s.fraction;
    if (p.scale_out) {
        st.weights = stage_weights_scaled(s.weights, spec, where, in.pp, *p.scale_out);
        b.weights_bytes = in.weights_bytes.value_or(st.weights->total_bytes);
    } else {
        b.weights_bytes = in.weights_bytes.value_or(
            stage_weight_bytes(s.weights, spec, where, in.pp, in.tp, in.engine == Engine::Trtllm && trtllm_whole_embedding(spec)));
    }
    // --cpu-offload-gb: vLLM moves whole decoder-layer tensors to host memory
    // until the budget is spent; a given --weights is what the GPU holds.
    if (in.cpu_offload_bytes > 0 && !in.weights_bytes)
        b.weights_bytes = std::max<std::int64_t>(0, b.weights_bytes - vllm_cpu_offload_bytes(spec, s.weights, in.cpu_offload_bytes, in.tp));
    for (const OverheadTerm& t : overhead)
        if (!t.last_stage_only || where.index == in.pp - 1) b.overhead.push_back(t);
    // Given --weights (what the engine logged it loaded) already holds it.
    if (!in.overhead_bytes && !in.weights_bytes)
        if (auto t = mla_decode_copy_term(spec, in.engine, where.first_layer, where.layers, attention_tp(p, in))) {
            // Listed with the terms in the pool, before those outside it.
            auto at = std::find_if(b.overhead.begin(), b.overhead.end(), [](const OverheadTerm& o) { return !o.in_pool; });
            b.overhead.insert(at, *t);
        }
    b.kv_pool_bytes = in.kv_pool_bytes;
    st.budget = make_budget(b);
    const std::int64_t kv_tp = attention_tp(p, in);  // the MLA latent is whole on every attention-TP rank
    st.runs = layer_runs(st.layers, kv_tp, s.dt);
    for (const LayerRun& l : st.runs)
        st.bytes_per_token = checked_add(st.bytes_per_token, checked_mul(l.per_token, l.count, "KV bytes per token"), "KV bytes per token");
    const std::int64_t pool = std::max<std::int64_t>(0, st.budget.kv_pool_bytes);
    if (in.engine == Engine::Vllm) {
        VllmLayoutInputs li{kv_tp, s.dt.kv, s.dt.conv, s.dt.ssm, p.block_size, p.max_model_len, p.max_batched_tokens};
        st.layout = vllm_layout(st.layers, li);
        st.num_blocks = vllm_num_blocks(*st.layout, pool);
        st.tokens = vllm_reported_tokens(*st.layout, st.num_blocks);
    } else if (st.bytes_per_token > 0) {
        st.num_blocks = pool / checked_mul(p.block_size, st.bytes_per_token, "block bytes");
        st.tokens = checked_mul(st.num_blocks, p.block_size, "KV cache tokens");
    }
    return st;
}

// How many requests of one context a stage holds, and what each costs.
struct StageFit {
    std::int64_t requests = 0;
    std::int64_t need = 0;  // bytes per request as the engine allocates them
    std::optional<std::int64_t> with_prefix;
    std::int64_t reserved = 0, used = 0;  // contiguous allocation only
};

StageFit fit_requests(const Stage& st, const CapacityInputs& in, const CapacityPlan& p, const Settings& s, std::int64_t context,
                      std::int64_t min_blocks) {
    StageFit f;
    const std::int64_t pool = std::max<std::int64_t>(0, st.budget.kv_pool_bytes);
    if (st.layout) {
        const std::int64_t blocks = vllm_blocks_per_request(*st.layout, context, p.max_batched_tokens);
        f.need = checked_mul(blocks, st.layout->block_bytes(), "KV bytes per request");
        f.requests = min_blocks / blocks;
        if (in.prefix_tokens > 0) {
            const std::int64_t shared = vllm_shared_prefix_blocks(*st.layout, in.prefix_tokens, context);
            f.with_prefix = shared < blocks && shared <= min_blocks ? (min_blocks - shared) / (blocks - shared) : f.requests;
        }
    } else if (in.allocation == Allocation::Contiguous) {
        f.reserved = request_bytes(st.runs, p.max_tokens, 1, true);
        f.used = request_bytes(st.runs, std::min(context, p.max_tokens), 1, true);
        f.need = f.reserved;
        f.requests = f.need > 0 ? pool / f.need : 0;
    } else {
        f.need = request_bytes(st.runs, context, p.block_size, s.windows);
        f.requests = f.need > 0 ? pool / f.need : 0;
        if (in.prefix_tokens > 0) {
            const std::int64_t shared = shared_prefix_bytes(st.runs, in.prefix_tokens, context, p.block_size, s.windows);
            f.with_prefix = shared < f.need && shared <= pool ? (pool - shared) / (f.need - shared) : f.requests;
        }
    }
    return f;
}

// True when stage a's KV pool is smaller than b's: in blocks under vLLM's
// layout (what its workers' minimum is taken over), then in bytes.
bool smaller_pool(const Stage& a, const Stage& b) {
    if (a.layout && b.layout && a.num_blocks != b.num_blocks) return a.num_blocks < b.num_blocks;
    return a.budget.kv_pool_bytes < b.budget.kv_pool_bytes;
}

// One row per context, each the minimum over stages. Returns the stage that
// holds the fewest requests of the longest context (the binding stage) and
// that count.
std::pair<std::size_t, std::int64_t> fill_rows(CapacityPlan& p, const ModelSpec& spec, const CapacityInputs& in, const Settings& s,
                                               const std::vector<Stage>& stages, std::int64_t min_blocks) {
    std::size_t binding = 0;
    std::int64_t binding_requests = -1;
    for (std::int64_t context : s.contexts) {
        ContextRow row;
        row.context_tokens = context;
        row.max_requests = -1;
        for (std::size_t i = 0; i < stages.size(); ++i) {
            const StageFit f = fit_requests(stages[i], in, p, s, context, min_blocks);
            // Ties go to the smaller pool: under vLLM every stage takes the
            // fewest blocks of any worker, so that stage's budget is the one.
            const bool tie_smaller = f.requests == binding_requests && smaller_pool(stages[i], stages[binding]);
            if (context == s.longest && tie_smaller) binding = i;
            if (row.max_requests >= 0 && f.requests >= row.max_requests) continue;
            row.max_requests = f.requests;
            row.kv_bytes_per_request = f.need;
            row.max_requests_with_prefix = f.with_prefix;
            row.reserved_bytes_per_request = f.reserved;
            row.used_bytes_per_request = f.used;
            if (context == s.longest && (binding_requests < 0 || f.requests < binding_requests)) {
                binding = i;
                binding_requests = f.requests;
            }
        }
        // Each attention DP rank is an engine core with its own pool.
        row.max_requests_replica = checked_mul(row.max_requests, p.scale_out ? p.scale_out->dp : 1, "requests");
        row.max_requests_total = checked_mul(row.max_requests_replica, p.replicas, "requests");
        row.kv_memory_share =
            static_cast<double>(row.max_requests) * static_cast<double>(row.kv_bytes_per_request) / static_cast<double>(in.gpu.memory_bytes);
        if (in.allocation == Allocation::Contiguous)
            row.unused_bytes = checked_mul(row.max_requests, row.reserved_bytes_per_request - row.used_bytes_per_request, "unused bytes");
        p.rows.push_back(row);
        if (context > spec.max_position_tokens && spec.max_position_tokens > 0)
            p.warnings.push_back("context " + group_digits(context) + " exceeds the model's max_position_embeddings (" +
                                 group_digits(spec.max_position_tokens) + "); vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1");
    }
    return {binding, binding_requests};
}

// The plan's pool, blocks and tokens are the binding stage's.
void take_binding_stage(CapacityPlan& p, const CapacityInputs& in, const Stage& b, std::size_t binding, std::int64_t binding_requests,
                        std::int64_t min_blocks) {
    p.binding_stage = static_cast<std::int64_t>(binding);
    p.budget = b.budget;
    p.kv_bytes_per_token_per_gpu = b.bytes_per_token;
    p.vllm = b.layout;
    if (in.allocation == Allocation::Paged && (b.layout || b.bytes_per_token > 0)) {
        p.num_blocks = b.layout ? min_blocks : b.num_blocks;
        p.kv_cache_tokens = b.layout ? vllm_reported_tokens(*b.layout, min_blocks) : b.tokens;
        if (p.scale_out && p.kv_cache_tokens) p.kv_cache_tokens_total = checked_mul(*p.kv_cache_tokens, p.scale_out->dp, "KV cache tokens");
    }
    p.stage_weights = b.weights;
    p.fits = b.budget.kv_pool_bytes > 0 && binding_requests > 0;
}

// Notes the reader needs to trust the numbers.
void add_notes(CapacityPlan& p, const ModelSpec& spec, const CapacityInputs& in, const Settings& s, const Stage& b) {
    if (b.layout)
        for (const std::string& n : b.layout->notes) p.notes.push_back(n);
    if (!s.windows && in.engine != Engine::Vllm &&
        std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) { return l.window_tokens > 0; }))
        p.notes.push_back(std::string(engine_label(in.engine)) +
                          " is modelled with full-length KV for sliding-window and chunked layers (no window savings)");
    if (in.pp > 1)
        p.notes.push_back("pipeline stage " + std::to_string(p.binding_stage) + " (layers " + std::to_string(b.where.first_layer) + "-" +
                          std::to_string(b.where.first_layer + b.where.layers - 1) + ") holds the fewest requests and sets the capacity");
    if ((in.engine == Engine::Vllm || in.engine == Engine::VllmV0) && !p.rows.empty() &&
        std::any_of(p.rows.begin(), p.rows.end(), [&](const ContextRow& r) { return r.max_requests > p.max_num_seqs; }))
        p.notes.push_back("memory holds more requests than vLLM schedules at once: max_num_seqs is " + std::to_string(p.max_num_seqs) +
                          " (raise it with --max-num-seqs)");
    if (in.prefix_tokens > 0 && in.allocation == Allocation::Contiguous)
        p.notes.push_back("a contiguous (naive) engine cannot share a prefix between requests; --prefix-tokens ignored");
    if (s.weights.from_files && spec.stored_weights)
        p.notes.push_back("weights as stored in " + spec.stored_weights->source + ": " + group_digits(s.weights.bytes) +
                          " B (the config's formula: " + group_digits(s.weights.formula_bytes) + " B)");
    if (p.scale_out && p.scale_out->dp > 1)
        p.notes.push_back("each of the " + std::to_string(p.scale_out->dp) +
                          " attention DP ranks is an engine core with its own KV pool and its own requests: 'per DP rank' is what each logs");
    // SGLang divides its chunked prefill over the DP ranks (server_args.py
    // _handle_data_parallelism): below the 2,048 tokens it gives a single
    // small GPU, each prefill step spends its weight read and all-to-all on
    // few tokens (docs/scale-out.md, "Prefill pools").
    if (in.engine == Engine::Sglang && p.scale_out && p.scale_out->dp > 1 && p.max_batched_tokens / p.scale_out->dp < 2048)
        p.notes.push_back("SGLang divides --chunked-prefill-size " + group_digits(p.max_batched_tokens) + " over the " +
                          std::to_string(p.scale_out->dp) + " DP ranks: " + group_digits(p.max_batched_tokens / p.scale_out->dp) +
                          " prompt tokens a rank a step; wide-EP launches pass a larger total (--max-num-batched-tokens)");
    if (in.vllm_release && in.engine == Engine::Vllm && !in.enforce_eager && !in.overhead_bytes &&
        vllm_release_rules(*in.vllm_release).graph_profile == VllmGraphProfile::EstimateSubtracted)
        p.warnings.push_back("vLLM " + vllm_release_text(*in.vllm_release) +
                             " subtracts its CUDA-graph estimate from the pool ('Estimated CUDA graph memory: N GiB total'), which kvplan does not "
                             "compute: add it with --overhead, or set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0");
    if (p.scale_out && p.scale_out->ep > 1)
        p.notes.push_back(
            "not counted: the all-to-all buffers of expert parallelism (DeepEP / pplx NVSHMEM buffers); pass --overhead to include them");
    if (in.kv_dtype == Dtype::Fp8 && std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) { return l.kind == LayerKind::Mla; }))
        p.notes.push_back("MLA with an fp8 cache: kvplan counts 1 B per latent element; vLLM's fp8_ds_mla layout stores 656 B per token per layer");
}

// Whether `requests` requests of `len` tokens fit every stage, each as its
// engine allocates them (vLLM: worst-case blocks within the clamped block
// count; otherwise whole blocks per layer within the stage's pool).
bool requests_fit(const std::vector<Stage>& stages, const CapacityPlan& p, const Settings& s, std::int64_t len, std::int64_t requests,
                  std::int64_t min_blocks) {
    for (const Stage& st : stages) {
        if (st.layout) {
            const std::int64_t blocks = vllm_blocks_per_request(*st.layout, len, p.max_batched_tokens);
            if (blocks > 0 && blocks > min_blocks / requests) return false;
        } else {
            const std::int64_t pool = std::max<std::int64_t>(0, st.budget.kv_pool_bytes);
            const std::int64_t need = request_bytes(st.runs, len, p.block_size, s.windows);
            if (need > 0 && need > pool / requests) return false;
            if (need == 0 && pool <= 0) return false;
        }
    }
    return true;
}

// vllm/v1/core/kv_cache_utils.py estimate_max_model_len: the largest length
// in [1, limit] that fits, by binary search (fitting shrinks as length grows).
std::int64_t longest_fitting_len(const std::vector<Stage>& stages, const CapacityPlan& p, const Settings& s, std::int64_t requests,
                                 std::int64_t min_blocks, std::int64_t limit) {
    std::int64_t lo = 1, hi = limit, best = 0;
    while (lo <= hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (requests_fit(stages, p, s, mid, requests, min_blocks)) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

void set_longest_lengths(CapacityPlan& p, const ModelSpec& spec, const CapacityInputs& in, const Settings& s, const std::vector<Stage>& stages,
                         std::int64_t min_blocks) {
    if (in.allocation != Allocation::Paged) return;
    p.length_limit = std::max(p.max_model_len, spec.max_position_tokens);
    p.longest_len_one_request = longest_fitting_len(stages, p, s, 1, min_blocks, p.length_limit);
    p.longest_len_max_num_seqs = longest_fitting_len(stages, p, s, std::max<std::int64_t>(1, p.max_num_seqs), min_blocks, p.length_limit);
}

// The figures the engine's start-up log prints (worded in src/io/engine_log.cpp).
std::optional<EngineLogFigures> engine_log_figures(const CapacityPlan& p, const Stage& b) {
    EngineLogFigures f;
    if (p.engine == Engine::Vllm && b.layout) {
        f.max_len_request_blocks = vllm_blocks_per_request(*b.layout, p.max_model_len, p.max_batched_tokens);
        f.max_len_request_bytes = checked_mul(f.max_len_request_blocks, b.layout->block_bytes(), "bytes");
        return f;
    }
    if (p.engine == Engine::VllmV0 && p.num_blocks) {
        const std::int64_t block_bytes = checked_mul(p.block_size, b.bytes_per_token, "block bytes");
        f.cpu_swap_blocks = (std::int64_t{4} << 30) / block_bytes;  // swap_space default 4 GiB
        return f;
    }
    if ((p.engine == Engine::Sglang || p.engine == Engine::Trtllm) && p.kv_cache_tokens) {
        f.kv_cache_bytes = checked_mul(*p.kv_cache_tokens, b.bytes_per_token, "bytes");
        f.mla = std::any_of(b.layers.begin(), b.layers.end(), [](const LayerSpec& l) { return l.kind == LayerKind::Mla; });
        return f;
    }
    return std::nullopt;
}

CapacityPlan plan_once(const ModelSpec& spec, const CapacityInputs& in, bool search_tp);

// When nothing fits: the smallest TP (same PP) that holds one request of the
// longest context.
std::optional<std::int64_t> smallest_fitting_tp(const ModelSpec& spec, const CapacityInputs& in) {
    for (std::int64_t tp = in.tp * 2; tp <= 64; tp *= 2) {
        CapacityInputs next = in;
        next.tp = tp;
        next.gpus = 0;
        try {
            if (plan_once(spec, next, false).fits) return tp;
        } catch (const Error&) {
            continue;  // this TP cannot split the model's heads
        }
    }
    return std::nullopt;
}

// The plan, as a recipe: settings, overhead, each stage's budget and pages,
// the rows, the binding stage, notes; when nothing fits and `search_tp`, the
// smallest TP that would.
CapacityPlan plan_once(const ModelSpec& spec, const CapacityInputs& in, bool search_tp) {
    CapacityPlan p;
    set_parallelism(p, spec, in);
    const Settings s = resolve_settings(p, spec, in);
    const std::vector<OverheadTerm> overhead = overhead_terms(spec, in, p);

    // Engines take the minimum over ranks (vLLM: "clamp every rank to the minimum num_blocks").
    std::vector<Stage> stages;
    for (const PipelineStage& where : pipeline_stages(static_cast<std::int64_t>(spec.layers.size()), in.pp))
        stages.push_back(size_stage(spec, in, p, s, where, overhead));
    std::int64_t min_blocks = stages[0].num_blocks;
    for (const Stage& st : stages) min_blocks = std::min(min_blocks, st.num_blocks);

    const auto [binding, binding_requests] = fill_rows(p, spec, in, s, stages, min_blocks);
    take_binding_stage(p, in, stages[binding], binding, binding_requests, min_blocks);
    add_notes(p, spec, in, s, stages[binding]);
    p.engine_log = engine_log_figures(p, stages[binding]);
    if (in.engine == Engine::Vllm) p.vllm_release = in.vllm_release;
    if (in.cpu_offload_bytes > 0 && !in.weights_bytes) {
        p.cpu_offload_bytes = vllm_cpu_offload_bytes(spec, s.weights, in.cpu_offload_bytes, in.tp);
        p.notes.push_back("--cpu-offload-gb: vLLM keeps " + group_digits(p.cpu_offload_bytes) +
                          " B of weights per GPU in host memory (whole tensors, layer by layer, until the budget is spent)");
    }
    // The TP search's trial plans are discarded but for `fits`: spare them the two searches.
    if (search_tp && in.longest_lengths) set_longest_lengths(p, spec, in, s, stages, min_blocks);

    if (!p.fits && search_tp && in.tp_search && !in.weights_bytes && !in.kv_pool_bytes && !in.scale_out) {
        p.tp_searched = true;
        p.smallest_tp = smallest_fitting_tp(spec, in);
    }
    return p;
}

}  // namespace

CapacityPlan plan_capacity(const ModelSpec& spec, const CapacityInputs& in) {
    return plan_once(spec, in, true);
}

}  // namespace kvplan
