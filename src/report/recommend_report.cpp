#include "report/recommend_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/memory/engine.hpp"
#include "core/units.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

constexpr std::size_t kWidth = 100;  // the default text output fits this many columns

std::string ms(double s) {
    return fmt::format("{:.1f}", s * 1e3);
}

std::string layout(const Candidate& c) {
    if (!c.expert_parallel()) return c.dp > 1 ? fmt::format("TP {} x DP {}", c.tp, c.dp) : fmt::format("TP {}", c.tp);
    std::string one = fmt::format("DP {} + EP {}", c.attention_dp, c.attention_dp);
    if (c.nodes > 1) one += fmt::format(" over {} nodes", c.nodes);
    return c.dp > 1 ? fmt::format("{}, {} replicas", one, c.dp) : one;
}

// The table's tp cell: "1 ep8" for DP attention over 8 GPUs (TP 1 each) with EP 8.
std::string tp_cell(const Candidate& c) {
    return c.expert_parallel() ? fmt::format("{} ep{}", c.tp, c.attention_dp) : std::to_string(c.tp);
}

std::string usd(const Candidate& c) {
    return c.usd_per_million_tokens ? fmt::format("{:.3f}", *c.usd_per_million_tokens) : "-";
}

// The candidates shown (at most --top, best first), as rows.
std::vector<RecommendRow> candidate_rows(const RecommendResult& r) {
    std::vector<RecommendRow> out;
    for (std::size_t i = 0; i < r.rec.candidates.size() && i < r.top; ++i) out.push_back({&r, &r.rec.candidates[i], i + 1});
    return out;
}

Table candidates_table(const RecommendResult& r, bool wide) {
    return fields_table(recommend_fields(), candidate_rows(r), 2, wide ? Width::Wide : Width::Fit);
}

const char* target_key(Target t) {
    switch (t) {
        case Target::Memory: return "memory";
        case Target::Ttft: return "ttft";
        case Target::Tpot: return "tpot";
    }
    return "?";
}

// "misses TPOT 50.0 ms (62.1 ms)", "misses TTFT 500.0 ms (612.0 ms) and TPOT ...", "does not fit".
std::string missed_words(const Candidate& c, const RecommendInputs& in) {
    if (c.missed.front() == Target::Memory) return fmt::format("does not fit one request of {} tokens", group_digits(in.context));
    std::string out = "misses";
    for (std::size_t i = 0; i < c.missed.size(); ++i) {
        out += i ? " and " : " ";
        out += c.missed[i] == Target::Ttft ? fmt::format("TTFT {} ms ({} ms)", ms(in.ttft_s), ms(c.ttft_s))
                                           : fmt::format("TPOT {} ms ({} ms at batch 1)", ms(in.tpot_s), ms(c.tpot_s));
    }
    return out;
}

std::string rejected_list(const RecommendResult& r) {
    const std::vector<Candidate>& all = r.rec.rejected;
    if (all.empty()) return "";
    const std::size_t shown = r.wide ? all.size() : std::min(all.size(), r.top);
    std::string out = shown == all.size() ? fmt::format("\nRejected, closest first ({}):\n", all.size())
                                          : fmt::format("\nRejected, closest first ({} of {}; --wide lists all):\n", shown, all.size());
    for (std::size_t i = 0; i < shown; ++i)
        out += wrap_text(all[i].gpu + " " + layout(all[i]) + ": " + missed_words(all[i], r.inputs), kWidth, "  ", "    ");
    return out;
}

std::string targets(const RecommendResult& r) {
    std::string gpus = r.inputs.num_gpus > 0 ? fmt::format(", on {} GPUs", r.inputs.num_gpus) : "";
    return fmt::format("{}: context {} tokens, TTFT <= {} ms, TPOT <= {} ms{}", printable(r.model), group_digits(r.inputs.context),
                       ms(r.inputs.ttft_s), ms(r.inputs.tpot_s), gpus);
}

