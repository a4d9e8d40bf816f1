#include "core/memory/vllm_release.hpp"

#include <cstdlib>

#include "core/error.hpp"

namespace kvplan {

namespace {

constexpr int kOldestMinor = 10;  // V1 the default engine, V0 removed in 0.11
constexpr int kNewestMinor = 27;  // the newest release the issues name (gpustack/runner#251 upgrades to 0.27.1)

bool at_least(const VllmRelease& r, int minor, int patch) {
    return r.major > 0 || r.minor > minor || (r.minor == minor && r.patch >= patch);
}

// Digits at `pos`, or -1; moves `pos` past them.
int read_number(const std::string& s, std::size_t& pos) {
    const std::size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start || pos - start > 4) return -1;
    return std::atoi(s.substr(start, pos - start).c_str());
}

}  // namespace

std::vector<std::string> known_vllm_series() {
    std::vector<std::string> out;
    for (int m = kOldestMinor; m <= kNewestMinor; ++m) out.push_back("0." + std::to_string(m));
    return out;
}

VllmRelease parse_vllm_release(const std::string& text) {
    std::size_t pos = 0;
    VllmRelease r;
    r.major = read_number(text, pos);
    const bool dot = pos < text.size() && text[pos] == '.';
    if (dot) ++pos;
    r.minor = dot ? read_number(text, pos) : -1;
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        r.patch = read_number(text, pos);
    }
    // A pre-release suffix ("rc1", ".dev3", "+cu128") names the release it leads to.
    const bool suffix_ok = pos == text.size() || text[pos] == 'r' || text[pos] == '.' || text[pos] == '+';
    if (r.major < 0 || r.minor < 0 || r.patch < 0 || !suffix_ok)
        usage_error("--vllm-version: expected MAJOR.MINOR[.PATCH] such as 0.19.0 (or \"list\"), found \"" + text + "\"");
    if (r.major != 0 || r.minor < kOldestMinor || r.minor > kNewestMinor) {
        const bool below = r.major == 0 && r.minor < kOldestMinor;
        const int nearest = below ? kOldestMinor : kNewestMinor;
        usage_error("--vllm-version " + text + ": kvplan knows vLLM 0." + std::to_string(kOldestMinor) + " to 0." + std::to_string(kNewestMinor) +
                    " (--vllm-version list); the nearest is 0." + std::to_string(nearest) +
                    (below ? " (for the legacy V0 engine use --engine vllm-v0)" : ""));
    }
    return r;
}

VllmReleaseRules vllm_release_rules(const VllmRelease& r) {
    VllmReleaseRules rules;
    rules.sampler = vllm_sampler_for_version(r.major, r.minor, r.patch);
    if (at_least(r, 21, 0)) rules.graph_profile = VllmGraphProfile::EstimateSubtracted;
    else if (at_least(r, 18, 0)) rules.graph_profile = VllmGraphProfile::ProfiledDiscarded;
    return rules;
}

std::string vllm_release_text(const VllmRelease& r) {
    return std::to_string(r.major) + "." + std::to_string(r.minor) + "." + std::to_string(r.patch);
}

}  // namespace kvplan
