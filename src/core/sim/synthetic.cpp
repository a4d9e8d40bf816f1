#include "core/sim/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/checked_conversion.hpp"
#include "core/error.hpp"
#include "core/model/config_parts.hpp"

namespace kvplan {

namespace {

std::int64_t draw(const LengthDist& d, std::mt19937_64& rng) {
    double v = d.a;
    switch (d.kind) {
        case LengthDist::Kind::Fixed: break;
        case LengthDist::Kind::Uniform: v = std::floor(std::uniform_real_distribution<double>(d.a, d.b + 1)(rng)); break;
        case LengthDist::Kind::Lognormal: {
            // Mean a: mu = ln(a) - sigma^2 / 2.
            std::lognormal_distribution<double> ln(std::log(d.a) - d.b * d.b / 2, d.b);
            v = std::round(ln(rng));
            break;
        }
        case LengthDist::Kind::Empirical:
            v = static_cast<double>(d.values[std::uniform_int_distribution<std::size_t>(0, d.values.size() - 1)(rng)]);
            break;
    }
    return checked_trunc(std::clamp(v, 1.0, static_cast<double>(kMaxTokens)), "a sampled length");
}

void check(const LengthDist& d, const char* name) {
    const bool ok = d.kind == LengthDist::Kind::Empirical ? !d.values.empty()
                                                          : d.a >= 1 && d.a <= kMaxTokens && (d.kind != LengthDist::Kind::Uniform || d.b >= d.a) &&
                                                                (d.kind != LengthDist::Kind::Lognormal || (d.b >= 0 && d.b <= 10));
    if (!ok)
        usage_error(std::string(name) +
                    ": expected lengths of at least 1 token (fixed:N, uniform:A-B with A <= B, lognormal:MEAN,SIGMA with SIGMA <= 10)");
}

}  // namespace

Workload synthetic_workload(const SyntheticSpec& s) {
    if (s.requests <= 0 || s.requests > 100'000'000) usage_error("--requests: expected 1 to 100,000,000 requests");
    if (s.concurrency <= 0 && !(s.rate > 0 && std::isfinite(s.rate))) usage_error("--rate: expected a positive number of requests per second");
    if (!(s.burstiness > 0 && std::isfinite(s.burstiness))) usage_error("--burstiness: expected a positive number");
    if (s.concurrency <= 0 && !(static_cast<double>(s.requests) / s.rate <= kMaxReplaySeconds))
        usage_error("--rate: " + std::to_string(s.requests) + " requests at this rate last longer than 10^7 s (116 days); raise --rate");
    check(s.input, "--input-len");
    check(s.output, "--output-len");
    std::mt19937_64 rng(s.seed);
    Workload w;
    w.concurrency = s.concurrency;
    w.requests.reserve(static_cast<std::size_t>(s.requests));
    std::gamma_distribution<double> gap(s.burstiness, s.concurrency > 0 ? 1.0 : 1.0 / (s.rate * s.burstiness));
    double t = 0;
    for (std::int64_t i = 0; i < s.requests; ++i) {
        SimRequest r;
        if (s.concurrency == 0) t += gap(rng);
        r.arrival_s = t;
        r.input_tokens = draw(s.input, rng);
        r.output_tokens = draw(s.output, rng);
        w.requests.push_back(r);
    }
    // vllm bench serve rescales the gaps so the last request arrives at N / rate.
    if (s.concurrency == 0 && t > 0) {
        const double scale = static_cast<double>(s.requests) / s.rate / t;
        for (SimRequest& r : w.requests) r.arrival_s *= scale;
    }
    return w;
}

void share_system_prompt(Workload& w, std::int64_t tokens) {
    if (tokens <= 0 || tokens > kMaxTokens) usage_error("--prefix-tokens: expected 1 to " + std::to_string(kMaxTokens) + " tokens");
    // One content key for the whole span: equal key, equal position, equal
    // content (workload.hpp), so every request's leading blocks hash alike.
    constexpr std::uint64_t kSystemPrompt = 0x5157e3ULL;
    // The prefix is counted in each prompt's length: one longer than every
    // prompt describes no request in the workload.
    std::int64_t longest = 0;
    for (const SimRequest& r : w.requests) longest = std::max(longest, r.input_tokens);
    if (!w.requests.empty() && tokens > longest)
        usage_error("--prefix-tokens: expected at most the longest prompt, " + std::to_string(longest) +
                    " tokens (the shared prefix is part of each prompt), found " + std::to_string(tokens));
    for (SimRequest& r : w.requests) {
        if (!r.content_keys.empty()) usage_error("--prefix-tokens: the trace already says what its prompts share (Mooncake hash_ids); drop the flag");
        r.content_keys = {kSystemPrompt};
        r.key_block_tokens = tokens;
    }
}

}  // namespace kvplan