std::string nothing(const RecommendResult& r) {
    const Recommendation& x = r.rec;
    std::string out = "Nothing meets both targets. ";
    if (x.binding == "memory") return out + "No GPU x TP up to the limit holds one request of this context in memory.";
    auto at = [](const Candidate& c) { return c.gpu + " " + layout(c); };
    const std::string ttft = x.best_ttft ? fmt::format("the best TTFT is {} ms ({})", ms(x.best_ttft->ttft_s), at(*x.best_ttft)) : "";
    const std::string tpot = x.best_tpot ? fmt::format("the best TPOT is {} ms at batch 1 ({})", ms(x.best_tpot->tpot_s), at(*x.best_tpot)) : "";
    if (x.binding == "ttft") return out + "The TTFT target binds: " + ttft + ".";
    if (x.binding == "tpot") return out + "The TPOT target binds: " + tpot + ".";
    if (x.binding == "both") return out + "Both targets bind: " + ttft + "; " + tpot + ".";
    return out + "Each target is met by some configuration but none meets both: " + ttft + "; " + tpot + ".";
}

std::string notes(const RecommendResult& r, const ServeOptions& s) {
    std::vector<std::string> all = s.notes;
    if (r.rec.larger_tp_meeting > 0)
        all.push_back(
            fmt::format("{} larger-TP configurations also meet both targets; each device lists its smallest TP, "
                        "and data-parallel replicas fill the GPUs (docs/roofline.md)",
                        r.rec.larger_tp_meeting));
    all.insert(all.end(), r.rec.notes.begin(), r.rec.notes.end());
    std::string out;
    for (const std::string& n : all) out += r.wide ? "note: " + printable(n) + "\n" : wrap_text(n, kWidth, "note: ", "      ");
    return out;
}

std::string best_commands(const RecommendResult& r, ServeOptions s) {
    const Candidate& best = r.rec.candidates.front();
    s.reasons = analytic_reasons(r, best);
    std::string out = fmt::format("\nCommands for the best ({}, {}, {} GPU{}):\n", best.gpu, layout(best), best.gpus(), best.gpus() > 1 ? "s" : "");
    out += reason_lines(s, r.wide);
    out += vllm_command_lines(best, s, r.wide);
    out += sglang_command_lines(best, s, r.wide);
    out += trtllm_command_lines(best, s, r.wide);
    const std::size_t width = r.wide ? std::string::npos : kWidth;
    if (best.spec_method == "draft")
        out += wrap_text(
            "trtllm-serve takes a separate draft model in its YAML's speculative_config (docs: TensorRT-LLM \"Speculative "
            "Decoding\"); the file above runs without it.",
            width, "  ", "  ");
    if (best.dp > 1)
        out += wrap_text(
            fmt::format("{}: start {} such servers, each on its own {} "
                        "(CUDA_VISIBLE_DEVICES) and --port.",
                        best.expert_parallel() ? "The replicas are separate servers in every engine" : "trtllm-serve has no data-parallel flag",
                        best.dp, best.replica_gpus() > 1 ? fmt::format("{} GPUs", best.replica_gpus()) : "GPU"),
            width, "  ", "  ");
    return out;
}

}  // namespace

std::vector<std::string> analytic_reasons(const RecommendResult& r, const Candidate& c) {
    const auto gpu = std::find_if(r.inputs.gpus.begin(), r.inputs.gpus.end(), [&](const Gpu& g) { return g.id == c.gpu; });
    if (gpu == r.inputs.gpus.end()) return {};
    std::vector<std::string> out;
    const std::string rank = c.expert_parallel() ? " per DP rank" : "";
    // vLLM V1's serving defaults on this device (core/memory/engine.hpp; vLLM's arg_utils.py).
    if (const std::int64_t seqs = default_max_num_seqs(Engine::Vllm, *gpu); c.rank_batch() != seqs) {
        const std::string why = c.batch >= c.max_requests
                                    ? fmt::format("all the requests of {} tokens the KV cache holds", group_digits(r.inputs.context))
                                    : fmt::format("the most sequences whose decode step at {} tokens meets TPOT <= {} ms",
                                                  group_digits(r.inputs.context), ms(r.inputs.tpot_s));
        out.push_back(fmt::format("--max-num-seqs {}{}: {} (vLLM's default on {}: {})", c.rank_batch(), rank, why, c.gpu, seqs));
    }
    const std::int64_t prompt = r.inputs.prompt > 0 ? r.inputs.prompt : r.inputs.context - r.inputs.output;
    if (const std::int64_t tokens = default_max_batched_tokens(Engine::Vllm, *gpu, c.max_model_len); c.max_num_batched_tokens != tokens)
        out.push_back(
            fmt::format("--max-num-batched-tokens {}: a whole prompt of {} tokens beside a decode token for each of the {} "
                        "sequences, so a prompt prefills in one step as the TTFT assumes (vLLM's default on {}: {})",
                        c.max_num_batched_tokens, group_digits(prompt), c.rank_batch(), c.gpu, tokens));
    return out;
}

