// docs/validation.md, section "GEMM throughput": the kernel cost model against measured cuBLAS
// matmuls. Every GPU of the table is described by a committed preset (GH200 by dgx-h100 with
// GH200's HBM bandwidth); no parameter is set per row.
#include "app/report_compute.h"

#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace clustersim::app {

namespace {

struct Row {
    std::string source, gpu;
    hardware::Dtype dtype = hardware::Dtype::fp16;
    std::int64_t m = 0, n = 0, k = 0;
    double tflops = 0;
};

std::vector<Row> read_rows(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        throw InputError(path + ": cannot open the file");
    std::vector<Row> rows;
    std::string line;
    int number = 0;
    bool header = true;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty() || line[0] == '#')
            continue;
        if (header) {
            header = false;
            continue;
        }
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ','))
            f.push_back(cell);
        const auto where = path + ":" + std::to_string(number);
        if (f.size() != 8)
            throw InputError(where +
                             ": expected 8 columns (source,gpu,dtype,m,n,k,tflops,"
                             "peak_tflops), got " +
                             std::to_string(f.size()));
        const auto dtype = hardware::parse_dtype(f[2]);
        if (!dtype)
            throw InputError(where + ": unknown dtype '" + f[2] + "'");
        Row r;
        r.source = f[0];
        r.gpu = f[1];
        r.dtype = *dtype;
        try {
            r.m = std::stoll(f[3]);
            r.n = std::stoll(f[4]);
            r.k = std::stoll(f[5]);
            r.tflops = std::stod(f[6]);
        } catch (const std::exception&) {
            throw InputError(where + ": expected numbers in m, n, k and tflops");
        }
        rows.push_back(r);
    }
    return rows;
}

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

} // namespace

std::string gemm_validation_markdown(const std::string& data_dir) {
    const std::string path = data_dir + "/gemm/matmul-throughput.csv";
    const std::vector<Row> rows = read_rows(path);
    std::map<std::string, hardware::ClusterSpec> specs;
    std::string table = "| source | GPU (preset) | dtype | m x n x k | measured TFLOP/s | "
                        "predicted | error | tile | waves |\n|---|---|---|---|---:|---:|---:|---|"
                        "---:|\n";
    double sum_abs = 0, worst = 0;
    for (const Row& r : rows) {
        auto it = specs.find(r.gpu);
        if (it == specs.end())
            it = specs.emplace(r.gpu, hardware_for(r.gpu)).first;
        const hardware::ComputeModel cm(it->second);
        const double t = cm.gemm_seconds(r.m, r.n, r.k, r.dtype);
        const double predicted = hardware::ComputeModel::gemm_flops(r.m, r.n, r.k) / t / 1e12;
        const double err = (predicted - r.tflops) / r.tflops;
        const auto choice = cm.choose_tile(r.m, r.n, r.k, 1, r.dtype);
        sum_abs += std::abs(err);
        worst = std::max(worst, std::abs(err));
        table += fmt::format("| {} | {} ({}) | {} | {}x{}x{} | {:.1f} | {:.1f} | {:+.1f}% | "
                             "{}x{} | {} |\n",
                             r.source, r.gpu, it->second.name, hardware::to_string(r.dtype), r.m,
                             r.n, r.k, r.tflops, predicted, 100 * err, choice.tile.m, choice.tile.n,
                             choice.waves);
    }
    std::string md =
        "Predicted dense matmul throughput of the kernel cost model (`hardware/compute_model.h`: "
        "tile choice, wave quantisation over the SMs, efficiency curve by work, smooth roofline "
        "against HBM, launch overhead) against every row of `gemm/matmul-throughput.csv`. The "
        "parameters are the `compute:` sections of the presets, fitted once over the whole table "
        "by `scripts/fit-gemm-efficiency.py` (six numbers for all rows: never one per row).\n\n";
    md += fmt::format("Rows: {}; mean absolute error {:.1f}%, worst {:.1f}% (the test holds every "
                      "row within 15% and the mean within 5%).\n\n",
                      rows.size(), 100 * sum_abs / static_cast<double>(rows.size()), 100 * worst);
    return md + table;
}

} // namespace clustersim::app
