// Names reach outputs escaped (issue 44, class 5; docs/errors.md, "Printing
// what users gave"): a model folder, a config's model_type, a device file's
// name, an engine file's name, a calibration's device and a scenario named with every control character, '|', '<', '&' and
// "::error::" after a newline, run through size, concurrency, roofline,
// recommend, simulate, diff and check in every format each has (and --plot SVG), end to
// end through the binary.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "binary_run.hpp"
#include "xml_check.hpp"

namespace {

using namespace kvplan::test;

// Every C0 control character but NUL, DEL, the characters markup and
// Markdown give a meaning, and a GitHub workflow command after a newline. No
// '/', so that it can name a folder.
std::string hostile() {
    std::string s;
    for (int c = 0x01; c < 0x20; ++c) s += static_cast<char>(c);
    return s + "\x7f|<&>\"'\n::error::pwned";
}

std::string llama_config(const std::string& model_type) {
    nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                        {"model_type", model_type},
                        {"hidden_size", 4096},
                        {"intermediate_size", 14336},
                        {"max_position_embeddings", 8192},
                        {"num_attention_heads", 32},
                        {"num_hidden_layers", 32},
                        {"num_key_value_heads", 8},
                        {"torch_dtype", "bfloat16"},
                        {"vocab_size", 128256}};
    return j.dump(2);
}

// The inputs, written once: a model folder named by the hostile string, a
// config whose model_type holds it, and a device file whose name holds it.
struct Inputs {
    std::string folder, model_type, gpu_file, engine_file, calibration, baseline, plot;
};

const Inputs& inputs() {
    static const Inputs in = [] {
        Inputs i;
        const fs::path dir = scratch().path() / "hostile";
        i.folder = scratch().write("hostile/" + hostile() + "/config.json", llama_config("llama")).parent_path().string();
        i.model_type = scratch().write("hostile/model_type/config.json", llama_config("llama" + hostile())).string();
        nlohmann::json gpus = {{"schema_version", 1},
                               {"gpus",
                                {{{"id", "hostile"},
                                  {"name", "Accel" + hostile()},
                                  {"memory_bytes", 85899345920LL},
                                  {"memory_bandwidth_bytes_per_s", 3350000000000LL},
                                  {"memory_technology", "HBM3"},
                                  {"peak_tflops", {{"bf16", 989}}}}}}};
        i.gpu_file = scratch().write("hostile/gpus.json", gpus.dump(2)).string();
        nlohmann::json engine = nlohmann::json::parse(read_file(fs::path(KVPLAN_SOURCE_DIR) / "models" / "engines" / "vllm.json"));
        engine["id"] = "hostile-engine";
        engine["name"] = "engine" + hostile();
        i.engine_file = scratch().write("hostile/engine.json", engine.dump(2)).string();
        const nlohmann::json calibration = {
            {"schema_version", 2}, {"device", "device" + hostile()}, {"measured_bandwidth_bytes_per_s", 3.0e12}, {"measured_flop_per_s", 7.0e14}};
        i.calibration = scratch().write("hostile/calibration.json", calibration.dump(2)).string();
        // One scenario whose figures regressed (kvplan computes 425,632 KV
        // tokens and 103 requests on this device), so that check annotates an
        // error, and a model whose config changed (a provenance notice).
        const nlohmann::json scenario = {{"name", "scenario" + hostile()},
                                         {"model", i.folder},
                                         {"gpu", "hostile"},
                                         {"engine", "vllm"},
                                         {"tp", 1},
                                         {"context_tokens", 4096},
                                         {"kv_dtype", "auto"},
                                         {"batch", 32},
                                         {"expected",
                                          {{"kv_bytes_per_token", 131072},
                                           {"kv_bytes_per_sequence", 536870912},
                                           {"kv_cache_tokens", 500000},
                                           {"max_requests", 200},
                                           {"decode_step_s", 0.0156812},
                                           {"decode_tokens_per_s", 2040.65}}}};
        const nlohmann::json baseline = {{"schema_version", 2},
                                         {"kvplan_version", "0.1.0"},
                                         {"kvplan_commit", ""},
                                         {"description", "hostile names"},
                                         {"tolerance_percent", 0.5},
                                         {"scenarios", {scenario}},
                                         {"models", {{i.folder, {{"source", "folder"}, {"config_sha256", std::string(64, '0')}}}}}};
        i.baseline = scratch().write("hostile/capacity" + hostile() + ".json", baseline.dump(2)).string();
        i.plot = (dir / "plots").string();
        return i;
    }();
    return in;
}