ServeOptions serve_options(const RecommendResult& r) {
    ServeOptions s;
    if (!r.served.warning.empty()) s.notes.push_back(r.served.warning);
    if (!r.served.id.empty()) s.model = r.served.id;
    else s.notes.push_back("a hand-built model names no checkpoint: put its Hugging Face id or folder where the commands say CHECKPOINT");
    const ModelSpec& spec = *r.inputs.model;
    const WeightFormat& w = r.inputs.weights;
    // vLLM reads the method from config.json's quantization_config when the
    // flag is absent (docs.vllm.ai engine args, --quantization); naming it
    // there anyway would force the slower gptq/awq kernels over Marlin
    // (gptq_marlin.py override_quantization_method), so it is printed only
    // where the engine cannot tell by itself.
    if (w.as_checkpoint) {
        if (r.served.quantization_beside_config) s.quantization = quant_method_name(spec.quantization.method);
        return s;
    }
    const std::optional<Dtype> d = parse_dtype(w.name);
    // fp8:w8a8 is what vLLM's and SGLang's online fp8 quantization serves where the device has fp8 GEMMs.
    const bool fp8 = d == Dtype::Fp8 || w.name == "fp8:w8a8", cast = d == Dtype::Fp32 || d == Dtype::Fp16 || d == Dtype::Bf16;
    if (spec.quantization.method == QuantMethod::None && fp8) {
        // vLLM and SGLang quantize 16-bit weights to FP8 on load (vLLM's "online dynamic quantization").
        s.quantization = "fp8";
        s.notes.push_back("--weights-dtype " + w.name +
                          ": vLLM and SGLang quantize the weights on load (--quantization fp8); "
                          "trtllm-serve needs a checkpoint quantized beforehand (TensorRT Model Optimizer)");
    } else if (spec.quantization.method == QuantMethod::None && cast) {
        s.dtype = d == Dtype::Fp32 ? "float32" : d == Dtype::Fp16 ? "float16" : "bfloat16";
    } else {
        s.notes.push_back("--weights-dtype " + w.name +
                          " is a what-if: the engines do not convert this checkpoint to it on load; "
                          "serve a checkpoint stored that way");
    }
    return s;
}

std::string render_recommend_table(const RecommendResult& r) {
    const ServeOptions s = serve_options(r);
    std::string out = targets(r) + fmt::format("\n{} GPU x layout configurations tried, {} hold a request of this context.\n\n", r.rec.configurations,
                                               r.rec.fitting);
    if (r.rec.candidates.empty()) return out + wrap_text(nothing(r), kWidth) + rejected_list(r) + notes(r, s);
    out += candidates_table(r, r.wide).render_text();
    const auto shown_end = r.rec.candidates.begin() + static_cast<std::ptrdiff_t>(std::min(r.top, r.rec.candidates.size()));
    if (std::any_of(r.rec.candidates.begin(), shown_end, [](const Candidate& c) { return c.expert_parallel(); }))
        out += wrap_text(
            "1 epN: data-parallel attention on N GPUs (TP 1 each) with the routed experts over EP N, vLLM's "
            "--data-parallel-size N --enable-expert-parallel; batch and fits count all N ranks (docs/scale-out.md).",
            r.wide ? std::string::npos : kWidth, "", "");
    out += best_commands(r, s);
    out += rejected_list(r) + "\n";
    out += wrap_text(
        "TTFT is one prompt's prefill on an idle replica (no queueing); TPOT is a decode step at the batch and the full "
        "context. batch and fits are per replica; tok/s counts every replica.",
        r.wide ? std::string::npos : kWidth);
    return out + notes(r, s);
}

