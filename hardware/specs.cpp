#include "hardware/specs.h"

#include "base/error.h"

#include <cmath>

namespace clustersim::hardware {

double GpuSpec::sustained_clock() const {
    const double f = sustained_clock_mhz > 0 ? sustained_clock_mhz : clock_mhz;
    if (power_cap_w > 0 && power_limit_w > 0 && power_cap_w < power_limit_w)
        return f * std::cbrt(power_cap_w / power_limit_w);
    return f;
}

ClusterSpec with_gpu_count(ClusterSpec spec, int gpus) {
    if (gpus <= 0)
        throw InputError("a GPU count must be positive, got " + std::to_string(gpus));
    spec.nodes = (gpus + spec.node.gpus - 1) / spec.node.gpus;
    if (spec.nodes > 1 && spec.node.nics == 0)
        throw InputError("hardware '" + spec.name + "' has no NICs, so it cannot span " +
                         std::to_string(gpus) + " GPUs (one node holds " +
                         std::to_string(spec.node.gpus) + ")");
    return spec;
}

} // namespace clustersim::hardware
