// VllmEngine's invariants (docs/invariants.md), checked after every step
// when checking is on (the tests, the fuzz_trace target). Each failure is a
// std::logic_error whose message starts with the invariant's id.
#include <string>

#include "core/sim/block_pool.hpp"
#include "core/sim/invariant.hpp"
#include "core/sim/vllm_engine_impl.hpp"

namespace kvplan {

namespace {

[[noreturn]] void violated(const char* id, const std::string& what) {
    throw std::logic_error(std::string(id) + " " + what);
}

std::string req(std::size_t r) {
    return "request " + std::to_string(r);
}

}  // namespace

void check_invariants(const VllmEngine& e) {
    e.impl_->check_invariants();
}

// INV-1: every request added is in exactly one place. The marks are a
// scratch vector kept between calls, cleared as it is walked.
KVPLAN_INVARIANT_WALK void VllmEngine::Impl::check_requests() const {
    std::vector<char>& mark = inv_mark_;
    if (mark.size() != live_.size()) mark.assign(live_.size(), 0);
    std::int64_t held = 0;
    const auto visit = [&](std::size_t r) {
        if (r >= mark.size() || mark[r]) violated("INV-1", "request conservation: " + req(r) + " is in two places");
        mark[r] = 1;
        ++held;
    };
    for (std::size_t r : inbox_) visit(r);
    for (std::size_t r : waiting_) visit(r);
    for (std::size_t r : running_) visit(r);
    for (const KvConnector::Load& l : loads()) visit(l.r);
    for (std::size_t r : inbox_) mark[r] = 0;
    for (std::size_t r : waiting_) mark[r] = 0;
    for (std::size_t r : running_) mark[r] = 0;
    for (const KvConnector::Load& l : loads()) mark[l.r] = 0;
    if (held + done_ != added_)
        violated("INV-1", "request conservation: " + std::to_string(added_) + " added, " + std::to_string(held) + " held and " +
                              std::to_string(done_) + " done");
}

// INV-2 for one request the engine holds or has just finished.
KVPLAN_INVARIANT_WALK void VllmEngine::Impl::check_causal(std::size_t r) const {
    const RequestRecord& rec = records_[r];
    const LiveRequest& l = live_[r];
    double last = rec.arrival_s;
    for (const double s : {rec.scheduled_s, rec.first_token_s, rec.finish_s}) {
        if (s < 0) continue;
        if (s < last || s > t_) violated("INV-2", "causality: " + req(r) + "'s times are out of order");
        last = s;
    }
    if (rec.scheduled_s < 0 && (rec.first_token_s >= 0 || rec.finish_s >= 0)) violated("INV-2", "causality: " + req(r) + " has a token unscheduled");
    if (l.computed < 0 || l.computed > total_tokens(r) || l.generated > w_.requests[r].output_tokens)
        violated("INV-2", "causality: " + req(r) + " computed or sampled more tokens than it has");
}

// INV-3: each block's references are the block-table entries naming it.
KVPLAN_INVARIANT_WALK void VllmEngine::Impl::check_blocks() const {
    if (!kv_cache_.pool().consistent()) violated("INV-3", "block conservation: a block is neither referenced nor free, or the free queue is broken");
    std::vector<std::int64_t>& refs = inv_refs_;
    refs.assign(static_cast<std::size_t>(kv_cache_.pool().total()), 0);
    const auto count = [&](std::size_t r) {
        for (const GroupBlocks& k : live_[r].kv)
            for (std::int64_t b : k.blocks)
                if (b >= 0) refs[static_cast<std::size_t>(b)] += 1;
    };
    for (std::size_t r : waiting_) count(r);
    for (std::size_t r : running_) count(r);
    for (const KvConnector::Load& l : loads()) count(l.r);
    for (std::int64_t b = 0; b < kv_cache_.pool().total(); ++b)
        if (refs[static_cast<std::size_t>(b)] != kv_cache_.pool().refs(b))
            violated("INV-3", "block conservation: block " + std::to_string(b) + " has " + std::to_string(kv_cache_.pool().refs(b)) +
                                  " references, " + std::to_string(refs[static_cast<std::size_t>(b)]) + " in block tables");
}

// INV-4 to INV-7.
KVPLAN_INVARIANT_WALK void VllmEngine::Impl::check_limits() const {
    if (t_ < inv_t_) violated("INV-4", "clock monotonicity: the clock moved back");
    inv_t_ = t_;
    if (!(next_sample_ > t_)) violated("INV-4", "clock monotonicity: a second up to now is not logged");
    const std::vector<TimePoint>& ts = run_.timeseries;
    if (ts.size() >= 2 && !(ts[ts.size() - 2].t_s < ts.back().t_s)) violated("INV-4", "clock monotonicity: the log's seconds go back");
    if (kv_cache_.pool().used() > kv_cache_.pool().total() || run_.peak_blocks_used < kv_cache_.pool().used() ||
        run_.peak_blocks_used > kv_cache_.pool().total())
        violated("INV-5", "KV usage within the pool: " + std::to_string(kv_cache_.pool().used()) + " blocks used, peak " +
                              std::to_string(run_.peak_blocks_used) + ", pool " + std::to_string(kv_cache_.pool().total()));
    if (!ts.empty() && !(ts.back().kv_cache_usage >= 0 && ts.back().kv_cache_usage <= 1))
        violated("INV-5", "KV usage within the pool: a logged usage outside [0, 1]");
    for (std::size_t r : running_) {
        const std::vector<GroupBlocks>& kv = live_[r].kv;
        for (std::size_t g = 0; g < kv_cache_.groups().size(); ++g) {
            const std::int64_t have = g < kv.size() ? static_cast<std::int64_t>(kv[g].blocks.size()) : 0;
            if (have < kv_cache_.blocks_for(g, live_[r].computed))
                violated("INV-6", "a running request's KV is allocated: " + req(r) + " has computed tokens without blocks");
        }
    }
    if (static_cast<std::int64_t>(running_.size()) > c_.max_num_seqs || planned_seqs_ > c_.max_num_seqs ||
        planned_tokens_ > c_.max_num_batched_tokens)
        violated("INV-7", "batch limits: more sequences or tokens than max_num_seqs or max_num_batched_tokens");
}

void VllmEngine::Impl::check_invariants() const {
    check_requests();
    for (std::size_t r : waiting_) check_causal(r);
    for (std::size_t r : running_) check_causal(r);
    for (std::size_t r : finished_) check_causal(r);
    check_limits();
    check_blocks();
}

}  // namespace kvplan