std::string render_recommend_markdown(const RecommendResult& r) {
    std::string out = "### " + targets(r) + "\n\n";
    if (r.rec.candidates.empty()) return out + nothing(r) + "\n";
    ServeOptions s = serve_options(r);
    const Candidate& best = r.rec.candidates.front();
    s.reasons = analytic_reasons(r, best);
    out += candidates_table(r, true).render_markdown() + "\n```sh\n" + reason_lines(s, true) + vllm_command_lines(best, s, true) +
           sglang_command_lines(best, s, true) + trtllm_command_lines(best, s, true) + "```\n";
    return out;
}

namespace {

nlohmann::ordered_json missed_json(const Candidate& c) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (Target t : c.missed) out.push_back(target_key(t));
    return out;
}

nlohmann::ordered_json candidate_json(const RecommendResult& r, const Candidate& c, const ServeOptions& s) {
    nlohmann::ordered_json x;
    x["gpu"] = c.gpu;
    x["tp"] = c.tp;
    x["dp"] = c.dp;
    x["attention_dp"] = c.attention_dp;
    x["ep"] = c.expert_parallel() ? c.tp * c.attention_dp : 1;
    x["gpus"] = c.gpus();
    x["nodes_per_replica"] = c.nodes;
    x["batch"] = c.batch;
    x["ttft_s"] = c.ttft_s;
    x["tpot_s"] = c.tpot_s;
    x["tokens_per_s_per_gpu"] = c.tokens_per_s_per_gpu;
    x["tokens_per_s"] = c.tokens_per_s;
    x["usd_per_million_tokens"] = or_null(c.usd_per_million_tokens);
    x["vllm_flags"] = vllm_flags(c, s);
    x["sglang_flags"] = sglang_flags(c, s);
    x["trtllm_flags"] = trtllm_flags(c);
    x["vllm_command"] = vllm_command(c, s);
    x["sglang_command"] = sglang_command(c, s);
    x["trtllm_command"] = trtllm_command(c, s);
    x["trtllm_yaml"] = trtllm_yaml(c);
    // Over several nodes, one command per node (node 0 the head); one node: the command above.
    x["vllm_node_commands"] = vllm_node_commands(c, s);
    x["sglang_node_commands"] = sglang_node_commands(c, s);
    x["setting_reasons"] = analytic_reasons(r, c);
    x["max_requests"] = c.max_requests;
    x["max_model_len"] = c.max_model_len;
    x["max_num_batched_tokens"] = c.max_num_batched_tokens;
    x["missed"] = missed_json(c);
    return x;
}

nlohmann::ordered_json rejected_json(const Candidate& c) {
    nlohmann::ordered_json x;
    x["gpu"] = c.gpu;
    x["tp"] = c.tp;
    x["dp"] = c.dp;
    x["attention_dp"] = c.attention_dp;
    x["nodes_per_replica"] = c.nodes;
    x["ttft_s"] = c.ttft_s;
    x["tpot_s"] = c.tpot_s;  // at batch 1, the best this configuration reaches
    x["max_requests"] = c.max_requests;
    x["missed"] = missed_json(c);
    return x;
}

}  // namespace

std::string render_recommend_json(const RecommendResult& r) {
    const ServeOptions s = serve_options(r);
    nlohmann::ordered_json j;
    j["model"] = r.model;
    j["served_model"] = s.model;
    j["context_tokens"] = r.inputs.context;
    j["ttft_target_s"] = r.inputs.ttft_s;
    j["tpot_target_s"] = r.inputs.tpot_s;
    j["num_gpus"] = r.inputs.num_gpus > 0 ? nlohmann::ordered_json(r.inputs.num_gpus) : nlohmann::ordered_json(nullptr);
    j["configurations"] = r.rec.configurations;
    j["fitting_configurations"] = r.rec.fitting;
    j["larger_tp_meeting"] = r.rec.larger_tp_meeting;
    j["candidates"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.rec.candidates.size() && i < r.top; ++i) j["candidates"].push_back(candidate_json(r, r.rec.candidates[i], s));
    j["rejected"] = nlohmann::ordered_json::array();
    for (const Candidate& c : r.rec.rejected) j["rejected"].push_back(rejected_json(c));
    j["binding"] = r.rec.binding.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.rec.binding);
    std::vector<std::string> all = s.notes;
    all.insert(all.end(), r.rec.notes.begin(), r.rec.notes.end());
    j["notes"] = all;
    return json_text(j);
}

