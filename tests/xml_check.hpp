// A small XML well-formedness check for the JUnit report, so that the test
// needs no XML library: one root element, tags that nest and close,
// attributes quoted and unique, and '&' only in the five predefined entities
// or character references (XML 1.0, sections 2.1, 2.4, 3.1, 4.1).
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace kvplan::test {

// "" when `xml` is well-formed, else what is wrong and where.
inline std::string xml_problem(const std::string& xml) {
    std::size_t i = 0;
    const std::size_t n = xml.size();
    auto at = [&](std::size_t pos) { return " at byte " + std::to_string(pos); };
    auto text_ok = [&](std::size_t from, std::size_t to) -> std::string {
        for (std::size_t k = from; k < to; ++k) {
            if (xml[k] == '<') return "raw '<' in text" + at(k);
            if (xml[k] == '&') {
                const std::size_t semi = xml.find(';', k);
                if (semi == std::string::npos || semi > to) return "unterminated entity" + at(k);
                const std::string name = xml.substr(k + 1, semi - k - 1);
                static const std::set<std::string> predefined = {"amp", "lt", "gt", "quot", "apos"};
                bool numeric = name.size() > 1 && name[0] == '#';
                for (std::size_t c = 1; numeric && c < name.size(); ++c) numeric = std::isdigit(static_cast<unsigned char>(name[c]));
                if (!predefined.count(name) && !numeric) return "unknown entity &" + name + ";" + at(k);
            }
            if (static_cast<unsigned char>(xml[k]) < 0x20 && xml[k] != '\n' && xml[k] != '\t' && xml[k] != '\r') return "control character" + at(k);
        }
        return "";
    };
    if (xml.rfind("<?xml", 0) == 0) {
        i = xml.find("?>");
        if (i == std::string::npos) return "unterminated XML declaration";
        i += 2;
    }
    std::vector<std::string> open;
    int roots = 0;
    while (i < n) {
        const std::size_t lt = xml.find('<', i);
        const std::size_t text_end = lt == std::string::npos ? n : lt;
        if (std::string p = text_ok(i, text_end); !p.empty()) return p;
        if (open.empty())
            for (std::size_t k = i; k < text_end; ++k)
                if (!std::isspace(static_cast<unsigned char>(xml[k]))) return "text outside the root element" + at(k);
        if (lt == std::string::npos) break;
        const std::size_t gt = xml.find('>', lt);
        if (gt == std::string::npos) return "unterminated tag" + at(lt);
        std::string tag = xml.substr(lt + 1, gt - lt - 1);
        if (tag.rfind("!--", 0) == 0) {
            const std::size_t end = xml.find("-->", lt);
            if (end == std::string::npos) return "unterminated comment" + at(lt);
            i = end + 3;
            continue;
        }
        if (!tag.empty() && tag[0] == '/') {
            const std::string name = tag.substr(1);
            if (open.empty() || open.back() != name) return "closing </" + name + "> does not match" + at(lt);
            open.pop_back();
            i = gt + 1;
            continue;
        }
        const bool self_closing = !tag.empty() && tag.back() == '/';
        if (self_closing) tag.pop_back();
        // The name, then name="value" pairs.
        std::size_t k = 0;
        while (k < tag.size() && !std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
        const std::string name = tag.substr(0, k);
        if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return "bad element name" + at(lt);
        std::set<std::string> attributes;
        while (true) {
            while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
            if (k >= tag.size()) break;
            const std::size_t eq = tag.find('=', k);
            if (eq == std::string::npos) return "attribute without value in <" + name + ">" + at(lt);
            const std::string attr = tag.substr(k, eq - k);
            if (!attributes.insert(attr).second) return "duplicate attribute " + attr + at(lt);
            if (eq + 1 >= tag.size() || (tag[eq + 1] != '"' && tag[eq + 1] != '\'')) return "unquoted attribute " + attr + at(lt);
            const char quote = tag[eq + 1];
            const std::size_t close = tag.find(quote, eq + 2);
            if (close == std::string::npos) return "unterminated attribute " + attr + at(lt);
            const std::size_t value_from = lt + 1 + eq + 2, value_to = lt + 1 + close;
            if (std::string p = text_ok(value_from, value_to); !p.empty()) return p;
            k = close + 1;
        }
        if (open.empty() && ++roots > 1) return "more than one root element" + at(lt);
        if (!self_closing) open.push_back(name);
        i = gt + 1;
    }
    if (!open.empty()) return "<" + open.back() + "> is never closed";
    if (roots != 1) return "no root element";
    return "";
}

}  // namespace kvplan::test
