#include "report/fields.hpp"

#include "report/diff_report.hpp"
#include "report/engines_report.hpp"
#include "report/gpus_report.hpp"
#include "report/recommend_report.hpp"
#include "report/simulate_report.hpp"
#include "report/size_report.hpp"
#include "report/slo_report.hpp"

namespace kvplan {

std::vector<FieldListInfo> all_field_lists() {
    return {
        describe_fields("gpus: a device", gpu_fields()),
        describe_fields("engines: a speed profile", engine_fields()),
        describe_fields("size: a layer group", layer_group_fields()),
        describe_fields("diff: a figure", diff_row_fields()),
        describe_fields("simulate: a latency metric", latency_fields()),
        describe_fields("recommend: a configuration", recommend_fields()),
        describe_fields("recommend --slo: a candidate's fleet", slo_fleet_fields()),
        describe_fields("recommend --slo: a candidate's latency", slo_latency_fields()),
    };
}

}  // namespace kvplan
