#pragma once
/// \file
/// The kernel cost model (hardware/compute_model.h) against every row of
/// gemm/matmul-throughput.csv: the numbers of docs/validation.md's "GEMM throughput" section
/// (app/report_compute.h words them). Every GPU of the table is described by a committed preset
/// (GH200 by dgx-h100 with GH200's HBM bandwidth); no parameter is set per row.

#include "calibrate/error_stats.h"
#include "hardware/dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace clustersim::validation {

using calibrate::ErrorStats;

/// One measured GEMM and the model's prediction of it.
struct GemmAccuracyRow {
    std::string source; ///< who measured it ("azure", "mamf")
    std::string gpu;    ///< the table's GPU name ("a100-sxm4-80gb")
    std::string preset; ///< the hardware description's name that predicted it
    hardware::Dtype dtype = hardware::Dtype::fp16;
    std::int64_t m = 0, n = 0, k = 0;
    double measured_tflops = 0;
    double predicted_tflops = 0;
    std::int64_t tile_m = 0, tile_n = 0; ///< the tile the model chose
    std::int64_t waves = 0;              ///< waves of tiles over the SMs
    /// (predicted - measured) / measured.
    double error() const { return (predicted_tflops - measured_tflops) / measured_tflops; }
};

struct GemmAccuracy {
    std::vector<GemmAccuracyRow> rows; ///< in the table's order
    ErrorStats errors;
};

/// Reads gemm/matmul-throughput.csv under `data_dir` and predicts every row. Throws InputError
/// when the CSV is missing or malformed or names a GPU no preset describes.
GemmAccuracy gemm_accuracy(const std::string& data_dir);

} // namespace clustersim::validation
