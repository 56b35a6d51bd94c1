// The runners target of a build without CUDA (CLUSTERSIM_WITH_CUDA=OFF, or no CUDA toolkit,
// NCCL or cuBLAS found): what calibrate/runner.h and calibrate/device.h declare, measuring
// nothing. CMake compiles this file instead of the others in calibrate/cuda/.
#include "calibrate/device.h"
#include "calibrate/runner.h"

namespace clustersim::calibrate {

bool built_with_cuda() {
    return false;
}

std::vector<Device> visible_gpus() {
    return {};
}

RunResult run_calibration(const RunOptions& options, const Progress& /*progress*/) {
    check_run_options(options);
    throw DeviceUnavailable(
        "this clustersim was built without CUDA, so it cannot measure GPUs (rebuild with "
        "-DCLUSTERSIM_WITH_CUDA=ON on a machine with the CUDA toolkit, NCCL and cuBLAS); to use "
        "measurements taken elsewhere, run 'clustersim calibrate import'");
}

} // namespace clustersim::calibrate
