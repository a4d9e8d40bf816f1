// Runs kvplan-gpu-bench and reads its JSON (io/gpu_bench.hpp).
#include "io/gpu_bench.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <sys/wait.h>

#include "core/error.hpp"

namespace kvplan {

std::string gpu_bench_path() {
    if (const char* env = std::getenv("KVPLAN_GPU_BENCH")) return env;
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("kvplan-gpu-bench") : (self.parent_path() / "kvplan-gpu-bench").string();
}

namespace {

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

std::string run_gpu_bench_command(const std::string& bench, const std::string& args) {
    const std::string command = shell_quote(bench) + " " + args;
    char err_path[] = "/tmp/kvplan_gpu_bench_XXXXXX";
    const int fd = ::mkstemp(err_path);
    if (fd < 0) unavailable_error("cannot create a temporary file for kvplan-gpu-bench's messages");
    ::close(fd);
    std::string out;
    FILE* pipe = ::popen((command + " 2>" + err_path).c_str(), "r");
    if (!pipe) unavailable_error("cannot run " + command);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    const int status = ::pclose(pipe);
    std::ifstream err_in(err_path);
    std::string message;
    std::getline(err_in, message);
    std::remove(err_path);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 69) unavailable_error("no CUDA GPU here: " + message);
    if (code != 0) data_error("kvplan-gpu-bench failed (exit " + std::to_string(code) + "): " + message);
    return out;
}

void read_gpu_bench_result(const nlohmann::json& j, const std::string& source, const std::string& model, MeasureResult& r) {
    try {
        r.device = "cuda: " + j.at("device").get<std::string>();
        r.model = model;
        r.precision = "bf16 weights, " + j.at("kv_dtype").get<std::string>() + " KV";
        r.layers_measured = j.at("layers_measured").get<std::int64_t>();
        r.layers_total = j.at("layers_total").get<std::int64_t>();
        r.read_bytes_per_s = j.at("bandwidth").at("read_bytes_per_s").get<double>();
        r.copy_bytes_per_s = j.at("bandwidth").at("copy_bytes_per_s").get<double>();
        r.stream_array_bytes = j.at("bandwidth").at("buffer_bytes").get<std::int64_t>();
        r.flops_per_s = j.at("measured_flops_per_s").get<double>();
        auto steps = [&](const char* key, const char* tokens_key) {
            std::vector<MeasuredStep> out;
            for (const auto& x : j.at(key)) {
                MeasuredStep m;
                m.batch = x.value("batch", std::int64_t{1});
                m.tokens = x.at(tokens_key).get<std::int64_t>();
                m.measured_s = x.at("measured_s").get<double>();
                const auto& c = x.at("components_s");
                m.qkv_s = c.at("qkv").get<double>();
                m.attention_s = c.at("attention").get<double>();
                m.o_proj_s = c.at("o_proj").get<double>();
                m.mlp_s = c.at("mlp").get<double>();
                m.other_s = c.at("other").get<double>();
                out.push_back(m);
            }
            return out;
        };
        r.decode = steps("decode", "context_tokens");
        r.prefill = steps("prefill", "prompt_tokens");
    } catch (const nlohmann::json::exception& e) {
        data_error(source + ": not a kvplan-gpu-bench result (" + e.what() + ")");
    }
}

}  // namespace kvplan
