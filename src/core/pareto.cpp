#include "core/pareto.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace kvplan {

std::vector<std::size_t> pareto_front(const std::vector<ParetoPoint>& points) {
    // From the largest x down (ties: largest y first, then input order), a
    // point is on the front exactly when its y beats every y seen so far:
    // those all have an x at least as large.
    std::vector<std::size_t> order(points.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return points[a].x != points[b].x ? points[a].x > points[b].x : points[a].y > points[b].y;
    });
    std::vector<std::size_t> front;
    double best_y = -std::numeric_limits<double>::infinity();
    for (std::size_t i : order)
        if (points[i].y > best_y) {
            front.push_back(i);
            best_y = points[i].y;
        }
    std::reverse(front.begin(), front.end());
    return front;
}

}  // namespace kvplan
