// The figures `kvplan check` gates on: what each is called in a baseline,
// its unit, and which direction is a regression. One table drives parsing,
// comparing and printing, so a new figure is one line here.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace kvplan {

enum class Figure {
    KvBytesPerToken,     // whole model, every caching layer, one context token
    KvBytesPerSequence,  // whole model, one request at the scenario's context
    KvCacheTokens,       // tokens the engine's KV pool holds (what vLLM logs as "GPU KV cache size")
    MaxRequests,         // requests of the scenario's context that fit in one replica
    DecodeStepS,         // roofline decode step at the scenario's batch (optional)
    DecodeTokensPerS,    // batch / step time, all GPUs of the replica (optional)
};

inline constexpr std::size_t kFigureCount = 6;

enum class Better { Lower, Higher };

struct FigureSpec {
    Figure figure;
    const char* key;  // the baseline's and the JSON report's key; its unit is in the name
    Better better;
    bool integer;      // bytes, tokens and requests are integers; times and rates are reals
    bool needs_batch;  // only for scenarios with a "batch"
    // A modelled speed, not a count: kvplan's step model moves it whenever it
    // is refined, so it is gated with a default tolerance (regression.hpp).
    bool modelled;
};

// In the order reports list them and `kvplan baseline` writes them.
inline constexpr std::array<FigureSpec, kFigureCount> kFigures{{
    {Figure::KvBytesPerToken, "kv_bytes_per_token", Better::Lower, true, false, false},
    {Figure::KvBytesPerSequence, "kv_bytes_per_sequence", Better::Lower, true, false, false},
    {Figure::KvCacheTokens, "kv_cache_tokens", Better::Higher, true, false, false},
    {Figure::MaxRequests, "max_requests", Better::Higher, true, false, false},
    {Figure::DecodeStepS, "decode_step_s", Better::Lower, false, true, true},
    {Figure::DecodeTokensPerS, "decode_tokens_per_s", Better::Higher, false, true, true},
}};

inline const FigureSpec& figure_spec(Figure f) {
    return kFigures[static_cast<std::size_t>(f)];
}

// Modelled figures (decode_step_s, decode_tokens_per_s) move whenever
// kvplan's step model is refined; at the 0% a capacity count deserves, every
// such refinement would fail every user's gate. Unless a tolerance names
// them, they get at least 5%: a change to the set-up a baseline pins (a
// longer context, another dtype or GPU) moves them by more, while a retuned
// constant of the step model usually moves them by less (docs/ci.md).
inline constexpr std::int64_t kModelledTolerancePpb = 50'000'000;

// The tolerances a check applies: one default, and figures named on their
// own ("0.5%,decode_step_s=2%"). Counts and bytes get the default; a
// modelled figure that is not named gets max(default, kModelledTolerancePpb).
struct Tolerances {
    std::int64_t default_ppb = 0;
    std::array<std::optional<std::int64_t>, kFigureCount> named{};

    std::int64_t of(Figure f) const {
        if (const auto& n = named[static_cast<std::size_t>(f)]) return *n;
        return figure_spec(f).modelled ? std::max(default_ppb, kModelledTolerancePpb) : default_ppb;
    }
    bool operator==(const Tolerances&) const = default;
};

// One figure's value. Null: the figure does not apply to this scenario (a
// model with no per-token layers has no KV cache tokens), which a baseline
// writes as JSON null.
struct FigureValue {
    enum class State { Absent, Null, Integer, Real };
    State state = State::Absent;
    std::int64_t integer = 0;
    double real = 0;

    static FigureValue of(std::int64_t v) { return {State::Integer, v, static_cast<double>(v)}; }
    static FigureValue of_real(double v) { return {State::Real, 0, v}; }
    static FigureValue null() { return {State::Null, 0, 0}; }
    bool has_number() const { return state == State::Integer || state == State::Real; }
    bool operator==(const FigureValue&) const = default;
};

using Figures = std::array<FigureValue, kFigureCount>;

// Reals are kept to 6 significant digits, in the baseline and when
// recomputed, so that a figure compares equal to what was written and the
// file's digits do not churn: 0.00612345678 -> 0.00612346.
double round_significant(double value, int digits = 6);

}  // namespace kvplan
