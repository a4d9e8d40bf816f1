#include "core/gate/regression.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/checked.hpp"

namespace kvplan {

std::int64_t parse_tolerance(const std::string& flag, const std::string& text) {
    auto bad = [&](const std::string& why) -> std::int64_t { usage_error(flag + " " + text + ": " + why + " (expected a percentage like 0.5%)"); };
    std::string digits = text;
    const bool percent = !digits.empty() && digits.back() == '%';
    if (percent) digits.pop_back();
    if (digits.empty()) return bad("no number");
    // Decimal digits with at most one point: integer part and fraction part, exactly.
    std::int64_t whole = 0, fraction = 0, scale = 1;
    bool point = false;
    for (char c : digits) {
        if (c == '.' && !point) {
            point = true;
        } else if (c >= '0' && c <= '9') {
            if (!point) {
                if (whole > 1'000'000) return bad("too large");
                whole = whole * 10 + (c - '0');
            } else {
                if (scale >= 1'000'000'000'000) {
                    if (c != '0') return bad("finer than one part per billion");
                    continue;
                }
                fraction = fraction * 10 + (c - '0');
                scale *= 10;
            }
        } else {
            return bad(c == '-' ? "must not be negative" : "not a number");
        }
    }
    // value = whole + fraction / scale, in units of 1 (fraction) or 1% (percent).
    // A bare number is ambiguous (is 0.5 half a percent or half?): only 0 may go without '%'.
    if (!percent && (whole != 0 || fraction != 0)) return bad("missing '%'");
    const Int128 numerator = (static_cast<Int128>(whole) * scale + fraction) * (kPpbPerUnit / 100);
    if (numerator % scale != 0) return bad("finer than one part per billion");
    const Int128 ppb = numerator / scale;
    if (ppb > kPpbPerUnit) return bad("over 100%");
    return static_cast<std::int64_t>(ppb);
}

std::string tolerance_text(std::int64_t ppb) {
    // ppb / 10^7 percent, without trailing zeros.
    std::string text = std::to_string(ppb / 10'000'000);
    std::int64_t rest = ppb % 10'000'000;
    if (rest != 0) {
        std::string frac = std::to_string(rest);
        frac.insert(0, 7 - frac.size(), '0');
        while (frac.back() == '0') frac.pop_back();
        text += "." + frac;
    }
    return text + "%";
}

Tolerances parse_tolerances(const std::string& flag, const std::string& text, Tolerances base) {
    bool default_given = false;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(start, end - start);
        start = end + 1;
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos) {
            if (default_given) usage_error(flag + " " + text + ": two default tolerances (name a figure: decode_step_s=5%)");
            default_given = true;
            base.default_ppb = parse_tolerance(flag, item);
            continue;
        }
        const std::string key = item.substr(0, eq);
        const FigureSpec* spec = nullptr;
        for (const FigureSpec& f : kFigures)
            if (key == f.key) spec = &f;
        if (!spec) {
            std::string keys;
            for (const FigureSpec& f : kFigures) keys += (keys.empty() ? "" : ", ") + std::string(f.key);
            usage_error(flag + " " + text + ": " + (key.size() <= 40 ? key : key.substr(0, 37) + "...") + " is not a figure (expected one of " +
                        keys + ")");
        }
        base.named[static_cast<std::size_t>(spec->figure)] = parse_tolerance(flag, item.substr(eq + 1));
    }
    return base;
}

std::string tolerances_text(const Tolerances& t) {
    std::string others;
    for (const FigureSpec& f : kFigures)
        if (t.of(f.figure) != t.default_ppb) others += (others.empty() ? "" : ", ") + std::string(f.key) + " " + tolerance_text(t.of(f.figure));
    return tolerance_text(t.default_ppb) + (others.empty() ? "" : " (" + others + ")");
}

const char* verdict_name(Verdict v) {
    switch (v) {
        case Verdict::Unchanged: return "unchanged";
        case Verdict::Within: return "within tolerance";
        case Verdict::Improvement: return "improvement";
        case Verdict::Regression: return "regression";
    }
    return "?";
}

