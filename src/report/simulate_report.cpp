#include "report/simulate_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/digits.hpp"
#include "core/units.hpp"
#include "report/compare_report.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

// Seconds in the JSON, milliseconds in the table.
const Fields<LatencyRow>& latency_fields() {
    using J = nlohmann::ordered_json;
    using R = LatencyRow;
    auto stat = [](const char* key, double Distribution::*figure) {
        return Field<R>{.key = key,
                        .kind = FieldKind::Number,
                        .json = [figure](const R& r) { return J(r.seconds.*figure); },
                        .header = key,
                        .cell = [figure](const R& r) { return fmt::format("{:.1f}", r.seconds.*figure * 1000); }};
    };
    static const Fields<R> fields = {
        {.header = "latency (ms)", .cell = [](const R& r) { return r.name; }},
        stat("mean", &Distribution::mean),
        stat("p50", &Distribution::p50),
        stat("p90", &Distribution::p90),
        stat("p99", &Distribution::p99),
        stat("max", &Distribution::max),
    };
    return fields;
}

namespace {

// The JSON of one metric's distribution: its key (ttft_s) names the unit.
nlohmann::ordered_json dist_json(const Distribution& d) {
    return fields_json(latency_fields(), LatencyRow{"", d});
}

// "DP 8 x TP 1 (EP 8)": one replica's layout.
std::string layout_words(const DpLayoutReport& l) {
    return fmt::format("DP {} x TP {} (EP {})", l.dp, l.attention_tp, l.ep);
}

// A P/D pool's replica: "tp 2", or "DP 8 x TP 1 (EP 8)".
std::string pool_words(const DisaggPool& p) {
    return p.dp > 1 || p.ep > 1 ? fmt::format("DP {} x TP {} (EP {})", p.dp, p.tp, p.ep) : fmt::format("tp {}", p.tp);
}

// The layout line: ranks, experts, nodes.
std::string layout_line(const DpLayoutReport& l) {
    const std::string experts = l.ep > 1 ? fmt::format("{} routed experts a GPU", l.experts_per_gpu)
                                         : fmt::format("routed experts split as tensors over the {} GPUs", l.gpus);
    std::string out = fmt::format("layout: {} = {} GPUs a replica, {}{}; ", layout_words(l), l.gpus, experts,
                                  l.expert_imbalance > 1 ? fmt::format(", busiest EP rank {:.2f}x the mean", l.expert_imbalance) : "");
    const char* ranks = l.sglang ? "DP attention schedulers" : "engine cores";
    out += l.dp > 1 ? fmt::format("{} {} stepping in lockstep, the KV pool above each", l.dp, ranks) : l.sglang ? "one scheduler" : "one engine core";
    if (l.nodes > 1) out += fmt::format("; {} nodes of {} GPUs, {} between them", l.nodes, l.gpus_per_node, l.nic);
    if (l.two_batch_overlap) out += "; two-batch overlap";
    return out;
}

// The answer in words: the rate, the tail that matters, and what went wrong.
std::string sentence(const SimulateResult& r) {
    const SimSummary& s = r.summary;
    std::string servers = "one " + r.gpu_name;
    if (s.replicas > 1 && r.pp > 1) servers = fmt::format("{} replicas, each a {}-stage pipeline on {} ({})", s.replicas, r.pp, r.gpu_name, r.router);
    else if (s.replicas > 1) servers = fmt::format("{} replicas on {} ({})", s.replicas, r.gpu_name, r.router);
    else if (r.pp > 1) servers = fmt::format("one {}-stage pipeline on {}", r.pp, r.gpu_name);
    if (r.layout) {
        const std::string group = layout_words(*r.layout);
        servers = s.replicas > 1 ? fmt::format("{} replicas, each {} on {} ({})", s.replicas, group, r.gpu_name, r.router)
                                 : fmt::format("{} on {}", group, r.gpu_name);
    }
    if (r.disagg) {
        const DisaggReport& d = *r.disagg;
        servers = fmt::format("{} prefill ({}, {}) and {} decode ({}, {}) replicas", d.prefill.stats.size(), d.prefill.gpu_name,
                              pool_words(d.prefill), d.decode.stats.size(), d.decode.gpu_name, pool_words(d.decode));
    }
    // The load the latencies belong to: the arrival rate of an open loop
    // (what --rate or the trace offers), or a closed loop's requests in
    // flight; the throughput over the whole run, drain included, beside it.
    std::string load = fmt::format("At {:.2f} requests/s", s.requests_per_s);
    std::string done = "";
    const std::vector<RequestRecord>& q = r.run.requests;
    if (r.concurrency > 0) {
        load = fmt::format("With {} requests in flight", group_digits(r.concurrency));
        done = fmt::format(" ({:.2f} a second)", s.requests_per_s);
    } else if (q.size() > 1 && q.back().arrival_s > q.front().arrival_s) {
        const double offered = static_cast<double>(q.size() - 1) / (q.back().arrival_s - q.front().arrival_s);
        load = fmt::format("At {:.2f} requests/s arriving", offered);
        done = fmt::format(" ({:.2f} a second over the run, its drain included)", s.requests_per_s);
    }
    std::string out =
        fmt::format("{}, {} serve{} {} of {} requests{} with p99 TTFT {:.2f} s and p99 TPOT {:.1f} ms", load, servers, s.replicas > 1 ? "" : "s",
                    group_digits(s.completed), group_digits(s.requests), done, s.ttft_s.p99, s.tpot_s.p99 * 1000);
    out += s.preemptions > 0 ? fmt::format("; {} {} recomputed {} tokens", group_digits(s.preemptions),
                                           r.engine == "sglang" ? "retractions" : "preemptions", group_digits(s.recomputed_tokens))
                             : "; nothing was preempted";
    if (s.rejected > 0) out += fmt::format("; {} requests never fit the KV pool", group_digits(s.rejected));
    if (r.disagg) out += fmt::format("; p99 KV transfer {:.1f} ms", r.disagg->transfer_s.p99 * 1000);
    if (s.slo_attainment)
        out += fmt::format("; {:.1f}% met every SLO (goodput {:.2f} requests/s)", *s.slo_attainment * 100, *s.goodput_requests_per_s);
    return out + ".";
}

const char* group_kind_name(KvGroupKind k) {
    switch (k) {
        case KvGroupKind::Sliding: return "sliding";
        case KvGroupKind::Chunked: return "chunked";
        case KvGroupKind::Mamba: return "mamba";
        case KvGroupKind::Full: break;
    }
    return "full";
}

// "7 KV-cache groups: 6 sliding(512), 1 full" (runs of equal groups, in order).
std::string groups_line(const std::vector<KvGroup>& groups) {
    std::string out = fmt::format("{} KV-cache groups:", groups.size());
    for (std::size_t i = 0; i < groups.size();) {
        std::size_t j = i;
        while (j < groups.size() && groups[j] == groups[i]) ++j;
        const KvGroup& g = groups[i];
        out += fmt::format("{} {} {}", i == 0 ? "" : ",", j - i, group_kind_name(g.kind));
        if (g.kind == KvGroupKind::Sliding || g.kind == KvGroupKind::Chunked) out += fmt::format("({})", g.window_tokens);
        i = j;
    }
    return out;
}

// "prefill: 1 x NVIDIA H100 SXM 80GB, tp 1; KV pool ... blocks of 16 tokens each; ..."
std::string pool_line(const char* side, const DisaggPool& p) {
    return fmt::format("{}: {} x {}, {}; KV pool {} blocks of {} tokens {}; max_num_seqs {}, max_num_batched_tokens {}, prefix caching {}", side,
                       p.stats.size(), p.gpu_name, pool_words(p), group_digits(p.config.num_gpu_blocks), p.config.block_size,
                       p.dp > 1 ? "a DP rank" : "each", p.config.max_num_seqs, group_digits(p.config.max_num_batched_tokens),
                       p.config.prefix_caching ? "on" : "off") +
           (p.config.groups.empty() ? "" : "; " + groups_line(p.config.groups));
}

// One P/D replica's share of its peak KV: a DP replica's fullest rank over one rank's pool.
double pool_peak_share(const ReplicaStats& q, std::int64_t dp) {
    const std::int64_t blocks = q.total_blocks / std::max<std::int64_t>(1, dp);
    return blocks > 0 ? static_cast<double>(q.peak_blocks_used) / static_cast<double>(blocks) : 0.0;
}

// The link in words.
std::string link_line(const DisaggReport& d) {
    return fmt::format("KV transfer: {}, {:.1f} GB/s per direction per rank, {:.0f} us latency; {} B per token per rank (decode tp {}), {}", d.link,
                       d.link_bytes_per_s / 1e9, d.link_latency_s * 1e6, group_digits(d.kv_bytes_per_token_per_rank), d.decode.tp,
                       d.layerwise ? "layer by layer (the last layer's share exposed)" : "pulled whole after the prefill");
}

double peak_share(const ReplicaStats& q) {
    return q.total_blocks > 0 ? static_cast<double>(q.peak_blocks_used) / static_cast<double>(q.total_blocks) : 0.0;
}

// One row per DP rank, up to 16 of them; a larger group in one line of spreads.
std::string dp_ranks_text(const std::vector<ReplicaStats>& ranks) {
    if (ranks.size() > 16) {
        const auto [fewest, most] =
            std::minmax_element(ranks.begin(), ranks.end(), [](const ReplicaStats& a, const ReplicaStats& b) { return a.requests < b.requests; });
        const auto fullest =
            std::max_element(ranks.begin(), ranks.end(), [](const ReplicaStats& a, const ReplicaStats& b) { return peak_share(a) < peak_share(b); });
        return "\n" + fit_line(fmt::format("{} DP ranks: {} to {} requests each; the fullest peaked at {:.1f}% of its KV pool", ranks.size(),
                                           group_digits(fewest->requests), group_digits(most->requests), peak_share(*fullest) * 100),
                               Width::Fit);
    }
    Table p({"DP rank", "requests", "steps", "preemptions", "peak KV usage"}, 1);
    for (std::size_t i = 0; i < ranks.size(); ++i)
        p.add({std::to_string(i), group_digits(ranks[i].requests), group_digits(ranks[i].steps), group_digits(ranks[i].preemptions),
               fmt::format("{:.1f}%", peak_share(ranks[i]) * 100)});
    return "\n" + p.render_text();
}

}  // namespace

