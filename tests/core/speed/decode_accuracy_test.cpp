// The step-cost model against every published measurement in
// shared/reference/decode_measurements.jsonl (copied verbatim to
// tests/fixtures/reference/): llama.cpp sweeps, TensorRT-LLM's performance
// tables, gpt-fast, MLC LLM, ExLlamaV2, NeMo and Gaudi. Each row is
// predicted twice, with the generic profile (what kvplan did before it
// knew engines) and with its engine's profile; and each engine's fitted
// values are refitted without the row's source document (leave one source
// out) to predict it out of sample. docs/accuracy.md quotes the tables.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "accuracy_rows.hpp"
#include "io/engine_db.hpp"
#include "profile_fit.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The profile a fit starts from: the engine's own (its all-reduce, its int4
// layout) with every fitted value at the generic profile's.
EngineProfile fit_start(const std::string& engine) {
    EngineProfile p = find_engine("--engine", engine);
    const EngineProfile& generic = find_engine("--engine", "generic");
    for (const std::string& name : fitted_values(engine)) profile_value(p, name) = profile_value(generic, name);
    return p;
}

std::vector<const AccuracyRow*> training_rows(const std::string& engine, const std::string& left_out) {
    std::vector<const AccuracyRow*> out;
    for (const AccuracyRow& r : accuracy_rows())
        if (r.predictable && r.engine == engine && r.source != left_out) out.push_back(&r);
    return out;
}

struct Errors {
    double generic = 0, profile = 0, loso = 0;
};

// Every predictable row's three errors, by id; fits cached per (engine, left-out source).
std::map<std::string, Errors> all_errors() {
    std::map<std::pair<std::string, std::string>, EngineProfile> fits;
    std::map<std::string, Errors> out;
    const EngineProfile& generic = find_engine("--engine", "generic");
    for (const AccuracyRow& r : accuracy_rows()) {
        if (!r.predictable) continue;
        Errors e;
        e.generic = predict_row(r, generic) / r.measured - 1;
        e.profile = predict_row(r, row_profile(r)) / r.measured - 1;
        e.loso = e.profile;
        if (!fitted_values(r.engine).empty()) {
            auto key = std::make_pair(r.engine, r.source);
            if (!fits.count(key)) fits[key] = fit_profile(r.engine, fit_start(r.engine), training_rows(r.engine, r.source)).profile;
            e.loso = predict_row(r, fits[key]) / r.measured - 1;
        }
        out[r.id] = e;
    }
    return out;
}

std::string summary_table(const char* heading, const std::map<std::string, std::vector<Errors>>& groups) {
    std::string t = std::string("| ") + heading +
                    " | rows | generic, in sample | profile, in sample | profile, leave one source out | max, leave one source out |\n"
                    "|---|---|---|---|---|---|\n";
    for (const auto& [name, list] : groups) {
        std::vector<double> g, p, l;
        for (const Errors& e : list) g.push_back(std::abs(e.generic)), p.push_back(std::abs(e.profile)), l.push_back(std::abs(e.loso));
        char line[256];
        std::snprintf(line, sizeof line, "| %s | %zu | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", name.c_str(), list.size(), median(g) * 100,
                      median(p) * 100, median(l) * 100, *std::max_element(l.begin(), l.end()) * 100);
        t += line;
    }
    return t;
}

// docs/accuracy.md quotes `current` between markers; keep it current
// (KVPLAN_UPDATE_DOCS=1 rewrites it: scripts/regen-readme.sh does).
void check_doc_block(const std::string& marker, const std::string& current) {
    const std::string doc_path = std::string(KVPLAN_SOURCE_DIR) + "/docs/accuracy.md";
    std::ifstream doc_in(doc_path);
    std::string doc((std::istreambuf_iterator<char>(doc_in)), std::istreambuf_iterator<char>());
    const std::string begin = "<!-- " + marker + ":begin -->\n", end = "<!-- " + marker + ":end -->";
    const auto b = doc.find(begin), e = doc.find(end);
    REQUIRE(b != std::string::npos);
    REQUIRE(e != std::string::npos);
    if (std::getenv("KVPLAN_UPDATE_DOCS")) {
        doc = doc.substr(0, b + begin.size()) + current + doc.substr(e);
        std::ofstream(doc_path) << doc;
    } else {
        INFO("docs/accuracy.md's " << marker << " is stale: run KVPLAN_UPDATE_DOCS=1 build/tests/kvplan_tests \"decode accuracy*\"");
        CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == current);
    }
}

}  // namespace

