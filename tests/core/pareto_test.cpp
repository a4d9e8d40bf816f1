// core/pareto: the front of points by hand.
#include "core/pareto.hpp"

#include <catch2/catch.hpp>

using namespace kvplan;

TEST_CASE("the Pareto front of three given points and a dominated one, by hand") {
    // (1.5, 7) is beaten on both axes by (2, 8); the other three each lead
    // on one axis: (1, 10) on y, (3, 3) on x, (2, 8) between them.
    const std::vector<ParetoPoint> pts = {{2, 8}, {1.5, 7}, {3, 3}, {1, 10}};
    CHECK(pareto_front(pts) == std::vector<std::size_t>{3, 0, 2});  // by x: 1, 2, 3
}

TEST_CASE("the Pareto front keeps the first of equal points and drops one tied on an axis but lower on the other") {
    // (2, 5) and (2, 5) are equal: the first stays. (2, 4) ties on x and loses on y; (1, 5) ties on y and loses on x.
    const std::vector<ParetoPoint> pts = {{2, 5}, {2, 4}, {2, 5}, {1, 5}};
    CHECK(pareto_front(pts) == std::vector<std::size_t>{0});
    CHECK(pareto_front({}).empty());
    // A falling line is all front, as roofline's batches are: more per GPU, less per user.
    CHECK(pareto_front({{200, 150}, {100, 5000}, {30, 15000}}) == std::vector<std::size_t>{2, 1, 0});
}
