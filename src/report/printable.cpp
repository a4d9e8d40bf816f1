#include "report/printable.hpp"

#include <cstdio>

namespace kvplan {

namespace {

bool is_control(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
}

void append_escape(std::string& out, char c) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
        out += buf;
    }
}

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (is_control(c)) append_escape(out, c);
        else out += c;
    }
    return out;
}

std::string markdown_cell(std::string_view text) {
    std::string out;
    for (char c : printable(text)) {
        if (c == '|') out += "\\|";
        else out += c;
    }
    return out;
}

std::string csv_cell(std::string_view text) {
    const std::string safe = printable(text);
    if (safe.find_first_of(",\"") == std::string::npos) return safe;
    std::string out = "\"";
    for (char c : safe) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::string markup_text(std::string_view text, bool apostrophe, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += apostrophe ? "&#39;" : "'"; break;
            default:
                if (is_control(c) && !(keep_newlines && (c == '\n' || c == '\t'))) append_escape(out, c);
                else out += c;
        }
    }
    return out;
}

std::string shell_word(std::string_view word) {
    if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@+=,-") == std::string::npos)
        return std::string(word);
    bool control = false;
    for (char c : word) control = control || is_control(c);
    if (!control) {
        std::string out = "'";
        for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    }
    std::string out = "$'";
    for (char c : word) {
        if (c == '\\' || c == '\'') out += std::string("\\") + c;
        else if (is_control(c)) append_escape(out, c);
        else out += c;
    }
    return out + "'";
}

std::string github_data(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '%') out += "%25";
        else if (c == '\r') out += "%0D";
        else if (c == '\n') out += "%0A";
        else if (is_control(c)) append_escape(out, c);
        else out += c;
    }
    return out;
}

std::string github_property(std::string_view text) {
    std::string out;
    for (char c : github_data(text)) {
        if (c == ':') out += "%3A";
        else if (c == ',') out += "%2C";
        else out += c;
    }
    return out;
}

}  // namespace kvplan
