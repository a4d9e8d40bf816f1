// `kvplan check`, `baseline` and `diff`, end to end through the real binary,
// the way a team's pipeline runs them: a config folder and a baseline next
// to it, edited the ways teams edit them (docs/ci.md).
//
// The scenario used throughout: our-model is Llama-3.1-8B's config.json
// (models/presets/llama-3.1-8b.json, copied from Hugging Face), served by vLLM
// on one H100 SXM at 4,096 tokens with an fp8 KV cache, decoding batches of 16.
// By hand: 32 layers x 8 KV heads x 128 head_dim x 2 (K and V) x 1 byte (fp8)
// = 65,536 bytes per token, and x 4,096 tokens = 268,435,456 bytes per request.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <utility>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "binary_run.hpp"
#include "xml_check.hpp"

namespace {

using namespace kvplan::test;

// A team's repository: configs/our-model/config.json and capacity.json beside it.
struct Repo {
    fs::path root;
    fs::path config;
    fs::path baseline;

    explicit Repo(const std::string& name) {
        root = scratch().path() / name;
        fs::create_directories(root / "configs" / "our-model");
        config = root / "configs" / "our-model" / "config.json";
        fs::copy_file(fs::path(KVPLAN_SOURCE_DIR) / "models" / "presets" / "llama-3.1-8b.json", config, fs::copy_options::overwrite_existing);
        baseline = root / "capacity.json";
        Run r = Run::kvplan({"baseline", "--model", config.string(), "--gpu", "h100-sxm", "--context", "4096", "--engine", "vllm", "--kv-dtype",
                             "fp8", "--batch", "16", "--output", baseline.string()});
        INFO(r.command << "\n" << r.err);
        REQUIRE(r.exit_code == 0);
    }

    nlohmann::ordered_json read() const { return nlohmann::ordered_json::parse(read_file(baseline)); }
    void write(const nlohmann::ordered_json& doc) const { std::ofstream(baseline) << doc.dump(2) << "\n"; }
    // Edits the first scenario's inputs or expected figures.
    template <typename F>
    void edit(F&& change) const {
        nlohmann::ordered_json doc = read();
        change(doc["scenarios"][0]);
        write(doc);
    }
    Run check(std::vector<std::string> extra = {}) const {
        std::vector<std::string> args = {"check", "--baseline", baseline.string()};
        args.insert(args.end(), extra.begin(), extra.end());
        return Run::kvplan(args);
    }
};

nlohmann::json figure(const Run& r, const std::string& key) {
    const nlohmann::json report = nlohmann::json::parse(r.out);
    return report["scenarios"][0]["figures"][key];
}

// The folder cannot be written to, even by root (chattr +i), for as long as this lives.
class Unwritable {
public:
    explicit Unwritable(fs::path dir) : dir_(std::move(dir)) {
        if (::geteuid() == 0) std::system(("chattr +i " + shell_quote(dir_.string()) + " 2>/dev/null").c_str());
        else fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::remove);
        probe_ok_ = ::access(dir_.c_str(), W_OK) != 0 || !try_create();
    }
    ~Unwritable() {
        if (::geteuid() == 0) std::system(("chattr -i " + shell_quote(dir_.string()) + " 2>/dev/null").c_str());
        else fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add);
    }
    bool effective() const { return probe_ok_; }

private:
    bool try_create() const {
        const fs::path probe = dir_ / ".probe";
        std::ofstream out(probe);
        const bool created = static_cast<bool>(out);
        out.close();
        std::error_code ec;
        fs::remove(probe, ec);
        return created;
    }
    fs::path dir_;
    bool probe_ok_ = false;
};

}  // namespace

TEST_CASE("baseline writes the scenario with figures derived by hand and a path relative to itself") {
    Repo repo("written");
    const nlohmann::ordered_json doc = repo.read();
    CHECK(doc["schema_version"] == 2);
    const auto& s = doc["scenarios"][0];
    CHECK(s["name"] == "our-model/h100-sxm/tp1/vllm/kv-fp8/4096");
    CHECK(s["model"] == "configs/our-model/config.json");
    CHECK(s["expected"]["kv_bytes_per_token"] == 65536);
    CHECK(s["expected"]["kv_bytes_per_sequence"] == 268435456);
    // The capacity figures are what `kvplan concurrency` prints for the same flags.
    Run c = Run::kvplan({"concurrency", "--model", repo.config.string(), "--gpu", "h100-sxm", "--context", "4096", "--engine", "vllm", "--kv-dtype",
                         "fp8", "--json"});
    REQUIRE(c.exit_code == 0);
    const nlohmann::json plan = nlohmann::json::parse(c.out);
    // (Compared as integers: clang finds ordered_json == json ambiguous.)
    CHECK(s["expected"]["kv_cache_tokens"].get<std::int64_t>() == plan["kv_cache_tokens"].get<std::int64_t>());
    CHECK(s["expected"]["max_requests"].get<std::int64_t>() == plan["contexts"][0]["max_requests"].get<std::int64_t>());
    CHECK(s["expected"]["decode_step_s"].get<double>() > 0);
}

TEST_CASE("an unchanged config passes, and the output is byte-identical run to run") {
    Repo repo("unchanged");
    Run a = repo.check();
    Run b = repo.check();
    INFO(a.out << a.err);
    CHECK(a.exit_code == 0);
    CHECK(a.err.empty());
    CHECK(a.out.find("check passed: 1 scenario, 6 figures: 0 regressions") != std::string::npos);
    CHECK(a.out == b.out);
    CHECK(repo.check({"--changes-only"}).out.find("Every figure is unchanged.") != std::string::npos);
    for (const char* format : {"json", "junit", "github", "markdown"})
        CHECK(repo.check({"--format", format}).out == repo.check({"--format", format}).out);
}

