#pragma once
/// \file
/// The rate a GPU sustains under a long dense load, and the clock that says it.
///
/// GEMM microbenchmarks (calibrate run, part gemm) time each shape for milliseconds after the
/// clocks were raised: they run at the boost clock. A training run keeps the tensor cores busy
/// for hours; the GPU settles at its power limit (A100 400 W, H100 700 W, or an operator's cap)
/// and temperature, at a lower clock. A sustained record is a GEMM loop long enough to reach
/// that steady state (minutes), written as the TFLOP/s of each interval:
///
///     # clustersim-sustained: H100-SXM5-80GB, bf16 8192x8192x8192 TN, boost 1980 MHz
///     t_s,tflops
///     0.5,742.1
///     1.0,741.8
///     ...
///
/// fit_sustained reads the burst rate (the first seconds, at the boost clock) and the steady
/// rate (the last quarter, once it has stopped drifting) and gives the hardware file's
/// `gpu.sustained_clock_mhz` = boost clock x steady / burst: the tensor rate follows the SM
/// clock, memory-bound work does not enter a GEMM loop of this size.

#include <string>
#include <vector>

namespace clustersim::calibrate {

struct SustainedSample {
    double t_s = 0;    ///< end of the interval, seconds from the start of the loop
    double tflops = 0; ///< rate over the interval
};

struct SustainedRecord {
    std::string name; ///< the file, for messages
    std::vector<SustainedSample> samples;
};

/// Reads a sustained record (CSV with columns t_s and tflops, `#` comments). Throws InputError
/// with the file and line for a missing column, a non-number, times that do not increase or a
/// rate that is not positive.
SustainedRecord read_sustained(const std::string& path);
/// The same from text; `name` starts every message.
SustainedRecord parse_sustained(const std::string& text, const std::string& name);

/// A record as the CSV above; `header` goes into the first comment line.
std::string format_sustained(const std::vector<SustainedSample>& samples,
                             const std::string& header);

struct SustainedFit {
    double burst_tflops = 0;        ///< median of the samples of the first `burst_s` seconds
    double steady_tflops = 0;       ///< median of the last quarter of the record
    double fraction = 1;            ///< steady / burst, at most 1
    double sustained_clock_mhz = 0; ///< boost clock x fraction
    /// Drift between the two halves of the last quarter, relative to the steady rate.
    double drift = 0;
};

/// Fits a record taken on a GPU whose boost clock is `boost_clock_mhz`. The burst is the first
/// `burst_s` seconds. Throws InputError when the record is shorter than 8 samples or
/// 4 x burst_s, or when its last quarter still drifts by more than `max_drift` (not at steady
/// state: run the loop longer).
SustainedFit fit_sustained(const SustainedRecord& record, double boost_clock_mhz,
                           double burst_s = 2.0, double max_drift = 0.01);

} // namespace clustersim::calibrate
