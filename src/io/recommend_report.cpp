#include "io/recommend_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/json_value.hpp"
#include "io/table.hpp"
#include "io/units.hpp"

namespace kvplan {

namespace {

std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

Table candidates_table(const RecommendResult& r) {
    Table t({"#", "gpu", "tp", "batch", "TTFT (ms)", "TPOT (ms)", "tok/s per GPU", "$ per M tokens", "fits (requests)"}, 2);
    for (std::size_t i = 0; i < r.rec.candidates.size() && i < r.top; ++i) {
        const Candidate& c = r.rec.candidates[i];
        t.add({std::to_string(i + 1), c.gpu, std::to_string(c.tp), group_digits(c.batch), ms(c.ttft_s), ms(c.tpot_s),
               fmt::format("{:.0f}", c.tokens_per_s_per_gpu), c.usd_per_million_tokens ? fmt::format("{:.3f}", *c.usd_per_million_tokens) : "-",
               group_digits(c.max_requests)});
    }
    return t;
}

std::string targets(const RecommendResult& r) {
    return fmt::format("{}: context {} tokens, TTFT <= {} ms, TPOT <= {} ms", r.model, group_digits(r.inputs.context), ms(r.inputs.ttft_s),
                       ms(r.inputs.tpot_s));
}

std::string nothing(const RecommendResult& r) {
    const Recommendation& x = r.rec;
    std::string out = "Nothing meets both targets. ";
    if (x.binding == "memory") return out + "No GPU x TP up to the limit holds one request of this context in memory.\n";
    const std::string ttft = x.best_ttft ? fmt::format("the best TTFT is {} ms ({} x{})", ms(x.best_ttft->ttft_s), x.best_ttft->gpu, x.best_ttft->tp) : "";
    const std::string tpot = x.best_tpot ? fmt::format("the best TPOT is {} ms at batch 1 ({} x{})", ms(x.best_tpot->tpot_s), x.best_tpot->gpu, x.best_tpot->tp) : "";
    if (x.binding == "ttft") out += "The TTFT target binds: " + ttft + ".";
    else if (x.binding == "tpot") out += "The TPOT target binds: " + tpot + ".";
    else if (x.binding == "both") out += "Both targets bind: " + ttft + "; " + tpot + ".";
    else out += "Each target is met by some configuration but none meets both: " + ttft + "; " + tpot + ".";
    return out + "\n";
}

}  // namespace

std::string vllm_flags(const Candidate& c) {
    return fmt::format("--tensor-parallel-size {} --max-num-seqs {} --max-model-len {} --gpu-memory-utilization {:.2f} --kv-cache-dtype {}",
                       c.tp, c.batch, c.max_model_len, c.vllm_mem_fraction, c.kv_dtype == Dtype::Fp8 ? "fp8" : "auto");
}

std::string sglang_flags(const Candidate& c) {
    return fmt::format("--tp {} --max-running-requests {} --context-length {} --mem-fraction-static {:.2f} --kv-cache-dtype {}",
                       c.tp, c.batch, c.max_model_len, c.sglang_mem_fraction, c.kv_dtype == Dtype::Fp8 ? "fp8_e4m3" : "auto");
}

std::string render_recommend_table(const RecommendResult& r) {
    std::string out = targets(r) + fmt::format("\n{} GPU x TP configurations tried, {} hold a request of this context.\n\n", r.rec.configurations, r.rec.fitting);
    if (r.rec.candidates.empty()) return out + nothing(r);
    out += candidates_table(r).render_text() + "\nFlags for the best:\n";
    const Candidate& best = r.rec.candidates.front();
    out += "  vllm serve MODEL " + vllm_flags(best) + "\n";
    out += "  python -m sglang.launch_server --model-path MODEL " + sglang_flags(best) + "\n";
    out += "TTFT is one prompt's prefill on an idle replica (no queueing); TPOT is a decode step at the batch and the full context.\n";
    for (const std::string& n : r.rec.notes) out += "note: " + n + "\n";
    return out;
}

std::string render_recommend_markdown(const RecommendResult& r) {
    std::string out = "### " + targets(r) + "\n\n";
    if (r.rec.candidates.empty()) return out + nothing(r);
    out += candidates_table(r).render_markdown() + "\n`vllm serve MODEL " + vllm_flags(r.rec.candidates.front()) + "`\n";
    return out;
}

std::string render_recommend_json(const RecommendResult& r) {
    nlohmann::ordered_json j;
    j["model"] = r.model;
    j["context_tokens"] = r.inputs.context;
    j["ttft_target_s"] = r.inputs.ttft_s;
    j["tpot_target_s"] = r.inputs.tpot_s;
    j["configurations"] = r.rec.configurations;
    j["fitting_configurations"] = r.rec.fitting;
    j["candidates"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.rec.candidates.size() && i < r.top; ++i) {
        const Candidate& c = r.rec.candidates[i];
        nlohmann::ordered_json x;
        x["gpu"] = c.gpu;
        x["tp"] = c.tp;
        x["batch"] = c.batch;
        x["ttft_s"] = c.ttft_s;
        x["tpot_s"] = c.tpot_s;
        x["tokens_per_s_per_gpu"] = c.tokens_per_s_per_gpu;
        x["usd_per_million_tokens"] = or_null(c.usd_per_million_tokens);
        x["vllm_flags"] = vllm_flags(c);
        x["sglang_flags"] = sglang_flags(c);
        x["max_requests"] = c.max_requests;
        j["candidates"].push_back(x);
    }
    j["binding"] = r.rec.binding.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.rec.binding);
    j["notes"] = r.rec.notes;
    return j.dump(2) + "\n";
}

}  // namespace kvplan
