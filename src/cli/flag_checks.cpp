#include "cli/flag_checks.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.hpp"

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

CLI::Validator finite_range(double min, double max) {
    const std::string range = "[" + number_text(min) + ", " + number_text(max) + "]";
    return CLI::Validator(
        [min, max, range](std::string& text) -> std::string {
            const char* begin = text.c_str();
            char* end = nullptr;
            errno = 0;
            const double v = std::strtod(begin, &end);
            if (end == begin || *end != '\0' || !std::isfinite(v) || v < min || v > max)
                return "expected a number in " + range + ", found \"" + text + "\"";
            return std::string();
        },
        "NUMBER in " + range);
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

}  // namespace kvplan
