#include "strategies/parallel/step_simulator.h"

#include <stdexcept>
#include <string>

namespace clustersim::strategies::parallel {

StepSimulator::StepSimulator(const hardware::ClusterSpec& cluster)
    : topology_(std::make_shared<const hardware::Topology>(cluster))
    , communicators_(std::make_unique<collectives::CommunicatorCache>(*topology_)) {
}

StepResult StepSimulator::simulate(const ExperimentSpec& e, const StepOptions& options) const {
    if (e.cluster.gpu_count() != topology_->gpu_count())
        throw std::invalid_argument("StepSimulator: experiment '" + e.name + "' has " +
                                    std::to_string(e.cluster.gpu_count()) +
                                    " GPUs, the simulator's cluster " +
                                    std::to_string(topology_->gpu_count()));
    return detail::simulate_step_on(e, options, topology_, communicators_.get());
}

} // namespace clustersim::strategies::parallel
