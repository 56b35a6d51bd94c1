// docs/validation.md, section "GEMM throughput": the numbers of validation/accuracy_gemm.h (the
// kernel cost model against measured cuBLAS matmuls) worded as Markdown.
#include "app/report_compute.h"

#include "base/text.h"
#include "validation/accuracy_gemm.h"

#include <fmt/format.h>

namespace clustersim::app {

std::string gemm_validation_markdown(ReportData& data) {
    const validation::GemmAccuracy& acc = data.gemm();
    std::string table = "| source | GPU (preset) | dtype | m x n x k | measured TFLOP/s | "
                        "predicted | error | tile | waves |\n|---|---|---|---|---:|---:|---:|---|"
                        "---:|\n";
    for (const auto& r : acc.rows)
        table += fmt::format("| {} | {} ({}) | {} | {}x{}x{} | {:.1f} | {:.1f} | {} | "
                             "{}x{} | {} |\n",
                             r.source, r.gpu, r.preset, hardware::to_string(r.dtype), r.m, r.n, r.k,
                             r.measured_tflops, r.predicted_tflops, base::signed_percent(r.error()),
                             r.tile_m, r.tile_n, r.waves);
    std::string md =
        "Predicted dense matmul throughput of the kernel cost model (`hardware/compute_model.h`: "
        "tile choice, wave quantisation over the SMs, efficiency curve by work, smooth roofline "
        "against HBM, launch overhead) against every row of `gemm/matmul-throughput.csv`. The "
        "parameters are the `compute:` sections of the presets, fitted once over the whole table "
        "by `scripts/fit-gemm-efficiency.py` (six numbers for all rows: never one per row). "
        "Azure's rows follow 10,000 warm-up iterations and are predicted at the presets' "
        "sustained clock (`gpu.sustained_clock_mhz`: dgx-h100 and hgx-h200 1500 of 1980 MHz), "
        "mamf's, the best shape of a search of short runs, at the boost clock.\n\n";
    md += fmt::format("Rows: {}; mean absolute error {}, worst {} (the test holds every "
                      "row within 15% and the mean within 5%).\n\n",
                      acc.rows.size(), base::percent(acc.errors.mean_abs),
                      base::percent(acc.errors.max_abs));
    return md + table;
}

} // namespace clustersim::app
