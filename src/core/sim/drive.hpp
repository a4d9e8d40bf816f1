// Drives one engine (VllmEngine or SglangEngine) through a whole workload:
// open loop, every request handed over at its arrival; closed loop,
// `concurrency` clients, each sending its next request the moment its last
// one finishes (or is rejected). `records` are the requests' records the
// engine serves (its RequestStates' or SglangStates').
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/sim/scheduler.hpp"
#include "core/sim/workload.hpp"

namespace kvplan {

template <class Engine>
void drive_alone(Engine& e, const Workload& w, std::vector<RequestRecord>& records) {
    const double forever = std::numeric_limits<double>::infinity();
    if (w.concurrency <= 0) {
        for (std::size_t i = 0; i < w.requests.size(); ++i) e.add(i);
        e.advance(forever, false);
        return;
    }
    std::size_t released = 0;
    const auto release = [&] {
        while (released < w.requests.size() && static_cast<std::int64_t>(released) - e.done() < w.concurrency) {
            records[released].arrival_s = e.now();
            e.add(released++);
        }
    };
    release();
    while (e.next_step_s()) {
        e.advance(forever, true);
        release();
    }
}

}  // namespace kvplan