TEST_CASE("raising the config's kv heads fails on the bytes and the capacity it costs") {
    Repo repo("kv_heads");
    std::string text = read_file(repo.config);
    const std::string from = "\"num_key_value_heads\": 8";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), "\"num_key_value_heads\": 16");
    std::ofstream(repo.config) << text;
    Run r = repo.check({"--format", "json"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    // 16 heads: twice the bytes, 131,072 per token (+100%).
    CHECK(figure(r, "kv_bytes_per_token")["current"] == 131072);
    CHECK(figure(r, "kv_bytes_per_token")["verdict"] == "regression");
    CHECK(figure(r, "kv_bytes_per_token")["change_fraction"] == 1.0);
    CHECK(figure(r, "kv_bytes_per_sequence")["verdict"] == "regression");
    CHECK(figure(r, "max_requests")["verdict"] == "regression");
    CHECK(figure(r, "kv_cache_tokens")["verdict"] == "regression");
    // The text report's row: figure, baseline, current, change, verdict.
    const std::string text_out = repo.check().out;
    const std::size_t at = text_out.find("kv_bytes_per_token");
    REQUIRE(at != std::string::npos);
    const std::string row = text_out.substr(at, text_out.find('\n', at) - at);
    INFO(row);
    std::size_t pos = 0;
    for (const char* cell : {"65,536", "131,072", "+100.00%", "regression"}) {
        pos = row.find(cell, pos);
        CHECK(pos != std::string::npos);
    }
}

TEST_CASE("a longer context fails on bytes per request and requests, not on bytes per token") {
    Repo repo("longer_context");
    repo.edit([](auto& s) { s["context_tokens"] = 8192; });
    Run r = repo.check({"--format", "json"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(figure(r, "kv_bytes_per_token")["verdict"] == "unchanged");
    CHECK(figure(r, "kv_bytes_per_sequence")["current"] == 536870912);  // 8,192 x 65,536
    CHECK(figure(r, "kv_bytes_per_sequence")["verdict"] == "regression");
    CHECK(figure(r, "max_requests")["verdict"] == "regression");
    CHECK(figure(r, "kv_cache_tokens")["verdict"] == "unchanged");  // the pool does not depend on the request length
    CHECK(figure(r, "decode_step_s")["verdict"] == "regression");   // twice the KV read per step
}

TEST_CASE("a kv dtype change from fp8 to the model's bf16 doubles the bytes per token") {
    Repo repo("kv_dtype");
    repo.edit([](auto& s) { s["kv_dtype"] = "auto"; });
    Run r = repo.check({"--format", "json"});
    CHECK(r.exit_code == 1);
    CHECK(figure(r, "kv_bytes_per_token")["current"] == 131072);  // 2 bytes per element
    CHECK(figure(r, "kv_bytes_per_token")["verdict"] == "regression");
    CHECK(figure(r, "kv_cache_tokens")["verdict"] == "regression");
}

TEST_CASE("a GPU change to a 40 GB A100 fails on the pool and the requests, not on bytes") {
    Repo repo("gpu");
    repo.edit([](auto& s) { s["gpu"] = "a100-40gb"; });
    Run r = repo.check({"--format", "github"});
    INFO(r.out);
    CHECK(r.exit_code == 1);
    // --changes-only: the two capacity figures and the two decode figures, not the four unchanged rows.
    const std::string changes = repo.check({"--changes-only"}).out;
    CHECK(changes.find("kv_cache_tokens") != std::string::npos);
    CHECK(changes.find("kv_bytes_per_token") == std::string::npos);
    CHECK(r.out.find("::error file=") != std::string::npos);
    CHECK(r.out.find(",line=7,title=kvplan check%3A capacity regression::our-model/h100-sxm/tp1/vllm/kv-fp8/4096: kv_cache_tokens ") !=
          std::string::npos);
    // One annotation for the scenario, naming every figure that regressed.
    CHECK(r.out.find("; max_requests ") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);  // the annotation and the summary line
    CHECK(r.out.find("kv_bytes_per_token") == std::string::npos);
}

TEST_CASE("tolerance boundaries are exact") {
    Repo repo("tolerance");
    // Bytes per request 268,435,456 today against a baseline of 262,144,000:
    // (268,435,456 - 262,144,000) / 262,144,000 = 6,291,456 / 262,144,000 = 0.024 exactly.
    repo.edit([](auto& s) { s["expected"]["kv_bytes_per_sequence"] = 262144000; });
    CHECK(repo.check({"--tolerance", "2.4%"}).exit_code == 0);
    CHECK(repo.check({"--tolerance", "2.3999999%"}).exit_code == 1);
    Run within = repo.check({"--tolerance", "2.4%", "--format", "json"});
    CHECK(figure(within, "kv_bytes_per_sequence")["verdict"] == "within tolerance");

    // Bytes per token 65,536 today against 81,920: (65,536 - 81,920) / 81,920 = -0.2, an improvement of 20%.
    repo.edit([](auto& s) {
        s["expected"]["kv_bytes_per_sequence"] = 268435456;
        s["expected"]["kv_bytes_per_token"] = 81920;
    });
    Run improved = repo.check({"--tolerance", "19.9%", "--format", "json"});
    CHECK(improved.exit_code == 0);  // improvements pass ...
    CHECK(figure(improved, "kv_bytes_per_token")["verdict"] == "improvement");
    CHECK(repo.check({"--tolerance", "19.9%", "--strict"}).exit_code == 1);  // ... unless --strict
    CHECK(repo.check({"--tolerance", "20%", "--strict"}).exit_code == 0);

    // The file's own tolerance applies when no flag is given; the flag wins.
    repo.edit([](auto& s) {
        s["expected"]["kv_bytes_per_token"] = 65536;
        s["expected"]["kv_bytes_per_sequence"] = 262144000;
    });
    nlohmann::ordered_json doc = repo.read();
    doc["tolerance_percent"] = 2.4;
    repo.write(doc);
    CHECK(repo.check().exit_code == 0);
    CHECK(repo.check({"--tolerance", "0%"}).exit_code == 1);
}

TEST_CASE("a modelled decode figure is judged at 5% unless a tolerance names it") {
    Repo repo("modelled_tolerance");
    // A baseline decode step 4% below today's: (current - current / 1.04) / (current / 1.04) = 0.04.
    const double current = figure(repo.check({"--format", "json"}), "decode_step_s")["current"].get<double>();
    repo.edit([&](auto& s) { s["expected"]["decode_step_s"] = current / 1.04; });
    // No tolerance anywhere: counts at 0%, the decode step at 5%, so +4% passes.
    Run r = repo.check({"--format", "json"});
    CHECK(r.exit_code == 0);
    CHECK(figure(r, "decode_step_s")["verdict"] == "within tolerance");
    CHECK(nlohmann::json::parse(r.out)["tolerance_percent_by_figure"]["decode_step_s"] == 5.0);
    CHECK(nlohmann::json::parse(r.out)["tolerance_percent_by_figure"]["max_requests"] == 0.0);
    CHECK(repo.check({"--wide"})
              .out.rfind("kvplan check: " + repo.baseline.string() + ", tolerance 0% (decode_step_s 5%, decode_tokens_per_s 5%)", 0) == 0);
    // Named, it gets exactly its own: 3.9% fails, 4.1% passes.
    CHECK(repo.check({"--tolerance", "decode_step_s=3.9%"}).exit_code == 1);
    CHECK(repo.check({"--tolerance", "0%,decode_step_s=4.1%"}).exit_code == 0);
    // A default above 5% applies to the modelled figures too.
    CHECK(repo.check({"--tolerance", "10%"}).exit_code == 0);
    // The file's own, per figure; a flag item replaces only the figure it names.
    nlohmann::ordered_json doc = repo.read();
    doc["tolerance_percent_by_figure"] = {{"decode_step_s", 3.9}};
    repo.write(doc);
    CHECK(repo.check().exit_code == 1);
    CHECK(repo.check({"--tolerance", "decode_step_s=4.1%"}).exit_code == 0);
    // An unknown figure, in the flag or the file, is refused with the key named.
    Run bad = repo.check({"--tolerance", "0.5%,decode_stp=2%"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("decode_stp is not a figure") != std::string::npos);
    doc["tolerance_percent_by_figure"] = {{"decode_stp", 3.9}};
    repo.write(doc);
    bad = repo.check();
    CHECK(bad.exit_code == 65);
    CHECK(bad.err.find("tolerance_percent_by_figure.decode_stp: not a figure") != std::string::npos);
}

TEST_CASE("a tolerance without a unit or out of range is a usage error") {
    Repo repo("tolerance_flags");
    for (const char* bad : {"0.5", "-1%", "101%", "abc", "1e-3%", "0.0000000001%"}) {
        Run r = repo.check({"--tolerance", bad});
        INFO(bad << ": " << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.rfind("kvplan: error: --tolerance ", 0) == 0);
        CHECK(r.out.empty());
    }
}

TEST_CASE("check --update rewrites only the figures, keeping key order, formatting and other keys") {
    Repo repo("update");
    const std::string generated = read_file(repo.baseline);
    repo.edit([](auto& s) {
        s["expected"]["max_requests"] = 1;
        s["expected"]["decode_step_s"] = 0.5;
    });
    Run r = repo.check({"--update"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("baseline updated") != std::string::npos);
    CHECK(read_file(repo.baseline) == generated);
    CHECK(repo.check().exit_code == 0);

    // A hand-written baseline: its own key order and a description survive; missing figures are filled.
    const std::string hand =
        "{\n  \"schema_version\": 1,\n  \"description\": \"our capacity gate\",\n  \"scenarios\": [\n    {\n"
        "      \"context_tokens\": 4096,\n      \"gpu\": \"h100-sxm\",\n      \"model\": \"configs/our-model/config.json\",\n"
        "      \"name\": \"hand\",\n      \"kv_dtype\": \"fp8\",\n      \"expected\": {\n        \"max_requests\": 7\n      }\n    }\n  ]\n}\n";
    std::ofstream(repo.baseline) << hand;
    CHECK(repo.check().exit_code == 65);  // figures missing: check refuses
    REQUIRE(repo.check({"--update"}).exit_code == 0);
    const std::string updated = read_file(repo.baseline);
    // Upgraded to schema version 2: kvplan's version after the description, the models after the scenarios.
    CHECK(updated.find("\"schema_version\": 2,\n  \"description\": \"our capacity gate\",\n  \"kvplan_version\"") != std::string::npos);
    CHECK(updated.find("\"config_sha256\"") > updated.find("\"scenarios\""));
    CHECK(updated.find("\"context_tokens\": 4096,\n      \"gpu\": \"h100-sxm\",\n      \"model\"") != std::string::npos);
    CHECK(updated.find("\"expected\": {\n        \"max_requests\": ") != std::string::npos);  // kept first
    CHECK(updated.find("\"kv_bytes_per_token\": 65536") != std::string::npos);                // filled after it
    CHECK(repo.check().exit_code == 0);

    // A scenario that no longer has a batch: check refuses its decode figures, --update drops them.
    Repo dropped("update_batch");
    dropped.edit([](auto& s) { s.erase("batch"); });
    Run refused = dropped.check();
    CHECK(refused.exit_code == 65);
    CHECK(refused.err.find("expected.decode_step_s: a decode figure needs the scenario's \"batch\"") != std::string::npos);
    REQUIRE(dropped.check({"--update"}).exit_code == 0);
    const std::string without = read_file(dropped.baseline);
    CHECK(without.find("decode_step_s") == std::string::npos);
    CHECK(without.find("decode_tokens_per_s") == std::string::npos);
    CHECK(dropped.check().exit_code == 0);
}

TEST_CASE("check --update into an unwritable folder fails cleanly and leaves the old file") {
    Repo repo("unwritable");
    repo.edit([](auto& s) { s["expected"]["max_requests"] = 1; });
    const std::string before = read_file(repo.baseline);
    Unwritable lock(repo.root);
    if (!lock.effective()) {
        WARN("cannot make a folder unwritable here (no chattr as root); the write-failure path is not exercised");
        return;
    }
    Run r = repo.check({"--update"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("kvplan: error: cannot write " + repo.baseline.string(), 0) == 0);
    CHECK(read_file(repo.baseline) == before);
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(repo.root)) ++entries;
    CHECK(entries == 2);  // configs/ and capacity.json: no temporary left behind
}

TEST_CASE("a broken baseline is rejected with the field and what was expected") {
    Repo repo("broken_baseline");
    struct Case {
        const char* what;
        std::function<void(nlohmann::ordered_json&)> edit;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"missing gpu", [](auto& d) { d["scenarios"][0].erase("gpu"); }, "scenarios[0].gpu: required field is missing (a string)"},
        {"tp as a string", [](auto& d) { d["scenarios"][0]["tp"] = "2"; }, "scenarios[0].tp: expected an integer, found a string"},
        {"unknown schema", [](auto& d) { d["schema_version"] = 3; }, "schema_version: unknown version 3 (this kvplan reads versions 1 to 2"},
        {"no kvplan version", [](auto& d) { d.erase("kvplan_version"); }, "kvplan_version: required field is missing"},
        {"unknown source", [](auto& d) { d["models"]["configs/our-model/config.json"]["source"] = "cache"; },
         "models.\"configs/our-model/config.json\".source: expected preset, hf_cache, file, folder or gguf, found \"cache\""},
        {"short hash", [](auto& d) { d["models"]["configs/our-model/config.json"]["config_sha256"] = "abc"; },
         "config_sha256: expected 64 lowercase hex digits"},
        {"provenance in version 1", [](auto& d) { d["schema_version"] = 1; }, "kvplan_version: needs schema_version 2"},
        {"no schema", [](auto& d) { d.erase("schema_version"); }, "schema_version: required field is missing"},
        {"figure as text", [](auto& d) { d["scenarios"][0]["expected"]["max_requests"] = "12"; },
         "scenarios[0].expected.max_requests: expected an integer, found a string"},
        {"missing figure", [](auto& d) { d["scenarios"][0]["expected"].erase("kv_cache_tokens"); },
         "scenarios[0].expected.kv_cache_tokens: required figure is missing"},
        {"typo", [](auto& d) { d["scenarios"][0]["kv_dtpye"] = "fp8"; }, "scenarios[0].kv_dtpye: unknown key"},
        {"bad dtype", [](auto& d) { d["scenarios"][0]["kv_dtype"] = "fp7"; }, "scenarios[0].kv_dtype: expected auto, fp32"},
        {"duplicate", [](auto& d) { d["scenarios"].push_back(d["scenarios"][0]); }, "scenarios[1].name: duplicate name"},
    };
    const nlohmann::ordered_json good = repo.read();
    for (const Case& c : cases) {
        nlohmann::ordered_json doc = good;
        c.edit(doc);
        repo.write(doc);
        Run r = repo.check();
        INFO(c.what << ": " << r.err);
        CHECK(r.exit_code == 65);
        CHECK(r.out.empty());
        CHECK(r.err == "kvplan: error: " + repo.baseline.string() + ": " + r.err.substr(17 + repo.baseline.string().size(), std::string::npos));
        CHECK(r.err.find(c.message) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    std::ofstream(repo.baseline) << "{\"schema_version\": 1, \"scenarios\": [";
    Run r = repo.check();
    CHECK(r.exit_code == 65);
    CHECK(r.err.find("not valid JSON") != std::string::npos);
}

TEST_CASE("a scenario whose config is gone or broken is an error naming the scenario") {
    Repo repo("gone");
    fs::remove(repo.config);
    Run gone = repo.check();
    INFO(gone.out << gone.err);
    CHECK(gone.exit_code == 2);
    CHECK(gone.err.find(":7: scenario \"our-model/h100-sxm/tp1/vllm/kv-fp8/4096\": model ") != std::string::npos);
    CHECK(gone.out.find("error") != std::string::npos);  // the report still lists it

    std::ofstream(repo.config) << "{\"model_type\": \"llama\", \"num_hidden_layers\": 32}";
    Run broken = repo.check({"--format", "junit"});
    CHECK(broken.exit_code == 65);
    CHECK(broken.err.find("hidden_size: required field is missing") != std::string::npos);
    CHECK(xml_problem(broken.out).empty());
    CHECK(broken.out.find("<error type=\"not computed\"") != std::string::npos);
}

TEST_CASE("every report format is valid: JSON parses, JUnit is well-formed XML, GitHub commands, Markdown") {
    Repo repo("formats");
    repo.edit([](auto& s) {
        s["name"] = "quotes \" & <angles>, 100% of: it";  // characters each format must escape
        s["expected"]["max_requests"] = 100000;
    });
    Run json = repo.check({"--format", "json"});
    CHECK(json.exit_code == 1);
    const nlohmann::json report = nlohmann::json::parse(json.out);
    CHECK(report["summary"]["regressions"] == 1);
    CHECK(report["passed"] == false);
    CHECK(report["scenarios"][0]["name"] == "quotes \" & <angles>, 100% of: it");

    Run junit = repo.check({"--format", "junit"});
    INFO(junit.out);
    CHECK(xml_problem(junit.out).empty());
    CHECK(junit.out.find("tests=\"6\" failures=\"1\" errors=\"0\"") != std::string::npos);
    CHECK(junit.out.find("name=\"quotes &quot; &amp; &lt;angles&gt;, 100% of: it: max_requests\"") != std::string::npos);
    CHECK(!xml_problem("<a><b></a></b>").empty());  // the checker itself can fail
    CHECK(!xml_problem("<a x=1/>").empty());

    Run github = repo.check({"--format", "github"});
    CHECK(github.out.rfind("::error file=", 0) == 0);
    CHECK(github.out.find("::quotes \" & <angles>, 100%25 of: it: max_requests 100,000 -> ") != std::string::npos);

    Run md = repo.check({"--format", "markdown"});
    CHECK(md.out.rfind("## kvplan check: FAILED\n", 0) == 0);
    CHECK(md.out.find("| scenario | figure | baseline | current | change | verdict |") != std::string::npos);

    // --output writes the report and prints only the summary.
    const fs::path out = repo.root / "report.xml";
    Run to_file = repo.check({"--format", "junit", "--output", out.string()});
    CHECK(to_file.exit_code == 1);
    CHECK(read_file(out) == junit.out);
    CHECK(to_file.out.rfind("check FAILED (capacity regression): 1 scenario, 6 figures: 1 regression", 0) == 0);
}

TEST_CASE("diff shows two models, GPUs or KV dtypes side by side with the change in each figure") {
    // Qwen3-8B by hand: 36 layers x 8 KV heads x 128 x 2 x 2 bytes = 147,456 per token,
    // against Llama-3.1-8B's 32 layers: 131,072 (+12.5%).
    Run r = Run::kvplan({"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--context", "4096", "--json"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json d = nlohmann::json::parse(r.out);
    bool seen = false;
    for (const auto& row : d["rows"]) {
        if (row["figure"] != "kv_bytes_per_token") continue;
        seen = true;
        CHECK(row["a"] == 131072);
        CHECK(row["b"] == 147456);
        CHECK(row["change_fraction"] == 0.125);
        CHECK(row["for_serving"] == "worse");
    }
    CHECK(seen);
    Run table = Run::kvplan({"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--context", "4096"});
    CHECK(table.out.find("KV bytes per token") != std::string::npos);
    CHECK(table.out.find("+12.5%") != std::string::npos);
    // B - A is a --wide column: the fitted table gives the change in percent.
    Run wide = Run::kvplan({"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--context", "4096", "--wide"});
    CHECK(wide.out.find("+16,384") != std::string::npos);
    CHECK(Run::kvplan({"diff", "--model", "llama-3.1-8b"}).exit_code == 2);

    // One model, two KV dtypes: Qwen2.5-7B caches 28 layers x 4 KV heads x 128 x 2 = 28,672
    // elements per token, 57,344 bytes in bf16 and 28,672 in fp8 (-50%).
    Run kv = Run::kvplan({"diff", "--model", "qwen2.5-7b", "--kv-dtype", "auto", "--kv-dtype", "fp8", "--context", "32768", "--json"});
    REQUIRE(kv.exit_code == 0);
    // The parsed document is a named local: a range-for over a temporary's
    // member would dangle, and its checks might silently not run.
    const nlohmann::json kv_json = nlohmann::json::parse(kv.out);
    int kv_rows = 0;
    for (const auto& row : kv_json.at("rows"))
        if (row["figure"] == "kv_bytes_per_token") {
            ++kv_rows;
            CHECK(row["a"] == 57344);
            CHECK(row["b"] == 28672);
            CHECK(row["for_serving"] == "better");
        }
    CHECK(kv_rows == 1);
    // One model, two GPUs: the bytes are the same, the pool is not.
    Run gpus = Run::kvplan({"diff", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "h200", "--json"});
    REQUIRE(gpus.exit_code == 0);
    const nlohmann::json gpus_json = nlohmann::json::parse(gpus.out);
    int gpu_rows = 0;
    for (const auto& row : gpus_json.at("rows")) {
        if (row["figure"] == "kv_bytes_per_token") {
            ++gpu_rows;
            CHECK(row["for_serving"] == "same");
        }
        if (row["figure"] == "kv_cache_tokens") {
            ++gpu_rows;
            CHECK(row["for_serving"] == "better");
        }
    }
    CHECK(gpu_rows == 2);
}

TEST_CASE("baseline --tp auto records the smallest power of two whose GPUs hold the longest context") {
    const fs::path out = scratch().path() / "auto_tp.json";
    Run r = Run::kvplan({"baseline", "--model", "llama-3.1-70b", "--gpu", "a100-80gb", "--context", "32768", "--tp", "auto", "--engine", "vllm",
                         "--output", out.string()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(read_file(out));
    const std::int64_t tp = doc["scenarios"][0]["tp"];
    CHECK(tp > 1);  // 70B parameters in bf16 are 141 GB: more than one 80 GB A100
    auto fits = [](std::int64_t degree) {
        Run c = Run::kvplan({"concurrency", "--model", "llama-3.1-70b", "--gpu", "a100-80gb", "--context", "32768", "--engine", "vllm", "--tp",
                             std::to_string(degree), "--json"});
        return nlohmann::json::parse(c.out)["contexts"][0]["max_requests"].get<std::int64_t>() >= 1;
    };
    CHECK(fits(tp));
    CHECK(!fits(tp / 2));
    CHECK(doc["scenarios"][0]["expected"]["max_requests"].get<std::int64_t>() >= 1);
}

TEST_CASE("baseline and diff reject bad flags with one line and exit 2") {
    struct Case {
        std::vector<std::string> args;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {{"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-typo", "--context", "4096"}, "h100"},
        {{"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--tp", "three"}, "--tp three: expected a degree"},
        {{"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--kv-dtype", "fp7"}, "--kv-dtype fp7"},
        {{"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--tolerance", "1"}, "--tolerance 1: missing '%'"},
        {{"baseline", "--model", "gpt2", "--gpu", "h100-sxm", "--context", "4096"}, "no scenario left to write"},
        {{"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--output", "/nonexistent/dir/b.json"},
         "cannot write /nonexistent/dir/b.json"},
        {{"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--model", "phi-4"}, "diff compares two of one thing"},
        {{"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--gpu", "h200"}, "diff compares two of one thing"},
        {{"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--gpu", "h100-typo"}, "h100"},
        {{"check"}, "--baseline is required"},
        {{"check", "--baseline", "/nonexistent/capacity.json"}, "/nonexistent/capacity.json: cannot read the baseline"},
    };
    for (const Case& c : cases) {
        Run r = Run::kvplan(c.args);
        INFO(r.command << "\n" << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.rfind("kvplan: error: ", 0) == 0);
        CHECK(r.err.find(c.fragment) != std::string::npos);
    }
}

TEST_CASE("an engine setting change, max_num_seqs 1024 to 4096, fails on the pool by what the sampler takes") {
    const fs::path baseline = scratch().path() / "engine_setting.json";
    Run made = Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--engine", "vllm", "--max-num-seqs",
                            "1024", "--output", baseline.string()});
    REQUIRE(made.exit_code == 0);
    std::string text = read_file(baseline);
    const std::string from = "\"max_num_seqs\": 1024";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), "\"max_num_seqs\": 4096");
    std::ofstream(baseline) << text;
    Run r = Run::kvplan({"check", "--baseline", baseline.string(), "--format", "json"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    // vLLM profiles its sampler on min(max_num_seqs, 8,192 batched tokens) rows
    // at 38 bytes per row per vocabulary entry, with the hidden states it keeps
    // (docs/concurrency.md). Baseline pool: 76,516,989,861 - 16,060,522,496
    // weights - 375,809,638 non-torch - 905,969,664 forward - (83,886,080 +
    // 1,024 x 128,256 x 38 - 905,969,664 = 4,168,613,888) - 33,554,432 cuBLAS
    // = 54,972,519,743 B, 26,212 blocks of 2,097,152 B. At 4,096 rows the
    // sampler side is 134,217,728 + 19,962,789,888 - 905,969,664 =
    // 19,191,037,952, so the pool is 39,950,095,679 B, 19,049 blocks:
    // 7,163 blocks, 114,608 tokens fewer.
    const auto pool = figure(r, "kv_cache_tokens");
    CHECK(pool["baseline"].get<std::int64_t>() - pool["current"].get<std::int64_t>() == 114608);
    CHECK(pool["verdict"] == "regression");
    CHECK(figure(r, "kv_bytes_per_token")["verdict"] == "unchanged");
}

TEST_CASE("a scenario's calibration file drives its decode figures, relative to the baseline") {
    // A calibration as `kvplan measure --output` writes it (docs/measure.md), for an H100 that reached 3 TB/s.
    const fs::path dir = scratch().path() / "calibrated";
    fs::create_directories(dir / "measured");
    auto write_calibration = [&](const char* bandwidth) {
        std::ofstream(dir / "measured" / "h100.json")
            << "{\"schema_version\": 1, \"device\": \"H100\", \"measured_bandwidth_bytes_per_s\": " << bandwidth << ", \"step_overhead_s\": 0}\n";
    };
    write_calibration("3e12");
    const fs::path baseline = dir / "capacity.json";
    Run made = Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--batch", "1", "--calibration",
                            (dir / "measured" / "h100.json").string(), "--output", baseline.string()});
    INFO(made.err);
    REQUIRE(made.exit_code == 0);
    const auto doc = nlohmann::json::parse(read_file(baseline));
    CHECK(doc["scenarios"][0]["calibration"] == "measured/h100.json");
    // Batch 1 at 3 TB/s with no step overhead, memory-bound: the weights read
    // each step (15,009,849,344 bytes: all but the embedding table, docs/roofline.md),
    // 4,096 tokens of KV read (536,870,912) and one written (131,072) are
    // 15,546,851,328 bytes, 5.18228 ms; at half the bandwidth, twice that.
    const double step = doc["scenarios"][0]["expected"]["decode_step_s"];
    CHECK(step == Approx(15546851328.0 / 3e12).epsilon(1e-5));
    CHECK(Run::kvplan({"check", "--baseline", baseline.string()}).exit_code == 0);
    write_calibration("1.5e12");
    Run slower = Run::kvplan({"check", "--baseline", baseline.string(), "--format", "json"});
    CHECK(slower.exit_code == 1);
    CHECK(figure(slower, "decode_step_s")["verdict"] == "regression");
    CHECK(figure(slower, "decode_step_s")["change_fraction"].get<double>() == Approx(1.0).margin(0.01));
    CHECK(figure(slower, "max_requests")["verdict"] == "unchanged");
    fs::remove(dir / "measured" / "h100.json");
    Run gone = Run::kvplan({"check", "--baseline", baseline.string()});
    CHECK(gone.exit_code == 2);
    CHECK(gone.err.find("measured/h100.json") != std::string::npos);
}

TEST_CASE("every example in the --help of baseline, check and diff runs and succeeds, in order, in a repository") {
    // The examples name configs/our-model, configs/old and configs/new, and
    // write capacity.json, which the check examples then read.
    const fs::path dir = scratch().path() / "help_examples";
    for (const char* name : {"our-model", "old", "new"}) {
        fs::create_directories(dir / "configs" / name);
        fs::copy_file(fs::path(KVPLAN_SOURCE_DIR) / "models" / "presets" / "llama-3.1-8b.json", dir / "configs" / name / "config.json");
    }
    fs::current_path(dir);
    for (const char* cmd : {"baseline", "check", "diff"}) {
        std::istringstream help(Run::kvplan({cmd, "--help"}).out);
        int examples = 0;
        for (std::string line; std::getline(help, line);) {
            if (line.rfind("  kvplan ", 0) != 0) continue;
            for (std::string more; !line.empty() && line.back() == '\\' && std::getline(help, more);) line = line.substr(0, line.size() - 1) + more;
            line = line.substr(0, line.find('#'));
            std::istringstream words(line.substr(9));
            std::vector<std::string> args;
            std::string redirect;  // "> FILE": what the example's shell would write
            for (std::string w; words >> w;) {
                if (w == ">") words >> redirect;
                else args.push_back(w);
            }
            Run r = Run::kvplan(args);
            INFO(line << "\n" << r.err);
            CHECK(r.exit_code == 0);
            if (!redirect.empty()) std::ofstream(dir / redirect) << r.out;
            ++examples;
        }
        CHECK(examples > 0);
    }
    CHECK(fs::exists(dir / "kvplan-check.xml"));
}

// ---------------------------------------------------------------------------
// Hardening (docs/errors.md, "Writing files" and "Printing what users gave").

TEST_CASE("a scenario name with a newline cannot inject a CI workflow command in any format") {
    // GitHub Actions reads any stdout line that starts with "::" as a command.
    Repo repo("injection");
    repo.edit([](nlohmann::ordered_json& s) {
        s["name"] = "ours\n::warning::injected";
        s["expected"]["max_requests"] = 1;  // a change, so every format lists the scenario
    });
    for (const char* format : {"text", "markdown", "junit", "github", "json"}) {
        Run r = repo.check({"--format", format});
        INFO(format << "\n" << r.out);
        CHECK(r.exit_code == 0);  // more requests than the baseline: an improvement
        CHECK(r.out.find("ours") != std::string::npos);
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) CHECK(line.rfind("::warning::injected", 0) != 0);
    }
    Run text = repo.check();
    CHECK(text.out.find("ours\\n::warning::injected") != std::string::npos);  // shown escaped
}

TEST_CASE("check --update writes through a symlinked baseline and keeps the file's mode") {
    Repo repo("symlinked");
    const fs::path real = repo.root / "real-capacity.json";
    fs::rename(repo.baseline, real);
    fs::create_symlink("real-capacity.json", repo.baseline);
    fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write);            // 0600
    repo.edit([](nlohmann::ordered_json& s) { s["expected"]["max_requests"] = 1; });  // edits through the link
    Run r = repo.check({"--update"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(fs::is_symlink(repo.baseline));
    CHECK(fs::read_symlink(repo.baseline) == "real-capacity.json");
    CHECK(nlohmann::json::parse(read_file(real))["scenarios"][0]["expected"]["max_requests"] != 1);
    CHECK((fs::status(real).permissions() & fs::perms::mask) == (fs::perms::owner_read | fs::perms::owner_write));
    CHECK(repo.check().exit_code == 0);
}

TEST_CASE("the output writer refuses a read-only file, a FIFO and a device, and leaves each as it was") {
    Repo repo("refusals");
    const std::string before = read_file(repo.baseline);
    fs::permissions(repo.baseline, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);  // 0444
    Run ro = repo.check({"--update"});
    CHECK(ro.exit_code == 2);
    CHECK(ro.err.find("the file is read-only") != std::string::npos);
    CHECK(read_file(repo.baseline) == before);
    CHECK((fs::status(repo.baseline).permissions() & fs::perms::mask) == (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));

    const fs::path fifo = repo.root / "out.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    Run f = Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--output", fifo.string()});
    CHECK(f.exit_code == 2);
    CHECK(f.err.find("it is not a regular file") != std::string::npos);
    CHECK(fs::is_fifo(fifo));
    Run dev = Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--output", "/dev/null"});
    CHECK(dev.exit_code == 2);
    CHECK(fs::is_character_file("/dev/null"));
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(repo.root)) ++entries;
    CHECK(entries == 3);  // configs/, capacity.json, out.fifo: no temporary left behind
}

TEST_CASE("a writer killed with SIGKILL at any moment leaves the old baseline whole or the new one whole") {
    // `baseline --output` over a 15-preset x 3-GPU x 3-context sweep is killed
    // after 0 to 190 ms, twenty times; each time the file must parse as
    // either the old text or a complete new baseline, never a prefix.
    ScratchDir dir;
    const fs::path out = dir.path() / "capacity.json";
    const std::string old_text = "{\"schema_version\": 1, \"scenarios\": []}\n";
    std::ofstream(out) << old_text;
    const std::string command = shell_quote(KVPLAN_BINARY) +
                                " baseline --model llama-2-7b,llama-3.1-8b,llama-3.1-70b,mixtral-8x7b,qwen2.5-7b,qwen3-8b,gemma-2-9b,"
                                "gemma-3-1b,phi-4,falcon-7b,deepseek-v3,gpt-oss-120b,gpt2,gpt-j-6b,mamba-2.8b"
                                " --gpu h100-sxm,a100-80gb,l40s --context 1024,4096,32768 --tp auto --output " +
                                shell_quote(out.string()) + " >/dev/null 2>&1";
    for (int i = 0; i < 20; ++i) {
        const int delay_ms = i * 10;
        const std::string run =
            "(" + command + " & pid=$!; sleep " + std::to_string(delay_ms / 1000.0) + "; kill -9 $pid 2>/dev/null; wait $pid) 2>/dev/null";
        std::system(run.c_str());
        const std::string now = read_file(out);
        if (now == old_text) continue;
        INFO("after " << delay_ms << " ms: " << now.size() << " bytes");
        nlohmann::json doc;
        REQUIRE_NOTHROW(doc = nlohmann::json::parse(now));
        CHECK(doc["scenarios"].size() > 100);
        std::ofstream(out) << old_text;
    }
    // The temporaries a SIGKILL leaves are dotfiles beside the target, never the target.
    for (const auto& e : fs::directory_iterator(dir.path()))
        if (e.path() != out) CHECK(e.path().filename().string().rfind(".capacity.json.tmp.", 0) == 0);
}

namespace {

// A scratch Hugging Face cache for the binaries this test runs: HF_HUB_CACHE
// and HOME point into it (HOME's ~/.cache/huggingface/hub is a cache root too).
class HubCache {
public:
    explicit HubCache(const std::string& name) : root_(scratch().path() / name) {
        fs::create_directories(root_);
        for (const char* key : {"HF_HUB_CACHE", "HF_HOME", "HOME"}) {
            const char* v = std::getenv(key);
            saved_.emplace_back(key, v ? std::optional<std::string>(v) : std::nullopt);
        }
        ::setenv("HF_HUB_CACHE", root_.c_str(), 1);
        ::unsetenv("HF_HOME");
        ::setenv("HOME", root_.c_str(), 1);
    }
    ~HubCache() {
        for (const auto& [key, value] : saved_) {
            if (value) ::setenv(key.c_str(), value->c_str(), 1);
            else ::unsetenv(key.c_str());
        }
    }
    // models--org--name/snapshots/<revision>/config.json from a preset, refs/main naming it.
    void add(const std::string& folder, const std::string& revision, const std::string& preset_file) const {
        const fs::path dir = root_ / folder / "snapshots" / revision;
        fs::create_directories(dir);
        fs::copy_file(fs::path(KVPLAN_SOURCE_DIR) / "models" / "presets" / preset_file, dir / "config.json", fs::copy_options::overwrite_existing);
        fs::create_directories(root_ / folder / "refs");
        std::ofstream(root_ / folder / "refs" / "main") << revision;
    }

private:
    fs::path root_;
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// "0.1.0" and "af0aa704e9e3" from "kvplan 0.1.0 (commit af0aa704e9e3)".
std::pair<std::string, std::string> binary_version() {
    const std::string line = Run::kvplan({"--version"}).out;
    const std::string rest = line.substr(line.find(' ') + 1);
    const auto space = rest.find(' ');
    const std::string version = rest.substr(0, std::min(space, rest.find('\n')));
    const auto commit = rest.find("(commit ");
    return {version, commit == std::string::npos ? "" : rest.substr(commit + 8, rest.find(')') - commit - 8)};
}

}  // namespace

TEST_CASE("baseline records kvplan's version and how each model resolved, with its config's SHA-256") {
    Repo repo("provenance");
    const nlohmann::ordered_json doc = repo.read();
    const auto [version, commit] = binary_version();
    CHECK(doc["kvplan_version"].get<std::string>() == version);
    CHECK(doc["kvplan_commit"].get<std::string>() == commit);
    const auto& m = doc["models"]["configs/our-model/config.json"];
    CHECK(m["source"] == "file");
    // `sha256sum models/presets/llama-3.1-8b.json`, which the repo's config is a copy of.
    CHECK(m["config_sha256"] == "8883952a0146d6ef3c58345acba733eff932db7b7a21c42c60180ec49ba18483");
    CHECK_FALSE(m.contains("revision"));

    // A preset and a cached repo id, side by side.
    HubCache hub("provenance_hub");
    hub.add("models--acme--Tiny-8B", "0e9e39f249a16976918f6564b8830bc894c89659", "qwen3-8b.json");
    Run r = Run::kvplan({"baseline", "--model", "llama-3.1-8b,acme/tiny-8b", "--gpu", "h100-sxm", "--context", "4096"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json both = nlohmann::json::parse(r.out);
    CHECK(both["models"]["llama-3.1-8b"] == nlohmann::json{{"source", "preset"},
                                                           {"repo_id", "meta-llama/Llama-3.1-8B-Instruct"},
                                                           {"config_sha256", "8883952a0146d6ef3c58345acba733eff932db7b7a21c42c60180ec49ba18483"}});
    const auto& cached = both["models"]["acme/tiny-8b"];
    CHECK(cached["source"] == "hf_cache");
    CHECK(cached["repo_id"] == "acme/Tiny-8B");  // as the cache spells it
    CHECK(cached["revision"] == "0e9e39f249a16976918f6564b8830bc894c89659");
    CHECK(cached["ref"] == "main");
    CHECK(cached["config_sha256"].get<std::string>().size() == 64);
}

TEST_CASE("check notes a changed config hash and still passes when the figures hold") {
    Repo repo("config_hash");
    std::ofstream(repo.config, std::ios::app) << "\n";  // same figures, other bytes
    Run r = repo.check();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("note: configs/our-model/config.json: config changed (sha256 8883952a0146 -> ") != std::string::npos);
    CHECK(r.out.find("check passed") != std::string::npos);
    Run j = repo.check({"--format", "json"});
    const nlohmann::json report = nlohmann::json::parse(j.out);
    const auto& change = report["provenance"]["models"][0];
    CHECK(change["model"] == "configs/our-model/config.json");
    CHECK(change["config_changed"] == true);
    CHECK(change["resolution_changed"] == false);
    CHECK(change["baseline"]["config_sha256"] == "8883952a0146d6ef3c58345acba733eff932db7b7a21c42c60180ec49ba18483");
    CHECK(change["current"]["config_sha256"] != change["baseline"]["config_sha256"]);
    CHECK(report["provenance"]["kvplan_changed"] == false);
    Run g = repo.check({"--format", "github"});
    CHECK(g.out.find("::notice file=" + repo.baseline.string() +
                     ",title=kvplan check%3A provenance::configs/our-model/config.json: config changed") != std::string::npos);
    Run md = repo.check({"--format", "markdown"});
    CHECK(md.out.find("- note: configs/our-model/config.json: config changed") != std::string::npos);
    // --update records the new hash: no note after it.
    REQUIRE(repo.check({"--update"}).exit_code == 0);
    CHECK(repo.check().out.find("note:") == std::string::npos);
}

TEST_CASE("check notes a model resolved from the HF cache where the baseline used the bundled preset") {
    ScratchDir dir;
    const fs::path baseline = dir.path() / "capacity.json";
    {
        HubCache empty("resolution_empty_hub");
        REQUIRE(Run::kvplan({"baseline", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100-sxm", "--context", "4096", "--output",
                             baseline.string()})
                    .exit_code == 0);
    }
    CHECK(nlohmann::json::parse(read_file(baseline))["models"]["meta-llama/Llama-3.1-8B-Instruct"]["source"] == "preset");
    HubCache hub("resolution_hub");
    hub.add("models--meta-llama--Llama-3.1-8B-Instruct", "0e9e39f249a16976918f6564b8830bc894c89659", "llama-3.1-8b.json");
    Run r = Run::kvplan({"check", "--baseline", baseline.string()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);  // same config, same figures: a note, not a failure
    CHECK(
        r.out.find(
            "note: meta-llama/Llama-3.1-8B-Instruct: resolved from the HF cache (rev 0e9e39f249a1) where the\n  baseline used the bundled preset") !=
        std::string::npos);
    CHECK(r.out.find("config changed") == std::string::npos);  // the preset is that config byte for byte
    const nlohmann::json report = nlohmann::json::parse(Run::kvplan({"check", "--baseline", baseline.string(), "--format", "json"}).out);
    CHECK(report["provenance"]["models"][0]["resolution_changed"] == true);
    CHECK(report["provenance"]["models"][0]["current"]["source"] == "hf_cache");
    CHECK(report["provenance"]["models"][0]["current"]["revision"] == "0e9e39f249a16976918f6564b8830bc894c89659");
    CHECK(report["provenance"]["models"][0]["baseline"]["source"] == "preset");
    // Another snapshot later: the revision note.
    REQUIRE(Run::kvplan({"check", "--baseline", baseline.string(), "--update"}).exit_code == 0);
    hub.add("models--meta-llama--Llama-3.1-8B-Instruct", "1111111111112222222222223333333333334444", "llama-3.1-8b.json");
    Run later = Run::kvplan({"check", "--baseline", baseline.string(), "--wide"});
    CHECK(later.out.find("note: meta-llama/Llama-3.1-8B-Instruct: resolved to meta-llama/Llama-3.1-8B-Instruct@111111111111 where the baseline used "
                         "meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a1") != std::string::npos);
}

TEST_CASE("check notes once that kvplan changed since the baseline was written") {
    Repo repo("kvplan_version");
    nlohmann::ordered_json doc = repo.read();
    doc["kvplan_version"] = "0.0.9";
    doc["kvplan_commit"] = "0123456789ab";
    repo.write(doc);
    Run r = repo.check({"--wide"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    const auto [version, commit] = binary_version();
    const std::string now = version + (commit.empty() ? "" : " (commit " + commit + ")");
    CHECK(r.out.find("note: kvplan changed: baseline by 0.0.9 (commit 0123456789ab), this is " + now + "\n") != std::string::npos);
    CHECK(r.out.find("config changed") == std::string::npos);
    const nlohmann::json report = nlohmann::json::parse(repo.check({"--format", "json"}).out);
    CHECK(report["provenance"]["kvplan_changed"] == true);
    CHECK(report["provenance"]["kvplan_baseline"]["version"] == "0.0.9");
    CHECK(report["provenance"]["notes"].size() == 1);
    // A baseline that knows no commit (written outside a git checkout) compares the version alone.
    doc["kvplan_version"] = version;
    doc["kvplan_commit"] = "";
    repo.write(doc);
    CHECK(repo.check().out.find("note:") == std::string::npos);
}

TEST_CASE("a version 1 baseline without provenance still checks, with a note, and --update records it") {
    Repo repo("schema_one");
    nlohmann::ordered_json doc = repo.read();
    doc["schema_version"] = 1;
    for (const char* key : {"kvplan_version", "kvplan_commit", "models"}) doc.erase(key);
    repo.write(doc);
    Run r = repo.check();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("note: provenance not recorded: this baseline does not say which kvplan computed it") != std::string::npos);
    CHECK(nlohmann::json::parse(repo.check({"--format", "json"}).out)["provenance"]["recorded"] == false);
    REQUIRE(repo.check({"--update"}).exit_code == 0);
    const nlohmann::ordered_json updated = repo.read();
    CHECK(updated["schema_version"] == 2);
    CHECK(updated["models"]["configs/our-model/config.json"]["source"] == "file");
    CHECK(repo.check().out.find("note:") == std::string::npos);
}

TEST_CASE("a scenario with data-parallel attention and expert parallelism gates DeepSeek-V3's per-rank figures") {
    // vLLM, DeepSeek-V3 on H200, TP 1 x DP 8 with --enable-expert-parallel,
    // 4,096 tokens: tests/core/memory/scale_out_test.cpp derives 23,209
    // blocks = 371,344 tokens on each DP rank and 23,209 / 256 = 90
    // requests per rank, the figures each engine core logs.
    const fs::path dir = scratch().path() / "scale-out";
    fs::create_directories(dir);
    const fs::path file = dir / "capacity.json";
    // A baseline of the plain TP 1 scenario, then the layout keys added by hand.
    const Run made =
        Run::kvplan({"baseline", "--model", "deepseek-v3", "--gpu", "h200", "--context", "4096", "--engine", "vllm", "--output", file.string()});
    INFO(made.command << "\n" << made.err);
    REQUIRE(made.exit_code == 0);
    nlohmann::ordered_json top = nlohmann::ordered_json::parse(read_file(file));
    nlohmann::ordered_json scenario = top["scenarios"][0];
    scenario["dp"] = 8;
    scenario["enable_expert_parallel"] = true;
    auto write = [&](const nlohmann::ordered_json& s) {
        top["scenarios"][0] = s;
        std::ofstream(file) << top.dump(2) << "\n";
    };
    write(scenario);
    const Run update = Run::kvplan({"check", "--baseline", file.string(), "--update"});
    INFO(update.command << "\n" << update.err);
    REQUIRE(update.exit_code == 0);
    const nlohmann::json doc = nlohmann::json::parse(read_file(file));
    const nlohmann::json& s = doc["scenarios"][0];
    CHECK(s["dp"] == 8);
    CHECK(s["enable_expert_parallel"] == true);
    CHECK(s["expected"]["kv_cache_tokens"] == 371'344);
    CHECK(s["expected"]["max_requests"] == 90);
    CHECK(s["expected"]["kv_bytes_per_token"] == 61 * 576 * 2);
    CHECK(Run::kvplan({"check", "--baseline", file.string()}).exit_code == 0);

    // Keys the layout cannot take: each a data error naming the field.
    const std::vector<std::pair<nlohmann::ordered_json, std::string>> bad = {
        {{{"moe_a2a_backend", "deepep"}}, "scenarios[0].moe_a2a_backend: applies to engine sglang only"},
        {{{"moe_dense_tp_size", 1}}, "scenarios[0].moe_dense_tp_size: applies to engine sglang only"},
        {{{"dp", 0}}, "scenarios[0].dp"},
        {{{"enable_expert_parallel", "yes"}}, "scenarios[0].enable_expert_parallel"},
        {{{"dp", 16}, {"batch", 8}, {"nodes", 3}}, "scenarios[0].nodes: the layout's 16 GPUs do not split evenly over 3 nodes"},
        {{{"dp", 16}, {"batch", 8}, {"nodes", 4}, {"gpus_per_node", 8}}, "scenarios[0].nodes: 4 nodes x gpus_per_node 8 is not the layout's 16 GPUs"},
        {{{"nodes", 2}}, "scenarios[0].nodes: places the GPUs for the decode figures, which need the scenario's \"batch\""},
        {{{"dp", 16}, {"batch", 8}, {"nic", "ib-qdr"}}, "nic: expected one of ib-hdr, ib-ndr"},
    };
    for (const auto& [change, message] : bad) {
        nlohmann::ordered_json s2 = scenario;
        for (const auto& [k, v] : change.items()) s2[k] = v;
        write(s2);
        const Run r = Run::kvplan({"check", "--baseline", file.string(), "--update"});
        INFO(change.dump() << "\n" << r.err);
        CHECK(r.exit_code == 65);
        CHECK_THAT(r.err, Catch::Contains(message));
    }
}

namespace {

// A DeepSeek-V3 scenario on H200 (vLLM, 2,560 tokens, `batch` sequences)
// with `keys` set on it, its expected figures filled by `check --update`:
// the baseline file in scratch folder `name`, and the scenario as written.
std::pair<fs::path, nlohmann::json> scale_out_scenario(const std::string& name, std::int64_t batch, const nlohmann::ordered_json& keys) {
    const fs::path dir = scratch().path() / name;
    fs::create_directories(dir);
    const fs::path file = dir / "capacity.json";
    const Run made = Run::kvplan({"baseline", "--model", "deepseek-v3", "--gpu", "h200", "--context", "2560", "--engine", "vllm", "--batch",
                                  std::to_string(batch), "--output", file.string()});
    INFO(made.command << "\n" << made.err);
    REQUIRE(made.exit_code == 0);
    nlohmann::ordered_json top = nlohmann::ordered_json::parse(read_file(file));
    for (const auto& [k, v] : keys.items()) top["scenarios"][0][k] = v;
    std::ofstream(file) << top.dump(2) << "\n";
    const Run update = Run::kvplan({"check", "--baseline", file.string(), "--update"});
    INFO(update.command << "\n" << update.err);
    REQUIRE(update.exit_code == 0);
    return {file, nlohmann::json::parse(read_file(file))["scenarios"][0]};
}

}  // namespace

TEST_CASE("a DP + EP scenario with a batch gates the layout's decode step, the one roofline prices") {
    // DeepSeek-V3, vLLM rules, TP 1 x DP 8 with expert parallelism on H200,
    // 512 sequences of 2,560 tokens over the 8 ranks: the step `kvplan
    // roofline --dp 8 --enable-expert-parallel --batch 512` prints with the
    // generic profile a baseline's decode figures use, its all-to-all vLLM's
    // default all-gather + reduce-scatter (docs/collectives.md) over the 8 DP
    // ranks of 512 x 7,168 x 2 B = 7,340,032 B a MoE layer, at H200's NCCL
    // fits for 8 GPUs: (12.8 us + 7,340,032 B / 310 GB/s) + (12.2 us +
    // 7,340,032 B / 337 GB/s) = 36.48 + 33.98 = 70.46 us, x 58 = 4.087 ms.
    const auto [file, s] = scale_out_scenario("scale-out-decode", 512, {{"dp", 8}, {"enable_expert_parallel", true}});
    const Run roof = Run::kvplan({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "8", "--enable-expert-parallel", "--batch", "512",
                                  "--context", "2560", "--json"});
    REQUIRE(roof.exit_code == 0);
    const nlohmann::json row = nlohmann::json::parse(roof.out)["rows"][0];
    CHECK(row["all_to_all_s"].get<double>() == Approx(58 * (12.8e-6 + 7'340'032 / 310e9 + 12.2e-6 + 7'340'032 / 337e9)));
    CHECK(row["all_to_all_s"].get<double>() == Approx(4.087e-3).epsilon(1e-3));
    CHECK(s["expected"]["decode_step_s"].get<double>() == Approx(row["decode_step_s"].get<double>()).epsilon(1e-3));
    CHECK(s["expected"]["decode_tokens_per_s"].get<double>() == Approx(row["tokens_per_s_total"].get<double>()).epsilon(1e-3));
    CHECK(Run::kvplan({"check", "--baseline", file.string()}).exit_code == 0);
}

TEST_CASE("a DP + EP scenario with two_batch_overlap gates the overlapped step roofline --two-batch-overlap prices") {
    // The scenario above with two_batch_overlap: 512 sequences are 64 a rank,
    // past vLLM's 32-token decode threshold, so the step runs as two
    // micro-batches (docs/scale-out.md, "Two-batch overlap"); the key is
    // refused where there is no all-to-all to hide or no batch.
    const auto [file, s] = scale_out_scenario("scale-out-overlap", 512, {{"dp", 8}, {"enable_expert_parallel", true}, {"two_batch_overlap", true}});
    CHECK(s["two_batch_overlap"] == true);
    const Run roof = Run::kvplan({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--dp", "8", "--enable-expert-parallel",
                                  "--batch", "512", "--context", "2560", "--two-batch-overlap", "--json"});
    REQUIRE(roof.exit_code == 0);
    const nlohmann::json row = nlohmann::json::parse(roof.out)["rows"][0];
    CHECK(row["two_batch_overlap"] == true);
    CHECK(s["expected"]["decode_step_s"].get<double>() == Approx(row["decode_step_s"].get<double>()).epsilon(1e-3));
    CHECK(Run::kvplan({"check", "--baseline", file.string()}).exit_code == 0);
    // Without dp/ep there is nothing to overlap: a data error naming the key.
    nlohmann::ordered_json top = nlohmann::ordered_json::parse(read_file(file));
    top["scenarios"][0].erase("dp");
    top["scenarios"][0].erase("enable_expert_parallel");
    std::ofstream(file) << top.dump(2) << "\n";
    const Run bad = Run::kvplan({"check", "--baseline", file.string()});
    CHECK(bad.exit_code == 65);
    CHECK_THAT(bad.err, Catch::Contains("two_batch_overlap"));
}

TEST_CASE("a DP + EP scenario over two nodes gates the step roofline --nodes prices, its all-to-all half over the NIC") {
    // DeepSeek-V3, vLLM rules, TP 1 x DP 16 with expert parallelism on two
    // nodes of 8 H200s, 4,096 sequences of 2,560 tokens: the step `kvplan
    // roofline --dp 16 --enable-expert-parallel --nodes 2 --batch 4096`
    // prints. Its all-to-all is vLLM's default all-gather + reduce-scatter of
    // 4,096 x 7,168 x 2 B = 58,720,256 B a MoE layer over the 16 DP ranks
    // (docs/collectives.md): half of it comes from the other node over the
    // 50 GB/s ib-ndr NIC, 29,360,128 B / 50e9 = 587.2 us a call, slower than
    // the in-node part (no table at 16 GPUs: 20.71 us + 58,720,256 B /
    // (450 GB/s x 16/15) = 143.0 us), so 58 x 2 x 587.2 us = 68.12 ms.
    const auto [file, s] =
        scale_out_scenario("scale-out-nodes", 4096, {{"dp", 16}, {"enable_expert_parallel", true}, {"nodes", 2}, {"nic", "ib-ndr"}});
    CHECK(s["nodes"] == 2);
    CHECK(s["nic"] == "ib-ndr");
    const Run roof = Run::kvplan({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "16", "--enable-expert-parallel", "--nodes", "2",
                                  "--batch", "4096", "--context", "2560", "--json"});
    REQUIRE(roof.exit_code == 0);
    const nlohmann::json row = nlohmann::json::parse(roof.out)["rows"][0];
    CHECK(row["all_to_all_s"].get<double>() == Approx(58.0 * 2 * 29'360'128 / 50e9));
    CHECK(row["all_to_all_nic_bytes"].get<double>() == Approx(58.0 * 2 * 29'360'128));
    CHECK(s["expected"]["decode_step_s"].get<double>() == Approx(row["decode_step_s"].get<double>()).epsilon(1e-3));
    CHECK(Run::kvplan({"check", "--baseline", file.string()}).exit_code == 0);
    // The same 16 GPUs on one scale-up link (gpus_per_node 16): no NIC, a faster step.
    nlohmann::ordered_json top = nlohmann::ordered_json::parse(read_file(file));
    top["scenarios"][0].erase("nodes");
    top["scenarios"][0].erase("nic");
    top["scenarios"][0]["gpus_per_node"] = 16;
    top["scenarios"][0].erase("expected");
    std::ofstream(file) << top.dump(2) << "\n";
    REQUIRE(Run::kvplan({"check", "--baseline", file.string(), "--update"}).exit_code == 0);
    const nlohmann::json one = nlohmann::json::parse(read_file(file))["scenarios"][0];
    CHECK(one["expected"]["decode_step_s"].get<double>() < s["expected"]["decode_step_s"].get<double>());
}