// What every output must keep: no line that GitHub reads as a workflow command
// but kvplan's own annotations, no raw control byte but the newline (and the
// tab in CSV, which kvplan does not write either).
void expect_clean(const std::string& what, const std::string& text, bool own_annotations = false) {
    INFO(what << ":\n" << text);
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        if (line.rfind("::", 0) == 0) {
            INFO("line: " << line);
            CHECK(own_annotations);
            CHECK((line.rfind("::error file=", 0) == 0 || line.rfind("::notice file=", 0) == 0));
        }
        start = end + 1;
    }
    for (char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && c != '\n') || b == 0x7f) {
            INFO("raw byte " << static_cast<int>(b));
            CHECK(false);
            break;
        }
    }
}

// Each Markdown table keeps its columns: every line of a block of '|' lines
// has as many unescaped bars as the block's first line.
void expect_markdown_columns(const std::string& md) {
    auto bars = [](const std::string& line) {
        int n = 0;
        for (std::size_t i = 0; i < line.size(); ++i) n += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
        return n;
    };
    int header = -1;
    std::size_t start = 0;
    while (start < md.size()) {
        const std::size_t end = std::min(md.find('\n', start), md.size());
        const std::string line = md.substr(start, end - start);
        if (line.rfind("|", 0) != 0) header = -1;
        else if (header < 0) header = bars(line);
        else {
            INFO(line);
            CHECK(bars(line) == header);
        }
        start = end + 1;
    }
}

void expect_run(const std::vector<std::string>& args, const std::string& format, int exit_code = 0) {
    const Run r = Run::kvplan(args);
    INFO(r.command << "\nstderr: " << r.err);
    REQUIRE(r.signal == 0);
    CHECK(r.exit_code == exit_code);
    CHECK_FALSE(r.out.empty());
    expect_clean("stdout", r.out, format == "github");
    expect_clean("stderr", r.err);
    if (format == "markdown") expect_markdown_columns(r.out);
    if (format == "json") CHECK(nlohmann::json::accept(r.out));
    if (format == "junit") CHECK(xml_problem(r.out).empty());
}

// The files --plot and --report wrote: each SVG well-formed XML, every file clean.
void expect_files(const std::string& folder, const std::string& report) {
    int svgs = 0;
    for (const auto& entry : fs::directory_iterator(folder)) {
        const std::string text = read_file(entry.path());
        INFO(entry.path());
        if (entry.path().extension() == ".svg") {
            ++svgs;
            CHECK(xml_problem(text).empty());
        }
        expect_clean(entry.path().filename().string(), text);
    }
    CHECK(svgs == 2);
    fs::remove_all(folder);
    const std::string html = read_file(report);
    CHECK(html.find("<svg") != std::string::npos);
    expect_clean("HTML report", html);
    fs::remove(report);
}

}  // namespace

TEST_CASE("hostile names: size, concurrency, recommend and diff in every format", "[hostile-names]") {
    const Inputs& in = inputs();
    for (const std::string& model : {in.folder, in.model_type}) {
        const std::vector<std::string> device = {"--gpu-file", in.gpu_file, "--gpu", "hostile"};
        for (const std::string format : {"table", "markdown", "csv", "json"}) {
            expect_run({"size", "--model", model, "--format", format}, format);
            std::vector<std::string> args = {"concurrency", "--model", model, "--format", format};
            args.insert(args.end(), device.begin(), device.end());
            expect_run(args, format);
        }
        for (const std::string format : {"table", "markdown", "csv", "json"})
            expect_run({"recommend", "--model", model, "--gpu-file", in.gpu_file, "--gpus", "hostile", "--context", "4096", "--ttft", "2", "--tpot",
                        "0.1", "--format", format},
                       format);
        for (const std::string format : {"table", "markdown", "json"}) {
            std::vector<std::string> args = {"diff", "--model", model, "--model", "llama-3.1-8b", "--format", format};
            args.insert(args.end(), device.begin(), device.end());
            expect_run(args, format);
        }
    }
}

