#pragma once
/// \file
/// The compute section of docs/validation.md: predicted GEMM throughput of the kernel cost
/// model (hardware/compute_model.h) against every row of gemm/matmul-throughput.csv.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown: the parameters in use, one table row per measurement (measured and predicted
/// TFLOP/s, error, the tile and waves the model chose), the mean and worst absolute error.
/// Throws InputError when the CSV is missing or malformed.
std::string gemm_validation_markdown(ReportData& data);

} // namespace clustersim::app