std::string render_simulate_table(const SimulateResult& r) {
    const SimSummary& s = r.summary;
    std::string out = fmt::format("kvplan simulate: {} on {}\n", printable(r.model_label), printable(r.gpu_name));
    if (r.disagg) {
        const DisaggReport& d = *r.disagg;
        out = fit_line(fmt::format("kvplan simulate: {}, prefill and decode disaggregated", r.model_label), Width::Fit);
        out += fit_line("workload " + r.workload + "; router " + r.router, Width::Fit);
        out += fit_line(pool_line("prefill", d.prefill), Width::Fit);
        out += fit_line(pool_line("decode", d.decode), Width::Fit);
        out += fit_line(link_line(d), Width::Fit);
    } else if (r.engine == "sglang")
        out += fit_line(fmt::format("SGLang's scheduler ({}); workload {}; KV pool {} tokens ({}); max_running_requests {}, "
                                    "chunked_prefill_size {}, radix cache {}",
                                    r.schedule_policy, r.workload, group_digits(r.config.num_gpu_blocks), r.pool_source, r.config.max_num_seqs,
                                    group_digits(r.config.max_num_batched_tokens), r.config.prefix_caching ? "on" : "off"),
                        Width::Fit);
    else
        out += fit_line(
            fmt::format("workload {}; KV pool {} blocks of {} tokens ({}); max_num_seqs {}, max_num_batched_tokens {}, "
                        "prefix caching {}",
                        r.workload, group_digits(r.config.num_gpu_blocks), r.config.block_size, r.pool_source, r.config.max_num_seqs,
                        group_digits(r.config.max_num_batched_tokens), r.config.prefix_caching ? "on" : "off") +
                (r.config.groups.empty() ? "" : "; " + groups_line(r.config.groups)) +
                (r.pp > 1 ? fmt::format("; {} pipeline stages, the pool of the stage that holds the fewest blocks", r.pp) : "") +
                (r.config.cpu_tier.blocks > 0
                     ? fmt::format("; CPU tier {} blocks{} ({} per rank), host link {:.0f} GB/s per direction",
                                   group_digits(r.config.cpu_tier.blocks), r.layout && r.layout->dp > 1 ? " a DP rank" : "",
                                   binary_size(r.config.cpu_tier.blocks * r.config.cpu_tier.block_bytes), r.config.cpu_tier.link_bytes_per_s / 1e9)
                     : "") +
                (r.spec ? fmt::format("; speculative decoding ({}, {} drafts a step; the drafter's KV takes {} blocks)", r.spec->method,
                                      r.spec->rates.size(), group_digits(r.spec->blocks_without_draft - r.config.num_gpu_blocks))
                        : ""),
            Width::Fit);
    if (r.layout) out += fit_line(layout_line(*r.layout), Width::Fit);
    out += "\n";
    std::vector<LatencyRow> latency = {{"TTFT", s.ttft_s}, {"TPOT", s.tpot_s}, {"ITL", s.itl_s}, {"E2E", s.e2e_s}, {"queue", s.queue_s}};
    if (r.disagg) latency.push_back({"KV transfer", r.disagg->transfer_s});
    out += fields_table(latency_fields(), latency, 1).render_text();
    out += "\n";
    Table k({"figure", "value"}, 2);
    k.add({"completed requests", group_digits(s.completed) + " of " + group_digits(s.requests)});
    k.add({"simulated duration", fmt::format("{:.1f} s ({} engine steps)", s.duration_s, group_digits(s.steps))});
    k.add({"throughput",
           fmt::format("{:.2f} req/s, {:.0f} input + {:.0f} output tokens/s", s.requests_per_s, s.input_tokens_per_s, s.output_tokens_per_s)});
    k.add({r.engine == "sglang" ? "retractions" : "preemptions",
           fmt::format("{} ({} tokens recomputed)", group_digits(s.preemptions), group_digits(s.recomputed_tokens))});
    k.add({"prefix cache hit rate", fmt::format("{:.1f}% of prompt tokens", s.prefix_cache_hit_rate * 100)});
    // The CPU tier's hits and its traffic on two rows: on one they pass the 100-column table width.
    if (s.prefix_cache_hit_rate_cpu) {
        k.add({"CPU tier hit rate",
               fmt::format("{:.1f}% of prompt tokens (GPU {:.1f}%)", *s.prefix_cache_hit_rate_cpu * 100, s.prefix_cache_hit_rate_gpu * 100)});
        k.add({"CPU tier traffic", fmt::format("{} stored, {} loaded per rank", binary_size(s.offload_bytes), binary_size(s.onload_bytes))});
    }
    if (r.spec && r.run.spec_verifies > 0)
        k.add({"speculative decoding",
               fmt::format("{:.2f} tokens a verified step (expected {:.2f}), {:.1f}% of {} drafts kept",
                           static_cast<double>(r.run.spec_kept_tokens) / static_cast<double>(r.run.spec_verifies), r.spec->expected_tokens_per_step,
                           100.0 * static_cast<double>(r.run.spec_accepted) / static_cast<double>(std::max<std::int64_t>(1, r.run.spec_drafts)),
                           group_digits(r.run.spec_drafts))});
    const char* unit = r.engine == "sglang" ? "tokens" : "blocks";
    if (r.disagg && !r.run.dp_ranks.empty())
        k.add({"peak KV cache usage", fmt::format("{:.1f}%, the fullest of {} engine cores ({} blocks in all)", s.kv_peak_usage * 100,
                                                  r.run.dp_ranks.size(), group_digits(s.kv_blocks_total))});
    else if (r.disagg)
        k.add({"peak KV cache usage", fmt::format("{:.1f}%, the fullest of {} replicas ({} blocks in all)", s.kv_peak_usage * 100, s.replicas,
                                                  group_digits(s.kv_blocks_total))});
    else if (r.run.dp_ranks.size() > 1)
        k.add({"peak KV cache usage",
               fmt::format("{:.1f}% of {} {}, the fullest of {} DP ranks ({} in all)", s.kv_peak_usage * 100, group_digits(r.config.num_gpu_blocks),
                           unit, r.run.dp_ranks.size(), group_digits(s.kv_blocks_total))});
    else if (s.replicas > 1)
        k.add({"peak KV cache usage", fmt::format("{:.1f}% of {} {}, the fullest of {} replicas ({} in all)", s.kv_peak_usage * 100,
                                                  group_digits(r.config.num_gpu_blocks), unit, s.replicas, group_digits(s.kv_blocks_total))});
    else k.add({"peak KV cache usage", fmt::format("{:.1f}% of {} {}", s.kv_peak_usage * 100, group_digits(s.kv_blocks_total), unit)});
    if (s.goodput_requests_per_s)
        k.add({"goodput", fmt::format("{:.2f} req/s ({:.1f}% of requests met every SLO)", *s.goodput_requests_per_s, *s.slo_attainment * 100)});
    out += k.render_text();
    if (r.run.replicas.size() > 1) {
        out += "\n";
        Table p({"replica", "requests", "steps", "preemptions", "peak KV usage"}, 1);
        const std::size_t n_prefill = r.disagg ? r.disagg->prefill.stats.size() : 0;
        for (std::size_t i = 0; i < r.run.replicas.size(); ++i) {
            const ReplicaStats& q = r.run.replicas[i];
            const std::string name = !r.disagg       ? std::to_string(i)
                                     : i < n_prefill ? fmt::format("prefill {}", i)
                                                     : fmt::format("decode {}", i - n_prefill);
            const std::int64_t dp = !r.disagg ? 1 : i < n_prefill ? r.disagg->prefill.dp : r.disagg->decode.dp;
            p.add({name, group_digits(q.requests), group_digits(q.steps), group_digits(q.preemptions),
                   fmt::format("{:.1f}%", pool_peak_share(q, dp) * 100)});
        }
        out += p.render_text();
    }
    if (r.run.dp_ranks.size() > 1 && !r.disagg) out += dp_ranks_text(r.run.dp_ranks);  // P/D: the replica rows above
    out += "\n" + fit_line(sentence(r), Width::Fit);
    for (const std::string& n : r.notes) out += fit_line("note: " + n, Width::Fit, "", "  ");
    if (r.compare) out += "\n" + render_compare_table(*r.compare);
    return out;
}

