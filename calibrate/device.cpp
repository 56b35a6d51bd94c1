#include "calibrate/device.h"

#ifdef CLUSTERSIM_HAVE_CUDA
#include "calibrate/cuda/device_query.h"
#endif

namespace clustersim::calibrate {

bool built_with_cuda() {
#ifdef CLUSTERSIM_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

std::vector<Device> visible_gpus() {
    std::vector<Device> out;
#ifdef CLUSTERSIM_HAVE_CUDA
    for (const auto& d : cuda::visible_devices())
        out.push_back(Device{d.index, d.name, d.sm_count, d.memory_bytes});
#endif
    return out;
}

} // namespace clustersim::calibrate
