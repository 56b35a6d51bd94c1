#pragma once
/// \file
/// The smallest piece of the CUDA runners: what devices this process can see. Compiled by
/// nvcc whenever CUDA is found, so the CUDA build is exercised in CI even without a GPU.

#include <string>
#include <vector>

namespace clustersim::calibrate::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int sm_count = 0;
    long long memory_bytes = 0;
    int compute_capability = 0; ///< e.g. 90 for sm_90
};

/// Devices visible to this process; empty when there is no GPU or no driver (never throws).
std::vector<DeviceInfo> visible_devices();

/// Runs a one-block kernel that writes a value and reads it back; true when it round-trips.
bool smoke_test(int device);

} // namespace clustersim::calibrate::cuda
