// Tolerances and verdicts of `kvplan check` (core/regression): exact decimal
// tolerances, exact integer comparisons at the boundary, and which direction
// of change is a regression for each figure.
#include "core/gate/regression.hpp"

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/gate/baseline.hpp"

using namespace kvplan;

TEST_CASE("tolerances parse exactly from decimal percentages") {
    CHECK(parse_tolerance("--tolerance", "0.5%") == 5'000'000);  // 0.005 x 10^9
    CHECK(parse_tolerance("--tolerance", "0%") == 0);
    CHECK(parse_tolerance("--tolerance", "0") == 0);
    CHECK(parse_tolerance("--tolerance", "100%") == 1'000'000'000);
    CHECK(parse_tolerance("--tolerance", "2.3999999%") == 23'999'999);
    CHECK(parse_tolerance("--tolerance", "0.0000001%") == 1);  // one part per billion
    CHECK(parse_tolerance("--tolerance", ".5%") == 5'000'000);
    CHECK_THROWS_AS(parse_tolerance("--tolerance", "0.5"), Error);  // 0.5% or 50%?
    CHECK_THROWS_AS(parse_tolerance("--tolerance", "0.00000001%"), Error);
    CHECK_THROWS_AS(parse_tolerance("--tolerance", "100.1%"), Error);
    CHECK_THROWS_AS(parse_tolerance("--tolerance", "%"), Error);
    CHECK_THROWS_AS(parse_tolerance("--tolerance", "1.2.3%"), Error);
    // A default and figures by key; a modelled figure not named gets at least 5%.
    const Tolerances t = parse_tolerances("--tolerance", "0.5%,decode_step_s=2%");
    CHECK(t.of(Figure::MaxRequests) == 5'000'000);
    CHECK(t.of(Figure::DecodeStepS) == 20'000'000);
    CHECK(t.of(Figure::DecodeTokensPerS) == 50'000'000);
    CHECK(tolerances_text(t) == "0.5% (decode_step_s 2%, decode_tokens_per_s 5%)");
    CHECK(parse_tolerances("--tolerance", "7%").of(Figure::DecodeTokensPerS) == 70'000'000);
    CHECK(tolerances_text(parse_tolerances("--tolerance", "7%")) == "7%");
    CHECK(parse_tolerances("--tolerance", "max_requests=1%", Tolerances{3'000'000, {}}).of(Figure::KvCacheTokens) == 3'000'000);
    CHECK_THROWS_AS(parse_tolerances("--tolerance", "1%,2%"), Error);
    CHECK_THROWS_AS(parse_tolerances("--tolerance", "decode_step=2%"), Error);
    CHECK(tolerance_text(5'000'000) == "0.5%");
    CHECK(tolerance_text(0) == "0%");
    CHECK(tolerance_text(1'000'000'000) == "100%");
    CHECK(tolerance_text(23'999'999) == "2.3999999%");
}

TEST_CASE("the boundary is inclusive and exact, even for byte counts near 2^62") {
    // 200 -> 199 is exactly -0.5%.
    CHECK(compare_figure(Figure::MaxRequests, FigureValue::of(200), FigureValue::of(199), 5'000'000).verdict == Verdict::Within);
    CHECK(compare_figure(Figure::MaxRequests, FigureValue::of(200), FigureValue::of(199), 4'999'999).verdict == Verdict::Regression);
    CHECK(compare_figure(Figure::MaxRequests, FigureValue::of(200), FigureValue::of(201), 0).verdict == Verdict::Improvement);
    // 2^62 bytes and one byte more: a change of 2^-62, beyond any non-zero ppb below it only at 0.
    const std::int64_t big = std::int64_t{1} << 62;
    CHECK(compare_figure(Figure::KvBytesPerSequence, FigureValue::of(big), FigureValue::of(big + 1), 0).verdict == Verdict::Regression);
    CHECK(compare_figure(Figure::KvBytesPerSequence, FigureValue::of(big), FigureValue::of(big + 1), 1).verdict == Verdict::Within);
    CHECK(compare_figure(Figure::KvBytesPerSequence, FigureValue::of(big), FigureValue::of(big), 0).verdict == Verdict::Unchanged);
}

TEST_CASE("lower bytes and time are better, higher tokens, requests and rate are better") {
    auto verdict = [](Figure f, double from, double to) {
        return compare_figure(f, FigureValue::of_real(from), FigureValue::of_real(to), 0).verdict;
    };
    CHECK(compare_figure(Figure::KvBytesPerToken, FigureValue::of(131072), FigureValue::of(65536), 0).verdict == Verdict::Improvement);
    CHECK(compare_figure(Figure::KvCacheTokens, FigureValue::of(419392), FigureValue::of(156080), 0).verdict == Verdict::Regression);
    CHECK(verdict(Figure::DecodeStepS, 0.0156812, 0.0160000) == Verdict::Regression);
    CHECK(verdict(Figure::DecodeTokensPerS, 2040.65, 2000.0) == Verdict::Regression);
    CHECK(verdict(Figure::DecodeTokensPerS, 2040.65, 2100.0) == Verdict::Improvement);
    // 1% of 0.02 s is 0.0002 s: 0.0202 is within 1%, 0.02021 is not.
    CHECK(compare_figure(Figure::DecodeStepS, FigureValue::of_real(0.02), FigureValue::of_real(0.0202), 10'000'000).verdict == Verdict::Within);
    CHECK(compare_figure(Figure::DecodeStepS, FigureValue::of_real(0.02), FigureValue::of_real(0.02021), 10'000'000).verdict == Verdict::Regression);
}

TEST_CASE("a figure that stops or starts applying, or moves from zero, is beyond every tolerance") {
    const FigureCheck gone = compare_figure(Figure::KvCacheTokens, FigureValue::of(1000), FigureValue::null(), 1'000'000'000);
    CHECK(gone.verdict == Verdict::Regression);
    CHECK(!gone.relative_change);
    CHECK(compare_figure(Figure::KvCacheTokens, FigureValue::null(), FigureValue::null(), 0).verdict == Verdict::Unchanged);
    const FigureCheck from_zero = compare_figure(Figure::MaxRequests, FigureValue::of(0), FigureValue::of(3), 1'000'000'000);
    CHECK(from_zero.verdict == Verdict::Improvement);
    CHECK(!from_zero.relative_change);
}

TEST_CASE("exit codes: an error outranks a regression, which outranks a strict improvement") {
    std::vector<ScenarioCheck> checks(2);
    checks[0].figures.push_back(compare_figure(Figure::MaxRequests, FigureValue::of(10), FigureValue::of(11), 0));
    CHECK(check_exit_code(summarize(checks), checks, false) == 0);
    CHECK(check_exit_code(summarize(checks), checks, true) == 1);
    checks[1].figures.push_back(compare_figure(Figure::MaxRequests, FigureValue::of(10), FigureValue::of(9), 0));
    CHECK(check_exit_code(summarize(checks), checks, false) == 1);
    checks[1].error = "gone";
    checks[1].error_kind = ErrorKind::Usage;
    CHECK(check_exit_code(summarize(checks), checks, false) == 2);
    checks[0].error = "broken";
    checks[0].error_kind = ErrorKind::Data;
    CHECK(check_exit_code(summarize(checks), checks, false) == 65);
}

TEST_CASE("reals are kept to six significant digits") {
    CHECK(round_significant(0.00612345678) == 0.00612346);
    CHECK(round_significant(2040.6543) == 2040.65);
    CHECK(round_significant(0) == 0);
}
