#pragma once
/// \file
/// The CUDA runners, one per kind of measurement (internal to clustersim_calibrate_runners;
/// compiled only with CUDA). Each runs on the devices it is given, reports progress, collects
/// warnings for what it skips, and returns measurement values.

#include "calibrate/cuda/cuda_util.h"
#include "calibrate/cuda/sweep.h"
#include "calibrate/runner.h"
#include "calibrate/sustained.h"

#include <string>
#include <vector>

namespace clustersim::calibrate::cuda {

/// Shared by the runners of one suite.
struct Context {
    std::vector<int> devices; ///< CUDA device ordinals, all of one model
    const RunOptions* options = nullptr;
    Timing timing;
    const Progress* progress = nullptr;
    std::vector<std::string>* warnings = nullptr;

    void report(const std::string& line) const {
        if (progress != nullptr && *progress)
            (*progress)(line);
    }
    void warn(const std::string& line) const { warnings->push_back(line); }
};

/// Why no GPU can be used ("" when at least one is visible): the CUDA error of the query.
std::string why_no_device();
/// Visible CUDA devices.
int device_count();
/// The environment of `devices`: GPU name, driver, CUDA, NCCL and cuBLAS versions, date, host.
Environment environment(const std::vector<int>& devices, std::vector<std::string>& warnings);

/// Keeps every device busy for `seconds` (untimed), so that the first measurement does not
/// run at idle clocks (an idle H200 sat at 345 MHz; its first GEMM measured 1.5x slow).
void raise_clocks(const Context& ctx, double seconds);

std::vector<CollectiveMeasurement> run_collectives(const Context& ctx);
std::vector<P2pMeasurement> run_p2p(const Context& ctx);
std::vector<GemmMeasurement> run_gemms(const Context& ctx);
std::vector<CopyMeasurement> run_copies(const Context& ctx);
std::vector<LaunchMeasurement> run_launches(const Context& ctx);
/// A bf16 GEMM loop for `seconds` on the first device, its rate per half-second interval.
std::vector<SustainedSample> run_sustained(const Context& ctx, double seconds);

} // namespace clustersim::calibrate::cuda
