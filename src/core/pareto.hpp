// The Pareto front of points where more is better on both axes (tokens/s
// per user against tokens/s per GPU): the points no other point beats on one
// axis without losing on the other. Charted by `roofline --plot` and
// `recommend --slo --plot` (pareto.svg).
#pragma once

#include <cstddef>
#include <vector>

namespace kvplan {

struct ParetoPoint {
    double x = 0, y = 0;
};

// Indices of the non-dominated points, by x ascending (so that joining them
// draws the front left to right). Point q dominates p when q.x >= p.x and
// q.y >= p.y with one of them strictly greater; of equal points only the
// first is kept, so the line has no zero-length segment.
std::vector<std::size_t> pareto_front(const std::vector<ParetoPoint>& points);

}  // namespace kvplan