TEST_CASE("hostile names: roofline and simulate in every format, with their charts and HTML reports", "[hostile-names]") {
    const Inputs& in = inputs();
    const std::string report = in.plot + ".html";
    for (const std::string& model : {in.folder, in.model_type}) {
        const std::vector<std::string> device = {"--gpu-file", in.gpu_file, "--gpu", "hostile", "--plot", in.plot, "--report", report};
        for (const std::string format : {"table", "markdown", "csv", "json"}) {
            std::vector<std::string> args = {"roofline", "--model", model, "--format", format};
            args.insert(args.end(), device.begin(), device.end());
            expect_run(args, format);
            expect_files(in.plot, report);
        }
        for (const std::string format : {"table", "json"}) {
            std::vector<std::string> args = {"simulate",  "--model",      model,      "--requests", "20", "--input-len",
                                             "fixed:512", "--output-len", "fixed:64", "--rate",     "5"};
            if (format == "json") args.push_back("--json");
            args.insert(args.end(), device.begin(), device.end());
            expect_run(args, format);
            expect_files(in.plot, report);
        }
    }
}

TEST_CASE("hostile names: recommend's SLO search, its charts and HTML report", "[hostile-names]") {
    const Inputs& in = inputs();
    const std::string report = in.plot + ".html";
    for (const std::string format : {"table", "json", "markdown", "csv"}) {
        std::vector<std::string> args = {"recommend", "--draws", "0", "--model",     in.folder,   "--gpu-file",   in.gpu_file,          "--gpus",
                                         "hostile",   "--max-gpus",  "1",         "--slo",        "ttft=2s,tpot=100ms", "--rate",
                                         "5",         "--input-len", "fixed:256", "--output-len", "fixed:32",           "--plot",
                                         in.plot,     "--report",    report};
        if (format == "json") args.push_back("--json");
        if (format == "markdown" || format == "csv") args.insert(args.end(), {"--format", format});
        expect_run(args, format);
        expect_files(in.plot, report);
    }
}

TEST_CASE("hostile names: an engine file's name and a calibration's device", "[hostile-names]") {
    const Inputs& in = inputs();
    for (const std::string format : {"table", "markdown", "json"}) {
        expect_run({"engines", "--engine-file", in.engine_file, "--format", format}, format);
        expect_run({"roofline", "--model", in.model_type, "--gpu", "h100-sxm", "--engine-file", in.engine_file, "--engine", "hostile-engine",
                    "--calibration", in.calibration, "--format", format},
                   format);
    }
}

TEST_CASE("hostile names: check in every format", "[hostile-names]") {
    const Inputs& in = inputs();
    // Exit 1: the scenario's figures regressed.
    for (const std::string format : {"text", "json", "markdown", "github", "junit"})
        expect_run({"check", "--gpu-file", in.gpu_file, "--baseline", in.baseline, "--format", format}, format, 1);
}

TEST_CASE("hostile names: a folder name that is not UTF-8 prints JSON, the bytes replaced", "[hostile-names]") {
    // nlohmann's dump throws on invalid UTF-8 by default (type_error 316): an
    // internal error, exit 70. json_text replaces the bytes with U+FFFD.
    const std::string folder = scratch().write("latin1/caf\xe9\xff/config.json", llama_config("llama")).parent_path().string();
    const Run r = Run::kvplan({"size", "--model", folder, "--json"});
    INFO(r.command << "\nstderr: " << r.err);
    CHECK(r.exit_code == 0);
    REQUIRE(nlohmann::json::accept(r.out));
    CHECK(nlohmann::json::parse(r.out).at("model").get<std::string>().find("caf\xef\xbf\xbd\xef\xbf\xbd") != std::string::npos);
}
