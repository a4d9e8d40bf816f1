#include "core/memory/budget.hpp"

#include <cmath>
#include <utility>

#include "core/checked.hpp"

namespace kvplan {

namespace {

BudgetLine line(std::string label, std::int64_t bytes, char op) {
    return BudgetLine{std::move(label), bytes, op, std::nullopt, false};
}

std::int64_t apply_fraction(std::int64_t bytes, double f) {
    return static_cast<std::int64_t>(std::floor(static_cast<double>(bytes) * f));
}

}  // namespace

MemoryBudget make_budget(const BudgetInputs& in) {
    MemoryBudget b;
    b.engine = in.engine;
    b.total_bytes = in.total_bytes;
    b.mem_fraction = in.mem_fraction;
    b.weights_bytes = in.weights_bytes;
    b.overhead = in.overhead;
    for (const OverheadTerm& t : in.overhead)
        if (t.in_pool) b.overhead_bytes = checked_add(b.overhead_bytes, t.bytes, "overhead bytes");

    const std::string flag = mem_fraction_flag(in.engine);
    b.lines.push_back(line("memory the engine sees", in.total_bytes, ' '));
    if (fraction_of_free_memory(in.engine)) {
        const std::int64_t free_bytes = in.total_bytes - in.weights_bytes - b.overhead_bytes;
        b.lines.push_back(line("weights on this GPU", in.weights_bytes, '-'));
        for (const OverheadTerm& t : in.overhead)
            if (t.in_pool) b.lines.push_back(line(t.name, t.bytes, '-'));
        b.lines.push_back(line("free after loading", free_bytes, '='));
        b.usable_bytes = free_bytes;
        b.kv_pool_bytes = free_bytes > 0 ? apply_fraction(free_bytes, in.mem_fraction) : free_bytes;
        b.lines.push_back({flag, b.kv_pool_bytes, 'x', in.mem_fraction, true});
    } else {
        b.usable_bytes = apply_fraction(in.total_bytes, in.mem_fraction);
        b.lines.push_back({flag, b.usable_bytes, 'x', in.mem_fraction, false});
        b.lines.push_back(line("weights on this GPU", in.weights_bytes, '-'));
        for (const OverheadTerm& t : in.overhead)
            if (t.in_pool) b.lines.push_back(line(t.name, t.bytes, '-'));
        b.kv_pool_bytes = b.usable_bytes - in.weights_bytes - b.overhead_bytes;
    }
    if (in.kv_pool_bytes) {
        // The given pool replaces the arithmetic: the computed lines would not add up to it.
        b.kv_pool_given = true;
        b.kv_pool_bytes = *in.kv_pool_bytes;
        b.lines = {line("KV pool (given by --kv-pool)", b.kv_pool_bytes, ' ')};
    } else {
        b.lines.push_back(line("KV pool", b.kv_pool_bytes, '='));
    }
    return b;
}

}  // namespace kvplan