TEST_CASE("decode accuracy: every published measurement predicted with the generic and the engine profile and left out of its fit") {
    const auto& rows = accuracy_rows();
    REQUIRE(rows.size() == 214);
    const std::map<std::string, Errors> errors = all_errors();
    std::map<std::string, std::vector<Errors>> by_category, by_engine, by_parallelism;
    std::string table =
        "| id | category | engine | setup | measured | predicted | error, generic | error, profile | error, left out |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
    for (const AccuracyRow& r : rows) {
        char line[768];
        if (!r.predictable) {
            std::snprintf(line, sizeof line, "| %s | %s | %s | - | %.4g %s | - | - | - | not predicted: %s |\n", r.id.c_str(), r.category.c_str(),
                          r.engine.c_str(), r.measured, r.unit.c_str(), r.why.c_str());
        } else {
            const Errors& e = errors.at(r.id);
            by_category[r.category].push_back(e);
            by_engine[r.engine].push_back(e);
            by_parallelism[r.tp > 1 ? "tensor parallel" : r.gpus > 1 ? "layers split over GPUs" : "one GPU"].push_back(e);
            std::snprintf(line, sizeof line, "| %s | %s | %s | %s | %.4g %s | %.4g | %+.1f%% | %+.1f%% | %+.1f%%%s%s |\n", r.id.c_str(),
                          r.category.c_str(), r.engine.c_str(), r.setup.c_str(), r.measured, r.unit.c_str(), (1 + e.profile) * r.measured,
                          e.generic * 100, e.profile * 100, e.loso * 100, r.why.empty() ? "" : ": ", r.why.c_str());
        }
        table += line;
    }
    const std::string summary =
        summary_table("category", by_category) + "\n" + summary_table("engine", by_engine) + "\n" + summary_table("parallelism", by_parallelism);
    std::printf("%s\n%s", table.c_str(), summary.c_str());

    // The batch-1 decode median, in sample and out of it; each bound is the
    // figure reached, rounded up, so that a change that worsens it fails here.
    std::vector<double> in_sample, left_out;
    for (const Errors& e : by_category["batch1_decode"]) in_sample.push_back(std::abs(e.profile)), left_out.push_back(std::abs(e.loso));
    REQUIRE(in_sample.size() == 78);
    CHECK(median(in_sample) <= 0.15);
    CHECK(median(left_out) <= 0.15);
    check_doc_block("accuracy-table", table);
    check_doc_block("accuracy-summary", summary);
}

TEST_CASE("decode accuracy: every shipped engine profile holds the values its fit gives on all of its rows") {
    for (const EngineProfile& shipped : bundled_engines()) {
        const std::vector<std::string> names = fitted_values(shipped.id);
        if (names.empty()) continue;
        const auto rows = training_rows(shipped.id, "");
        const FitResult fit = fit_profile(shipped.id, fit_start(shipped.id), rows);
        std::set<std::string> documents;
        for (const AccuracyRow* r : rows) documents.insert(r->source);
        if (std::getenv("KVPLAN_UPDATE_DOCS")) {
            // Writes the fitted values and their provenance into models/engines/<id>.json.
            const std::string path = std::string(KVPLAN_SOURCE_DIR) + "/models/engines/" + shipped.id + ".json";
            std::ifstream in(path);
            nlohmann::ordered_json j = nlohmann::ordered_json::parse(in);
            for (const std::string& name : names) {
                const bool fitted = std::find(fit.fitted.begin(), fit.fitted.end(), name) != fit.fitted.end();
                const std::size_t dot = name.find('.');
                const double v = profile_value(fit.profile, name);
                if (dot == std::string::npos) j[name] = v;
                else j[name.substr(0, dot)][name.substr(dot + 1)] = v;
                int n = 0;
                for (const AccuracyRow* r : rows) n += depends_on(*r, name) ? 1 : 0;
                std::string docs;
                for (const std::string& d : documents) docs += (docs.empty() ? "" : "; ") + d;
                j["fitted_on"][name] = fitted ? "fitted to " + std::to_string(n) + " rows of decode_measurements.jsonl from " + docs
                                              : "generic's value: fewer than 2 rows depend on it";
            }
            std::ofstream(path) << j.dump(2) << "\n";
        }
        for (const std::string& name : names) {
            INFO(shipped.id << " " << name << ": run KVPLAN_UPDATE_DOCS=1 build/tests/kvplan_tests \"decode accuracy*\" to refit");
            CHECK(profile_value(shipped, name) == Approx(profile_value(fit.profile, name)).epsilon(1e-9).margin(1e-12));
        }
    }
}

namespace {

// The median |error| of `engine`'s rows, each predicted by a fit of `names`
// on the engine's rows from the other source documents.
double loso_median(const std::string& engine, const std::vector<std::string>& names) {
    std::map<std::string, EngineProfile> fits;
    std::vector<double> errors;
    for (const AccuracyRow& r : accuracy_rows()) {
        if (!r.predictable || r.engine != engine) continue;
        if (!fits.count(r.source)) fits[r.source] = fit_values(names, fit_start(engine), training_rows(engine, r.source)).profile;
        errors.push_back(std::abs(predict_row(r, fits[r.source]) / r.measured - 1));
    }
    return median(errors);
}

}  // namespace

TEST_CASE("decode accuracy: no shipped fitted value worsens the leave-one-source-out error of its engine", "[slow]") {
    // Where an engine's rows come from several documents, each fitted value
    // is dropped in turn (kept at the generic profile's) and the engine's
    // rows predicted out of sample again: a value whose fit makes that worse
    // is not shipped. Engines with one source document cannot be judged so
    // (leaving it out leaves nothing); docs/accuracy.md says which.
    std::string table = "| engine | value | left-out median, all values fitted | the value not fitted | shipped |\n|---|---|---|---|---|\n";
    for (const std::string engine : {"llamacpp", "trtllm", "exllamav2"}) {
        const std::vector<std::string> all = fitted_values(engine);
        const double with = loso_median(engine, all);
        for (const std::string& name : all) {
            std::vector<std::string> without;
            for (const std::string& n : all)
                if (n != name) without.push_back(n);
            const double dropped = loso_median(engine, without);
            char line[256];
            std::snprintf(line, sizeof line, "| %s | %s | %.2f%% | %.2f%% | %s |\n", engine.c_str(), name.c_str(), with * 100, dropped * 100,
                          dropped + 1e-4 < with ? "no" : "yes");
            table += line;
            INFO(engine << " " << name << " worsens the left-out error: drop it from fitted_values()");
            CHECK(with <= dropped + 1e-4);
        }
    }
    std::printf("%s", table.c_str());
    check_doc_block("accuracy-ablation", table);
}