std::string render_simulate_json(const SimulateResult& r) {
    const SimSummary& s = r.summary;
    nlohmann::ordered_json j;
    j["engine"] = r.engine;
    j["schedule_policy"] = r.schedule_policy;
    j["requests"] = s.requests;
    j["completed"] = s.completed;
    j["rejected"] = s.rejected;
    j["duration_s"] = s.duration_s;
    j["ttft_s"] = dist_json(s.ttft_s);
    j["tpot_s"] = dist_json(s.tpot_s);
    j["itl_s"] = dist_json(s.itl_s);
    j["e2e_s"] = dist_json(s.e2e_s);
    j["queue_s"] = dist_json(s.queue_s);
    j["throughput_input_tokens_per_s"] = s.input_tokens_per_s;
    j["throughput_output_tokens_per_s"] = s.output_tokens_per_s;
    j["requests_per_s"] = s.requests_per_s;
    j["preemptions"] = s.preemptions;
    j["recomputed_tokens"] = s.recomputed_tokens;
    j["steps"] = s.steps;
    j["prefix_cache_hit_rate"] = s.prefix_cache_hit_rate;
    j["prefix_cache_hit_rate_gpu"] = s.prefix_cache_hit_rate_gpu;
    j["prefix_cache_hit_rate_cpu"] =
        s.prefix_cache_hit_rate_cpu ? nlohmann::ordered_json(*s.prefix_cache_hit_rate_cpu) : nlohmann::ordered_json(nullptr);
    j["cpu_tier_blocks"] = r.config.cpu_tier.blocks;  // per engine core (a DP rank each), 0 without --cpu-offload
    j["offload_bytes"] = s.offload_bytes;
    j["onload_bytes"] = s.onload_bytes;
    if (r.spec) {
        nlohmann::ordered_json x;
        x["method"] = r.spec->method;
        x["proposer"] = r.spec->proposer;
        x["spec_tokens"] = r.spec->rates.size();
        x["acceptance"] = r.spec->rates;
        x["expected_tokens_per_step"] = r.spec->expected_tokens_per_step;
        x["verified_steps"] = r.run.spec_verifies;
        x["drafts"] = r.run.spec_drafts;
        x["accepted_drafts"] = r.run.spec_accepted;
        x["kept_tokens"] = r.run.spec_kept_tokens;
        x["mean_tokens_per_step"] =
            r.run.spec_verifies > 0 ? nlohmann::ordered_json(static_cast<double>(r.run.spec_kept_tokens) / static_cast<double>(r.run.spec_verifies))
                                    : nlohmann::ordered_json(nullptr);
        x["draft_kv_bytes_per_token"] = r.spec->draft_kv_bytes_per_token;
        x["draft_weights_bytes_per_gpu"] = r.spec->draft_weights_bytes_per_gpu;
        j["speculative"] = x;
    } else {
        j["speculative"] = nullptr;
    }
    j["kv_blocks_total"] = s.kv_blocks_total;
    j["block_size_tokens"] = r.config.block_size;
    if (!r.config.groups.empty()) {  // hybrid models: each group takes its own blocks
        j["kv_cache_groups"] = nlohmann::ordered_json::array();
        for (const KvGroup& g : r.config.groups)
            j["kv_cache_groups"].push_back(
                {{"kind", group_kind_name(g.kind)},
                 {"window_tokens", g.window_tokens > 0 ? nlohmann::ordered_json(g.window_tokens) : nlohmann::ordered_json(nullptr)},
                 {"block_size_tokens", g.block_tokens}});
    }
    if (r.pp > 1) j["pipeline_stages"] = r.pp;  // only with --pp, so that a run without it prints what it always did
    j["kv_peak_usage"] = s.kv_peak_usage;
    j["router"] = r.router;
    j["replicas"] = nlohmann::ordered_json::array();
    for (const ReplicaStats& q : r.run.replicas)
        j["replicas"].push_back(
            {{"requests", q.requests},
             {"steps", q.steps},
             {"preemptions", q.preemptions},
             {"kv_blocks_total", q.total_blocks},
             {"kv_peak_usage", q.total_blocks > 0 ? static_cast<double>(q.peak_blocks_used) / static_cast<double>(q.total_blocks) : 0.0}});
    if (r.layout) {  // only with --dp / --ep
        const DpLayoutReport& l = *r.layout;
        j["layout"] = {{"dp", l.dp},
                       {"attention_tp", l.attention_tp},
                       {"ep", l.ep},
                       {"gpus_per_replica", l.gpus},
                       {"experts_per_gpu", l.experts_per_gpu},
                       {"nodes", l.nodes},
                       {"gpus_per_node", l.gpus_per_node},
                       {"nic", l.nic.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(l.nic)},
                       {"expert_imbalance", l.expert_imbalance},
                       {"two_batch_overlap", l.two_batch_overlap},
                       {"kv_blocks_per_rank", r.config.num_gpu_blocks}};
        j["dp_ranks"] = nlohmann::ordered_json::array();
        for (const ReplicaStats& q : r.run.dp_ranks)
            j["dp_ranks"].push_back({{"requests", q.requests},
                                     {"steps", q.steps},
                                     {"preemptions", q.preemptions},
                                     {"kv_blocks_total", q.total_blocks},
                                     {"kv_peak_blocks", q.peak_blocks_used},
                                     {"kv_peak_usage", peak_share(q)}});
    }
    j["kv_transfer_s"] = r.disagg ? dist_json(r.disagg->transfer_s) : nlohmann::ordered_json(nullptr);  // null: aggregated
    if (r.disagg) {                                                                                     // the link and the pools, only in P/D runs
        const DisaggReport& d = *r.disagg;
        j["kv_link"] = d.link;
        j["kv_link_bytes_per_s"] = d.link_bytes_per_s;
        j["kv_link_latency_s"] = d.link_latency_s;
        j["kv_transfer_layerwise"] = d.layerwise;
        j["kv_transfer_bytes_per_token"] = d.kv_bytes_per_token_per_rank;
        for (const auto& [key, pool] : {std::pair<const char*, const DisaggPool*>{"prefill_pool", &d.prefill}, {"decode_pool", &d.decode}}) {
            nlohmann::ordered_json p;
            p["gpu"] = pool->gpu_name;
            p["tp"] = pool->tp;
            p["dp"] = pool->dp;
            p["ep"] = pool->ep;
            p["kv_blocks_per_replica"] = pool->config.num_gpu_blocks;  // per DP rank with dp > 1
            p["block_size_tokens"] = pool->config.block_size;
            p["max_num_seqs"] = pool->config.max_num_seqs;
            p["max_num_batched_tokens"] = pool->config.max_num_batched_tokens;
            p["replicas"] = nlohmann::ordered_json::array();
            for (const ReplicaStats& q : pool->stats)
                p["replicas"].push_back({{"requests", q.requests},
                                         {"steps", q.steps},
                                         {"preemptions", q.preemptions},
                                         {"kv_blocks_total", q.total_blocks},
                                         {"kv_peak_blocks", q.peak_blocks_used},
                                         {"kv_peak_usage", pool_peak_share(q, pool->dp)}});
            p["dp_ranks"] = nullptr;  // one engine a replica
            if (pool->dp > 1) {
                p["dp_ranks"] = nlohmann::ordered_json::array();
                for (std::size_t i = 0; i < pool->dp_ranks.size(); ++i) {
                    const ReplicaStats& q = pool->dp_ranks[i];
                    p["dp_ranks"].push_back({{"replica", i / static_cast<std::size_t>(pool->dp)},
                                             {"rank", i % static_cast<std::size_t>(pool->dp)},
                                             {"requests", q.requests},
                                             {"steps", q.steps},
                                             {"preemptions", q.preemptions},
                                             {"kv_blocks_total", q.total_blocks},
                                             {"kv_peak_blocks", q.peak_blocks_used},
                                             {"kv_peak_usage", peak_share(q)}});
                }
            }
            j[key] = std::move(p);
        }
    }
    j["goodput_requests_per_s"] = s.goodput_requests_per_s ? nlohmann::ordered_json(*s.goodput_requests_per_s) : nlohmann::ordered_json(nullptr);
    j["slo_attainment"] = s.slo_attainment ? nlohmann::ordered_json(*s.slo_attainment) : nlohmann::ordered_json(nullptr);
    j["notes"] = r.notes;
    if (r.compare) j["compare"] = compare_json(*r.compare);
    j["timeseries"] = nlohmann::ordered_json::array();
    for (const TimePoint& p : r.run.timeseries)
        for (std::int64_t k = 0; k < p.seconds; ++k)  // one entry per second, as the engine logs
            j["timeseries"].push_back({{"t_s", p.t_s + static_cast<double>(k)},
                                       {"running", p.running},
                                       {"waiting", p.waiting},
                                       {"kv_cache_usage", p.kv_cache_usage},
                                       {"prompt_tokens_per_s", p.prompt_tokens_per_s},
                                       {"generation_tokens_per_s", p.generation_tokens_per_s}});
    return json_text(j);
}

