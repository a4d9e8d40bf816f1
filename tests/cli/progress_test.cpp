// recommend's progress on stderr (cli/progress.hpp), driven by hand: nothing
// in the first second, then plain lines every 5 s on a file or pipe, or one
// line rewritten in place on a terminal and cleared at the end.
#include "cli/progress.hpp"

#include <sstream>

#include <catch2/catch.hpp>

using namespace kvplan;

TEST_CASE("progress as plain lines: none in the first second, then one every 5 s with the count once known") {
    ProgressText p(ProgressMode::Lines, "recommend");
    CHECK(p.at(0.5).empty());
    CHECK(p.at(1.0) == "kvplan: recommend: searching, 1 s\n");
    CHECK(p.at(3.0).empty());  // 2 s after the last line
    p.update(12, 40);
    CHECK(p.at(6.0) == "kvplan: recommend: searched 12 of 40 candidates, 6 s\n");
    CHECK(p.at(10.9).empty());
    CHECK(p.finish().empty());  // the lines stay as written
}

TEST_CASE("progress on a terminal: one line rewritten in place and cleared at the end, and a short search writes nothing") {
    ProgressText p(ProgressMode::InPlace, "recommend");
    CHECK(p.at(0.9).empty());
    CHECK(p.finish().empty());  // nothing shown yet: nothing to clear
    CHECK(p.at(1.2) == "\rkvplan: recommend: searching, 1 s\x1b[K");
    CHECK(p.at(1.3) == "\rkvplan: recommend: searching, 1 s\x1b[K");
    CHECK(p.finish() == "\r\x1b[K");
    ProgressText off(ProgressMode::Off, "recommend");
    CHECK(off.at(100).empty());
}

TEST_CASE("progress goes nowhere with KVPLAN_PROGRESS=0, and a stream that is not stderr is never a terminal") {
    std::ostringstream err;
    ::setenv("KVPLAN_PROGRESS", "0", 1);
    CHECK(progress_mode(err) == ProgressMode::Off);
    ::unsetenv("KVPLAN_PROGRESS");
    CHECK(progress_mode(err) == ProgressMode::Lines);
    {
        const SearchProgress quick(err, ProgressMode::Lines, "recommend");  // stops well within its first second
    }
    CHECK(err.str().empty());
}
