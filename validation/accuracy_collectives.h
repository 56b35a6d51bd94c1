#pragma once
/// \file
/// Collectives against the reference measurements (data/reference): the numbers behind the
/// "collectives" section of docs/validation.md (app/collective_accuracy.h words them) and the
/// accuracy tests. Every prediction uses the hardware presets as committed, through
/// CollectivePredictor (calibrate/predict.h); nothing is fitted here.

#include "calibrate/error_stats.h"

#include <string>
#include <vector>

namespace clustersim::validation {

using calibrate::ErrorStats;

/// One measured point and its prediction.
struct AccuracyRow {
    std::string label;     ///< e.g. "64 MiB", "4 GPUs", "all_gather"
    double measured = 0;   ///< in the curve's unit
    double predicted = 0;  ///< in the curve's unit
    std::string algorithm; ///< what the prediction ran ("ring/Simple")
    double error() const { return predicted / measured - 1; }
};

/// A measured curve (time or busbw by size).
struct AccuracyCurve {
    std::string title; ///< "dgx-a100, all_reduce, 8 GPUs (a100-node/nccl-all-reduce-8gpu.csv)"
    std::string unit;  ///< "us" or "GB/s"
    std::vector<AccuracyRow> rows;
    std::vector<double> sizes; ///< bytes of each row
    /// The errors of the rows with size >= `from` bytes.
    ErrorStats errors(double from = 0) const;
};

struct CollectiveAccuracy {
    std::vector<AccuracyCurve> a100_all_reduce; ///< 2, 4, 8 GPUs; time
    AccuracyCurve a100_log;                     ///< the nccl-tests log; time
    AccuracyRow a100_floor;                     ///< smallest size: time (us)
    AccuracyRow a100_plateau;                   ///< largest size: busbw (GB/s)
    std::vector<AccuracyCurve> busbw_8gpu;      ///< dgx-h100, hgx-h200 (and dgx-a100); busbw
    std::vector<AccuracyRow> h200_16gib;        ///< ring, NVLS, all_gather, reduce_scatter busbw
    std::vector<AccuracyRow> h200_by_count;     ///< 8 GiB all_reduce busbw, ring and NVLS
    std::vector<AccuracyRow> lecture;           ///< 4 H100: all_reduce and reduce_scatter (ms)
    AccuracyCurve nvlink5_ring; ///< 4 GB200 (NVLink 5) ring all_reduce on dgx-b200; busbw
    /// rccl-tests all_reduce on AMD Instinct nodes (xGMI mesh, RoCE), one curve per preset and
    /// GPU count, with the algorithm the run used (rccl/all_reduce-busbw.csv); busbw.
    std::vector<AccuracyCurve> rccl_all_reduce;
};

/// One multi-node nccl-tests file (data/reference/nccl/multi-node) against its predictions.
struct MultiNodeAccuracy {
    std::string file;     ///< relative to the data directory
    std::string hardware; ///< the preset it is predicted on
    int nodes = 0;
    std::string ran; ///< what NCCL ran: "default" or the forced NCCL_ALGO ("ring")
    bool lower_confidence = false;
    AccuracyCurve curve; ///< time (us) by size, out-of-place; busbw in `busbw`
    std::vector<double> measured_busbw, predicted_busbw; ///< GB/s, per row
};

/// The files of data/reference/nccl/multi-node (and its lower-confidence/), each predicted on
/// the preset of the machine its header names, with the algorithm NCCL ran (NCCL_ALGO when the
/// run forced one, else --algo auto). Throws InputError for a missing or malformed file.
std::vector<MultiNodeAccuracy> multi_node_accuracy(const std::string& data_dir);

/// Reads the reference files under `data_dir` and predicts each point (analytic fidelity,
/// --algo auto unless the measurement names the algorithm). Throws InputError for a missing or
/// malformed file.
CollectiveAccuracy collective_accuracy(const std::string& data_dir);

} // namespace clustersim::validation
