#pragma once
/// \file
/// Measuring the GPUs of this machine: the calibration suite behind `clustersim calibrate
/// run`. It runs NCCL collectives and point-to-point transfers over a size sweep on all the
/// GPUs it is given (one process, ncclCommInitAll), cuBLASLt GEMMs over a grid of shapes per
/// dtype, HBM, host-device and peer copies, and kernel launch overhead, and returns them as a
/// MeasurementFile. Built without CUDA, or run without a GPU, it throws DeviceUnavailable.
///
/// This header is the interface between the calibration library (clustersim_calibrate: the
/// options, their checks, the measurement format) and the runners that measure
/// (clustersim_calibrate_runners, calibrate/cuda/): `run_calibration` is defined by the runners
/// target, which a program links to measure. Without CUDA that target is built from
/// calibrate/cuda/without_cuda.cpp alone, whose `run_calibration` says why nothing can be
/// measured.

#include "base/error.h"
#include "calibrate/measurements.h"
#include "calibrate/sustained.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate {

/// A GPU, driver or library call failed while measuring (not "no GPU at all", which is
/// DeviceUnavailable). The message names the call and the source line.
class DeviceFailure : public Error {
public:
    using Error::Error;
};

/// One GEMM to measure: D (m x n) = op(A) op(B), column-major as cuBLAS.
struct GemmShape {
    std::int64_t m = 0, n = 0, k = 0;
    std::string layout = "TN";
    friend bool operator==(const GemmShape&, const GemmShape&) = default;
};
/// Parses "MxNxK" or "MxNxK:LAYOUT" ("4096x4096x4096", "1024x8192x8192:NN"). Throws
/// InputError naming `where`.
GemmShape parse_gemm_shape(std::string_view text, const std::string& where);

/// What the suite measures. The defaults are the full suite; `quick_run_options()` the quick
/// one.
struct RunOptions {
    bool quick = false;
    int gpus = 0; ///< use GPUs 0..gpus-1; 0: every visible GPU
    /// Parts to run: "collectives", "p2p", "gemm", "copy", "launch"; empty: all.
    std::vector<std::string> only;

    // Collectives and point-to-point: nccl-tests' -b, -e, -f.
    std::int64_t min_bytes = 8;
    std::int64_t max_bytes = std::int64_t{8} << 30;
    int factor = 2;
    bool in_place = true; ///< also measure in place where the collective allows it

    /// Shapes measured in addition to the built-in grid (the model presets' GEMMs), in every
    /// dtype measured.
    std::vector<GemmShape> gemm_shapes;
    /// GEMM dtypes; empty: fp32, tf32, fp16, bf16 and fp8 where the GPU supports them.
    std::vector<hardware::Dtype> gemm_dtypes;
    /// Length of the sustained GEMM loop (part "sustained", run only when named in `only`):
    /// long enough for power and temperature to settle.
    double sustained_seconds = 300;
};

/// The options of `--quick`: under 3 minutes on one GPU (and on a node of 8).
RunOptions quick_run_options();

/// The part names `RunOptions::only` accepts.
const std::vector<std::string>& run_parts();

/// Throws InputError when `options` cannot be run (an unknown part, a bad size sweep, fp64
/// GEMMs), before any device is looked for.
void check_run_options(const RunOptions& options);

/// Progress lines for a person watching ("all_reduce on 8 GPUs: 8 B to 8 GiB ...").
using Progress = std::function<void(const std::string&)>;

struct RunResult {
    MeasurementFile measurements;
    /// What was skipped and why (sizes that do not fit, dtypes the GPU lacks, wrong results).
    std::vector<std::string> warnings;
    /// The sustained GEMM loop's record (part "sustained"; calibrate/sustained.h), else empty.
    std::vector<SustainedSample> sustained;
};

/// Runs the suite. Throws DeviceUnavailable when this build has no CUDA or no GPU is visible
/// (or fewer than `options.gpus`), InputError for bad options, DeviceFailure when a call fails.
/// Defined by clustersim_calibrate_runners (calibrate/cuda/suite.cpp, or without_cuda.cpp).
RunResult run_calibration(const RunOptions& options, const Progress& progress = {});

} // namespace clustersim::calibrate