std::string render_recommend_csv(const RecommendResult& r) {
    // One row per configuration, candidates (best first, at most --top) then
    // every rejected one (rank 0); `missed` is empty for candidates.
    std::vector<RecommendRow> rows = candidate_rows(r);
    for (const Candidate& c : r.rec.rejected) rows.push_back({&r, &c, 0});
    return fields_csv_table(recommend_fields(), rows).render_csv();
}

const Fields<RecommendRow>& recommend_fields() {
    using J = nlohmann::ordered_json;
    using R = RecommendRow;
    // Figures that a rejected configuration (rank 0) does not have: its batch and token budget.
    auto chosen = [](const R& x, std::int64_t v) { return x.rank > 0 ? J(v) : J(nullptr); };
    static const Fields<R> fields = {
        {.header = "#", .cell = [](const R& x) { return std::to_string(x.rank); }},
        {.key = "model", .json = [](const R& x) { return J(x.result->model); }},
        {.key = "gpu", .json = [](const R& x) { return J(x.candidate->gpu); }, .header = "gpu", .cell = [](const R& x) { return x.candidate->gpu; }},
        {.key = "tp",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->tp); },
         .header = "tp",
         .cell = [](const R& x) { return tp_cell(*x.candidate); }},
        {.key = "dp",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->dp); },
         .header = "dp",
         .cell = [](const R& x) { return std::to_string(x.candidate->dp); }},
        {.key = "attention_dp", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->attention_dp); }},
        {.key = "gpus",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->gpus()); },
         .header = "GPUs",
         .cell = [](const R& x) { return std::to_string(x.candidate->gpus()); },
         .in_fit = false},
        {.key = "batch",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return chosen(x, x.candidate->batch); },
         .header = "batch",
         .cell = [](const R& x) { return group_digits(x.candidate->batch); }},
        {.key = "ttft_s",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->ttft_s); },
         .header = "TTFT (ms)",
         .cell = [](const R& x) { return ms(x.candidate->ttft_s); },
         .fit_header = "TTFT ms"},
        {.key = "tpot_s",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->tpot_s); },
         .header = "TPOT (ms)",
         .cell = [](const R& x) { return ms(x.candidate->tpot_s); },
         .fit_header = "TPOT ms"},
        {.key = "tokens_per_s_per_gpu",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->tokens_per_s_per_gpu); },
         .header = "tok/s per GPU",
         .cell = [](const R& x) { return fmt::format("{:.0f}", x.candidate->tokens_per_s_per_gpu); },
         .fit_header = "tok/s/GPU"},
        {.key = "tokens_per_s",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->tokens_per_s); },
         .header = "tok/s total",
         .cell = [](const R& x) { return fmt::format("{:.0f}", x.candidate->tokens_per_s); },
         .fit_header = "tok/s"},
        {.key = "usd_per_million_tokens",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return or_null(x.candidate->usd_per_million_tokens); },
         .header = "$ per M tokens",
         .cell = [](const R& x) { return usd(*x.candidate); },
         .fit_header = "$/M tok"},
        {.key = "max_requests",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->max_requests); },
         .header = "fits (requests)",
         .cell = [](const R& x) { return group_digits(x.candidate->max_requests); },
         .fit_header = "fits"},
        {.key = "max_model_len", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->max_model_len); }},
        {.key = "max_num_batched_tokens",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return chosen(x, x.candidate->max_num_batched_tokens); },
         .header = "max batched tokens",
         .cell = [](const R& x) { return group_digits(x.candidate->max_num_batched_tokens); },
         .in_fit = false},
        {.key = "missed",
         .json =
             [](const R& x) {
                 std::string out;
                 for (Target m : x.candidate->missed) out += (out.empty() ? "" : " ") + std::string(target_key(m));
                 return J(out);
             }},
    };
    return fields;
}

}  // namespace kvplan
