#include "io/price_file.hpp"

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace {

constexpr std::int64_t kMaxPriceFileBytes = 1 << 20;  // a price list, not a database

// A value as JSON writes it (control characters escaped), cut to fit a message.
std::string shown(const nlohmann::json& value) {
    const std::string text = value.dump();
    return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

}  // namespace

PriceFile read_price_file(const std::string& path, const std::vector<Gpu>& known) {
    nlohmann::json doc;
    try {
        doc = read_json_file(path, kMaxPriceFileBytes, nullptr, JsonKeys::Unique);
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Usage) usage_error(std::string("--price-file ") + e.what());  // name the flag: the file is not there
        throw;
    }
    if (!doc.is_object()) data_error(path + ": expected a JSON object with usd_per_gpu_hour, found " + json_type_name(doc));
    PriceFile out;
    for (const auto& [key, value] : doc.items()) {
        if (key == "source") {
            if (!value.is_string()) data_error(path + ": source: expected a string, found " + json_type_name(value));
            out.source = value.get<std::string>();
        } else if (key != "usd_per_gpu_hour") {
            data_error(path + ": " + key + ": unknown key (expected usd_per_gpu_hour and optionally source)");
        }
    }
    const auto prices = doc.find("usd_per_gpu_hour");
    if (prices == doc.end() || !prices->is_object())
        data_error(path + ": usd_per_gpu_hour: expected an object of device id to USD per GPU-hour, found " +
                   (prices == doc.end() ? std::string("nothing") : json_type_name(*prices)));
    for (const auto& [id, value] : prices->items()) {
        const std::string field = "usd_per_gpu_hour." + id;
        const Gpu* gpu = nullptr;
        try {
            gpu = &find_gpu(known, id);
        } catch (const Error&) {
            data_error(path + ": " + field + ": not a device kvplan knows (see kvplan gpus)");
        }
        const double usd = value.is_number() ? value.get<double>() : 0;
        if (!value.is_number() || !(usd > 0 && usd < 1e6))
            data_error(path + ": " + field + ": expected USD per GPU-hour in (0, 10^6), found " + shown(value));
        if (out.usd_per_gpu_hour.count(gpu->id)) data_error(path + ": " + field + ": " + gpu->id + " is priced twice");
        out.usd_per_gpu_hour[gpu->id] = usd;
    }
    if (out.usd_per_gpu_hour.empty()) data_error(path + ": usd_per_gpu_hour: no device priced");
    return out;
}

}  // namespace kvplan
