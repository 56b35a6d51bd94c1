#pragma once
/// \file
/// Training steps of many experiments on one cluster, simulated with what they share built
/// once: the cluster's graph and the communicators of its GPU groups. A sweep simulates
/// thousands of configurations whose tensor-, data- and pipeline-parallel groups repeat; the
/// graph and a communicator's precomputation (rings, trees, routes) cost far more than a
/// configuration's own work.
///
///     StepSimulator sim(e.cluster);
///     for (const ExperimentSpec& variant : variants)   // all on e.cluster
///         StepResult r = sim.simulate(variant);
///
/// `simulate(e, options)` returns exactly what `simulate_step(e, options)` returns (the tests
/// hold them equal, field by field). One simulator may serve every thread of a sweep.

#include "hardware/specs.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator_cache.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <memory>

namespace clustersim::strategies::parallel {

class StepSimulator {
public:
    /// Builds the graph of `cluster` (a cluster of 5,000 GPUs takes a while: build it once).
    explicit StepSimulator(const hardware::ClusterSpec& cluster);

    const hardware::Topology& topology() const { return *topology_; }
    /// Communicators built so far.
    std::size_t communicators() const { return communicators_->size(); }

    /// simulate_step(e, options). `e.cluster` must be the simulator's cluster: throws
    /// std::invalid_argument when its GPU count differs. Thread-safe.
    StepResult simulate(const ExperimentSpec& e, const StepOptions& options = {}) const;

private:
    std::shared_ptr<const hardware::Topology> topology_;
    std::unique_ptr<collectives::CommunicatorCache> communicators_;
};

} // namespace clustersim::strategies::parallel
