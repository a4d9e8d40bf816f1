#include "cli/flag_checks.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/memory/vllm_release.hpp"

namespace kvplan {

namespace {

std::string number_text(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

bool has_empty_item(const std::string& value) {
    return value.empty() || value.front() == ',' || value.back() == ',' || value.find(",,") != std::string::npos;
}

}  // namespace

namespace {

CLI::Validator range_validator(double min, double max, const std::string& why) {
    const std::string range = "[" + number_text(min) + ", " + number_text(max) + "]";
    return CLI::Validator(
        [min, max, range, why](std::string& text) -> std::string {
            const char* begin = text.c_str();
            char* end = nullptr;
            errno = 0;
            const double v = std::strtod(begin, &end);
            if (end == begin || *end != '\0' || !std::isfinite(v) || v < min || v > max)
                return "expected a number in " + range + ", found \"" + text + "\"" + why;
            return std::string();
        },
        "NUMBER in " + range);
}

}  // namespace

CLI::Validator finite_range(double min, double max) {
    return range_validator(min, max, "");
}

CLI::Validator bounded_flag(Quantity q) {
    const Bound& b = bound_of(q);
    return range_validator(b.floor, b.ceiling, std::string(" (") + b.name + ": " + b.why + ")");
}

CLI::Validator token_count() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            if (text.empty()) return "expected a token count such as 8192, 8k or 8K";
            const char suffix = text.back();
            std::int64_t multiplier = 1;
            bool decimal = true;
            switch (suffix) {
                case 'k': multiplier = 1'000; break;
                case 'm': multiplier = 1'000'000; break;
                case 'g': multiplier = 1'000'000'000; break;
                case 't': multiplier = 1'000'000'000'000; break;
                case 'K':
                    multiplier = std::int64_t{1} << 10;
                    decimal = false;
                    break;
                case 'M':
                    multiplier = std::int64_t{1} << 20;
                    decimal = false;
                    break;
                case 'G':
                    multiplier = std::int64_t{1} << 30;
                    decimal = false;
                    break;
                case 'T':
                    multiplier = std::int64_t{1} << 40;
                    decimal = false;
                    break;
                default: return std::string();  // a plain number: the range check reads it
            }
            const std::string number = text.substr(0, text.size() - 1);
            const bool digits_only = !number.empty() && number.find_first_not_of("0123456789") == std::string::npos;
            const bool has_point = number.find('.') != std::string::npos;
            const bool well_formed =
                digits_only || (decimal && has_point && number.front() != '.' && number.back() != '.' &&
                                number.find_first_not_of("0123456789.") == std::string::npos && number.find('.') == number.rfind('.'));
            if (!well_formed)
                return "expected a token count such as 8192, 8k (8,000) or 8K (8,192), found \"" + text + "\"" +
                       (has_point && !decimal ? " (decimals only with the decimal suffixes k, m, g, t)" : "");
            const double value = std::strtod(number.c_str(), nullptr) * static_cast<double>(multiplier);
            if (!(value < 9.2e18)) return "expected a token count below 2^63, found \"" + text + "\"";
            text = std::to_string(static_cast<std::int64_t>(value));  // vLLM: int(float(number) * mult)
            return std::string();
        },
        "TOKENS (8192, 8k, 8K)");
}

void warn_deprecated_flags(const CLI::App& command, std::ostream& err) {
    const std::string name = command.get_name();
    if (name != "roofline" && name != "recommend") return;
    const CLI::Option* old = command.get_option_no_throw("--output");
    if (old && old->count() > 0)
        err << "kvplan: warning: " << name << " --output N is deprecated and will name an output file; use --output-tokens N\n";
}

void refuse_empty_list_items(const CLI::App& command, const std::vector<std::string>& args) {
    for (const CLI::Option* option : command.get_options()) {
        if (option->get_delimiter() != ',') continue;
        std::vector<std::string> spellings;
        for (const std::string& l : option->get_lnames()) spellings.push_back("--" + l);
        for (const std::string& s : option->get_snames()) spellings.push_back("-" + s);
        for (std::size_t i = 0; i < args.size(); ++i)
            for (const std::string& flag : spellings) {
                std::string value;
                if (args[i] == flag && i + 1 < args.size()) value = args[i + 1];
                else if (args[i].rfind(flag + "=", 0) == 0) value = args[i].substr(flag.size() + 1);
                else continue;
                if (has_empty_item(value))
                    usage_error(flag + " " + value + ": an empty item in a comma-separated list (a doubled, leading or trailing comma?)");
            }
    }
}

void refuse_empty_values(const CLI::App& command) {
    for (const CLI::Option* option : command.get_options()) {
        if (option->count() == 0 || option->get_items_expected_min() == 0 || option->get_lnames().empty()) continue;
        for (const std::string& value : option->results())
            if (value.empty()) usage_error("--" + option->get_lnames().front() + ": an empty value; give one, or leave the flag out");
    }
}

namespace {

namespace fs = std::filesystem;

// The files an option's values name: regular files, and a model folder's config.json.
void named_files(const CLI::Option& option, std::vector<std::pair<std::string, fs::path>>& out) {
    for (const std::string& value : option.results()) {
        std::error_code ec;
        if (value.empty()) continue;
        if (fs::is_regular_file(value, ec)) out.emplace_back("--" + option.get_lnames().front(), value);
        else if (fs::is_directory(value, ec) && fs::is_regular_file(fs::path(value) / "config.json", ec))
            out.emplace_back("--" + option.get_lnames().front(), fs::path(value) / "config.json");
    }
}

}  // namespace

void refuse_outputs_over_inputs(const CLI::App& app, const CLI::App& command) {
    static const std::set<std::string> kOutputs = {"output", "report", "requests-csv", "timeseries-csv"};
    std::vector<std::pair<std::string, fs::path>> inputs;
    std::vector<const CLI::Option*> outputs;
    for (const CLI::App* scope : {&app, &command})
        for (const CLI::Option* option : scope->get_options()) {
            if (option->count() == 0 || option->get_lnames().empty()) continue;
            if (scope == &command && kOutputs.count(option->get_lnames().front())) outputs.push_back(option);
            else named_files(*option, inputs);
        }
    for (const CLI::Option* option : outputs)
        for (const std::string& value : option->results())
            for (const auto& [flag, path] : inputs) {
                std::error_code ec;
                if (fs::equivalent(value, path, ec) && !ec)
                    usage_error("--" + option->get_lnames().front() + " " + value + ": is the file " + flag + " reads (" + path.string() +
                                "); write the output elsewhere");
            }
}

CLI::Validator seed_value() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc() || p != text.data() + text.size())
                return "expected a whole number from 0 to 18446744073709551615, found " + text;
            return std::string();
        },
        "SEED");
}

std::vector<std::string> split_list(const std::string& text, const char* flag) {
    std::vector<std::string> out;
    if (text.empty()) return out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    if (text.back() == ',') out.emplace_back();
    for (const std::string& item : out)
        if (item.empty())
            usage_error(std::string(flag) + " " + text + ": an empty item in a comma-separated list (a doubled, leading or trailing comma?)");
    return out;
}

void add_wide_flag(CLI::App& command, bool& wide) {
    command.add_flag("--wide", wide, "text: every column, at full width (default: fit 100 columns)");
}

VllmSampler parse_vllm_version(const std::string& text) {
    return vllm_release_rules(parse_vllm_release(text)).sampler;
}

}  // namespace kvplan
