// recommend --slo --format csv from its field lists (report/slo_report.hpp):
// one header row of the JSON's keys (units in the names), one row per
// candidate shown, the values as the JSON holds them.
#include "report/slo_report.hpp"

#include <catch2/catch.hpp>

using namespace kvplan;

namespace {

// One aggregated candidate, by hand: 30.5 req/s per replica against a 61 req/s
// target is 2 replicas of 1 H100 each; at 2.5 USD per GPU-hour, 5 USD an hour.
SloCandidate h100() {
    SloCandidate c;
    c.gpu = "h100-sxm";
    c.knobs = "default";
    c.serve.batch = 1024;
    c.serve.max_num_batched_tokens = 8192;
    c.outcome.max_rate_rps = 30.5;
    c.outcome.binding = "tpot";
    c.outcome.at_max.ttft_s.p50 = 0.25;
    c.outcome.at_max.ttft_s.p99 = 1.5;
    c.outcome.at_max.tpot_s.p50 = 0.02;
    c.outcome.at_max.tpot_s.p99 = 0.045;
    c.outcome.at_max.e2e_s.p50 = 3;
    c.outcome.at_max.e2e_s.p99 = 7.5;
    c.outcome.at_max.slo_attainment = 0.995;
    c.fleet.replicas = 2;
    c.fleet.gpus = 2;
    c.fleet.usd_per_hour = 5.0;
    return c;
}

}  // namespace

TEST_CASE("recommend --slo CSV: the JSON's keys as one header row, a candidate's values in its row") {
    SloRecommendResult r;
    r.top = 5;
    r.candidates = {h100()};
    const std::string csv = render_slo_csv(r);
    const std::string header =
        "rank,gpu,tp,pp,attention_dp,knobs,kv_dtype,weights_dtype,disaggregated,prefill_replicas,decode_replicas,max_num_seqs,"
        "max_num_batched_tokens,max_rate_per_replica_rps,band_low_rps,band_high_rps,sized_on_rate_rps,replicas,gpus_total,usd_per_hour,usd_per_million_input_tokens,"
        "usd_per_million_output_tokens,usd_per_million_tokens,binding_slo,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,e2e_p50_s,e2e_p99_s,"
        "slo_attainment\n";
    // Unpriced per-token costs, an aggregated candidate's unit counts and
    // the step model's band (none searched) are empty (JSON null); without a
    // band the fleet is sized on the rate itself, 30.5.
    const std::string row = "1,h100-sxm,1,1,1,default,auto,auto,false,,,1024,8192,30.5,,,30.5,2,2,5.0,,,,tpot,0.25,1.5,0.02,0.045,3.0,7.5,0.995\n";
    CHECK(csv == header + row);
}

TEST_CASE("recommend --slo CSV: a cell with a comma is quoted (RFC 4180), and nothing qualifying leaves the header alone") {
    SloRecommendResult r;
    r.top = 5;
    SloCandidate c = h100();
    c.gpu = "lab,gpu";
    r.candidates = {c};
    const std::string csv = render_slo_csv(r);
    CHECK(csv.find("\n1,\"lab,gpu\",1,") != std::string::npos);
    r.candidates.clear();
    CHECK(render_slo_csv(r).find('\n') == render_slo_csv(r).size() - 1);
}