FigureCheck compare_figure(Figure figure, const FigureValue& base, const FigureValue& cur, std::int64_t tolerance_ppb) {
    FigureCheck c{figure, base, cur, std::nullopt, Verdict::Unchanged, tolerance_ppb};
    const FigureSpec& spec = figure_spec(figure);
    if (base == cur) return c;
    if (!base.has_number() || !cur.has_number()) {
        // The figure started or stopped applying: always worth a look, and a
        // capacity figure that vanished is a loss.
        c.verdict = Verdict::Regression;
        return c;
    }
    bool within = false;
    bool up = false;
    if (spec.integer) {
        const Int128 delta = static_cast<Int128>(cur.integer) - base.integer;
        const Int128 magnitude = delta < 0 ? -delta : delta;
        within = magnitude * kPpbPerUnit <= static_cast<Int128>(tolerance_ppb) * base.integer;
        up = delta > 0;
        if (base.integer != 0) c.relative_change = static_cast<double>(delta) / static_cast<double>(base.integer);
    } else {
        const double delta = cur.real - base.real;
        // 1e-12: the reals were rounded to 6 significant digits, far coarser.
        within = std::abs(delta) <= static_cast<double>(tolerance_ppb) / kPpbPerUnit * base.real * (1 + 1e-12);
        up = delta > 0;
        if (base.real != 0) c.relative_change = delta / base.real;
    }
    if (within) c.verdict = Verdict::Within;
    else c.verdict = (up == (spec.better == Better::Higher)) ? Verdict::Improvement : Verdict::Regression;
    return c;
}

std::vector<FigureCheck> compare_scenario(const ScenarioInputs& inputs, const Figures& expected, const Figures& current,
                                          const Tolerances& tolerances) {
    std::vector<FigureCheck> out;
    for (const FigureSpec& f : kFigures) {
        if (!scenario_wants(inputs, f.figure)) continue;
        const std::size_t i = static_cast<std::size_t>(f.figure);
        out.push_back(compare_figure(f.figure, expected[i], current[i], tolerances.of(f.figure)));
    }
    return out;
}

CheckSummary summarize(const std::vector<ScenarioCheck>& checks) {
    CheckSummary s;
    for (const ScenarioCheck& sc : checks) {
        ++s.scenarios;
        if (sc.error) ++s.errors;
        for (const FigureCheck& f : sc.figures) {
            ++s.figures;
            switch (f.verdict) {
                case Verdict::Unchanged: ++s.unchanged; break;
                case Verdict::Within: ++s.within; break;
                case Verdict::Improvement: ++s.improvements; break;
                case Verdict::Regression: ++s.regressions; break;
            }
        }
    }
    return s;
}

int check_exit_code(const CheckSummary& s, const std::vector<ScenarioCheck>& checks, bool strict) {
    if (s.errors > 0) {
        for (const ScenarioCheck& c : checks)
            if (c.error && c.error_kind == ErrorKind::Data) return 65;
        return 2;
    }
    if (s.regressions > 0 || (strict && s.improvements > 0)) return 1;
    return 0;
}

ProvenanceCheck compare_provenance(const std::optional<Provenance>& baseline, const Provenance& current) {
    ProvenanceCheck out;
    out.current_kvplan = current.kvplan;
    if (!baseline) return out;
    out.recorded = true;
    out.baseline_kvplan = baseline->kvplan;
    // A commit compares only when both sides know theirs (a build outside a git checkout has none).
    const KvplanBuild& was = baseline->kvplan;
    out.kvplan_changed =
        was.version != current.kvplan.version || (!was.commit.empty() && !current.kvplan.commit.empty() && was.commit != current.kvplan.commit);
    for (const auto& [model, now] : current.models) {
        ModelChange c;
        c.model = model;
        c.current = now;
        auto it = baseline->models.find(model);
        if (it != baseline->models.end()) {
            const ModelProvenance& was = it->second;
            c.baseline = was;
            c.resolution_changed = was.kind != now.kind;
            c.revision_changed = !c.resolution_changed && (was.revision != now.revision || was.repo_id != now.repo_id);
            c.config_changed = !was.config_sha256.empty() && !now.config_sha256.empty() && was.config_sha256 != now.config_sha256;
            if (!c.resolution_changed && !c.revision_changed && !c.config_changed) continue;
        }
        out.models.push_back(std::move(c));
    }
    return out;
}

}  // namespace kvplan
