#include "cli/spec_options.hpp"

#include "cli/model_options.hpp"
#include "core/error.hpp"
#include "core/model/config_parts.hpp"
#include "core/speed/speculative.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace {

// --acceptance: one rate for all K positions, or exactly K of them, each a number in [0, 1].
std::vector<double> parse_acceptance(const std::string& text, std::int64_t k) {
    std::vector<double> rates;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        std::size_t used = 0;
        double v = -1;
        try {
            v = std::stod(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (item.empty() || used != item.size() || !(v >= 0.0 && v <= 1.0))
            usage_error("--acceptance: expected a rate in [0,1] or a comma list of " + std::to_string(k) + " of them, got '" + item + "'");
        rates.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (rates.size() == 1) return std::vector<double>(static_cast<std::size_t>(k), rates[0]);
    if (static_cast<std::int64_t>(rates.size()) != k)
        usage_error("--acceptance: expected one rate or " + std::to_string(k) + " (one per --spec-tokens position), got " +
                    std::to_string(rates.size()));
    return rates;
}

SpecMethod parse_spec_method(const std::string& name) {
    if (name == "mtp") return SpecMethod::Mtp;
    if (name == "draft") return SpecMethod::Draft;
    return SpecMethod::Eagle;
}

// The MTP module exists only where the config declares it: DeepSeek-V3's
// num_nextn_predict_layers, which the parameter count notes and skips
// (core/model/param_count.cpp, count_params).
bool has_mtp_layers(const ModelSpec& model) {
    for (const std::string& n : model.notes)
        if (n.find("num_nextn_predict_layers") != std::string::npos) return true;
    return false;
}

}  // namespace

void add_spec_options(CLI::App& cmd, SpecFlags& f, const std::string& what) {
    cmd.add_option("--spec-method", f.method, "speculative decoding: mtp|eagle|draft, " + what)->check(CLI::IsMember({"mtp", "eagle", "draft"}));
    cmd.add_option("--spec-tokens", f.tokens, "draft tokens per step, K (vLLM's num_speculative_tokens), 1..16")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{16}));
    cmd.add_option("--acceptance", f.acceptance, "acceptance rate in [0,1] for every draft position, or K comma-separated conditional rates a1..aK");
    cmd.add_option("--draft-model", f.draft_model, "the draft model for --spec-method draft (a config.json, a model folder or a preset)");
}

std::optional<SpecInputs> resolve_spec(const SpecFlags& f, const ModelSpec& model, const CostModelInputs& target, ModelSpec& draft_model,
                                       const ExpertLayoutInputs* layout) {
    if (f.method.empty()) {
        if (f.tokens > 0 || !f.acceptance.empty() || !f.draft_model.empty())
            usage_error("--spec-tokens, --acceptance and --draft-model need --spec-method mtp|eagle|draft");
        return std::nullopt;
    }
    if (f.tokens <= 0) usage_error("--spec-method " + f.method + " needs --spec-tokens K (1..16)");
    if (f.acceptance.empty()) usage_error("--spec-method " + f.method + " needs --acceptance (a rate in [0,1], or K of them)");
    SpecInputs spec;
    spec.method = parse_spec_method(f.method);
    spec.k = f.tokens;
    spec.rates = parse_acceptance(f.acceptance, f.tokens);
    if (spec.method == SpecMethod::Draft) {
        if (layout) usage_error("--spec-method draft with --dp / --ep: a separate draft model is not priced under a layout; use mtp or eagle");
        if (f.draft_model.empty()) usage_error("--spec-method draft needs --draft-model M (a config.json, a model folder or a preset)");
        draft_model = load_model(f.draft_model, "--draft-model");  // an error names the flag
        draft_model.use_stored_weights = true;                     // as --weights-from auto does for --model
        spec.draft_label = model_label(draft_model);               // as the reports name it
    } else {
        if (!f.draft_model.empty()) usage_error("--draft-model is for --spec-method draft; " + f.method + " drafts with the target's own layers");
        if (spec.method == SpecMethod::Mtp && !has_mtp_layers(model))
            usage_error("--spec-method mtp: " + model.name + " has no multi-token-prediction layers (num_nextn_predict_layers); use eagle or draft");
    }
    spec.draft = make_proposer_model(spec.method, &draft_model, target, layout);
    return spec;
}

}  // namespace kvplan
