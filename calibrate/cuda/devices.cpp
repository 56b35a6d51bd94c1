// What calibrate/device.h declares, for a build with the CUDA runners.
#include "calibrate/cuda/device_query.h"
#include "calibrate/device.h"

namespace clustersim::calibrate {

bool built_with_cuda() {
    return true;
}

std::vector<Device> visible_gpus() {
    std::vector<Device> out;
    for (const auto& d : cuda::visible_devices())
        out.push_back(Device{d.index, d.name, d.sm_count, d.memory_bytes});
    return out;
}

} // namespace clustersim::calibrate