std::string render_requests_csv(const SimulateResult& r) {
    std::string out = "request,arrival_s,scheduled_s,first_token_s,finish_s,input_tokens,output_tokens,cached_tokens,preemptions,rejected\n";
    for (std::size_t i = 0; i < r.run.requests.size(); ++i) {
        const RequestRecord& q = r.run.requests[i];
        out += fmt::format("{},{:.6f},{:.6f},{:.6f},{:.6f},{},{},{},{},{}\n", i, q.arrival_s, q.scheduled_s, q.first_token_s, q.finish_s,
                           q.input_tokens, q.output_tokens, q.cached_tokens, q.preemptions, q.rejected ? 1 : 0);
    }
    return out;
}

std::string render_timeseries_csv(const SimulateResult& r) {
    std::string out = "t_s,running,waiting,kv_cache_usage,prompt_tokens_per_s,generation_tokens_per_s\n";
    for (const TimePoint& p : r.run.timeseries)
        for (std::int64_t k = 0; k < p.seconds; ++k)
            out += fmt::format("{:.0f},{},{},{:.4f},{:.0f},{:.0f}\n", p.t_s + static_cast<double>(k), p.running, p.waiting, p.kv_cache_usage,
                               p.prompt_tokens_per_s, p.generation_tokens_per_s);
    return out;
}

}  // namespace kvplan
