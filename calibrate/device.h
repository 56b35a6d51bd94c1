#pragma once
/// \file
/// Which GPUs this build can measure: none when built without CUDA or run without a GPU.
/// Declared here, defined by the runners target clustersim_calibrate_runners
/// (calibrate/cuda/devices.cpp, or calibrate/cuda/without_cuda.cpp in a build without CUDA).

#include <string>
#include <vector>

namespace clustersim::calibrate {

struct Device {
    int index = 0;
    std::string name;
    int sm_count = 0;
    long long memory_bytes = 0;
};

/// True when this binary was built with the CUDA runners.
bool built_with_cuda();
/// The GPUs visible now; empty without CUDA or without a GPU.
std::vector<Device> visible_gpus();

} // namespace clustersim::calibrate
