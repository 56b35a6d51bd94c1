// The numbers of docs/validation.md's "GEMM throughput" section.
#include "validation/accuracy_gemm.h"

#include "base/error.h"
#include "config/csv.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

namespace clustersim::validation {

using namespace calibrate; // the formats, predictions and statistics this study uses

namespace {

/// The preset that describes each GPU of the table, by the table's GPU names.
hardware::ClusterSpec hardware_for(const std::string& gpu) {
    if (gpu == "a100-sxm4-80gb" || gpu == "a100-sxm4")
        return hardware::load_hardware("dgx-a100");
    if (gpu == "a100-pcie")
        return hardware::load_hardware("pcie-4gpu");
    if (gpu == "h100-sxm")
        return hardware::load_hardware("dgx-h100");
    if (gpu == "h200")
        return hardware::load_hardware("hgx-h200");
    if (gpu == "gh200") // the H100 die with 96 GB of HBM3 at 4 TB/s (GH200 datasheet)
        return hardware::parse_hardware_yaml("extends: dgx-h100\ngpu: {hbm: {bandwidth: 4TB/s}}\n",
                                             "gh200");
    throw InputError("gemm table: no hardware preset describes GPU '" + gpu + "'");
}

std::int64_t dimension(const config::CsvTable& csv, std::size_t row, const char* column) {
    const std::string& t = csv.text(row, column);
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || ptr != t.data() + t.size())
        csv.fail(row, fmt::format("column '{}': expected an integer, got '{}'", column, t));
    return v;
}

} // namespace

GemmAccuracy gemm_accuracy(const std::string& data_dir) {
    const auto csv = config::CsvTable::read(data_dir + "/gemm/matmul-throughput.csv");
    std::map<std::string, hardware::ClusterSpec> specs;
    GemmAccuracy out;
    std::vector<double> errors;
    for (std::size_t i = 0; i < csv.size(); ++i) {
        GemmAccuracyRow r;
        r.source = csv.text(i, "source");
        r.gpu = csv.text(i, "gpu");
        const auto dtype = hardware::parse_dtype(csv.text(i, "dtype"));
        if (!dtype)
            csv.fail(i, "unknown dtype '" + csv.text(i, "dtype") + "'");
        r.dtype = *dtype;
        r.m = dimension(csv, i, "m");
        r.n = dimension(csv, i, "n");
        r.k = dimension(csv, i, "k");
        r.measured_tflops = csv.number(i, "tflops");
        // Azure's rows follow 10,000 warm-up iterations: the GPU is at its sustained clock,
        // as the presets describe a long load. mamf's are the best shape of a search of short
        // runs: the boost clock (gpu.sustained_clock_mhz cleared).
        const bool burst = r.source == "mamf";
        const std::string key = r.gpu + (burst ? "/burst" : "");
        auto it = specs.find(key);
        if (it == specs.end()) {
            hardware::ClusterSpec spec = hardware_for(r.gpu);
            if (burst)
                spec.node.gpu.sustained_clock_mhz = 0;
            it = specs.emplace(key, std::move(spec)).first;
        }
        r.preset = it->second.name;
        const hardware::ComputeModel cm(it->second);
        const double t = cm.gemm_seconds(r.m, r.n, r.k, r.dtype);
        r.predicted_tflops = hardware::ComputeModel::gemm_flops(r.m, r.n, r.k) / t / 1e12;
        const auto choice = cm.choose_tile(r.m, r.n, r.k, 1, r.dtype);
        r.tile_m = choice.tile.m;
        r.tile_n = choice.tile.n;
        r.waves = choice.waves;
        errors.push_back(r.error());
        out.rows.push_back(std::move(r));
    }
    out.errors = error_stats(errors);
    return out;
}

} // namespace clustersim::validation
