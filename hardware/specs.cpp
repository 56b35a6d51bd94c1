#include "hardware/specs.h"

#include "base/error.h"

namespace clustersim::hardware {

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
