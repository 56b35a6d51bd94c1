#include "calibrate/predict.h"

#include "base/error.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/parallel/collective_regime.h"
#include "strategies/parallel/training_step.h"

#include <fmt/format.h>

#include <map>

namespace clustersim::calibrate {

namespace cl = strategies::collectives;

strategies::parallel::ExperimentSpec step_experiment(const strategies::parallel::Platform& platform,
                                                     const StepMeasurement& step) {
    std::vector<std::pair<std::string, std::string>> settings;
    for (const auto& o : step.overrides())
        settings.push_back(strategies::parallel::parse_override(o));
    return strategies::parallel::make_experiment(platform, step.gpus, settings,
                                                 step.source.empty() ? "step" : step.source);
}

double predict_step(const strategies::parallel::Platform& platform, const StepMeasurement& step,
                    strategies::collectives::Fidelity fidelity, bool flow_symmetry) {
    const auto e = step_experiment(platform, step);
    strategies::parallel::StepOptions o;
    o.fidelity = fidelity;
    o.flow_symmetry = flow_symmetry;
    o.oom_advice = false;
    return strategies::parallel::simulate_step(e, o).step_time_s;
}

struct CollectivePredictor::Impl {
    hardware::ClusterSpec cluster;
    std::map<int, std::unique_ptr<hardware::Topology>> topologies;  ///< by node count
    std::map<int, std::unique_ptr<cl::Communicator>> communicators; ///< by GPU count

    cl::Communicator& communicator(int gpus) {
        auto it = communicators.find(gpus);
        if (it != communicators.end())
            return *it->second;
        hardware::ClusterSpec spec = hardware::with_gpu_count(cluster, gpus);
        auto& topo = topologies[spec.nodes];
        if (!topo)
            topo = std::make_unique<hardware::Topology>(spec);
        auto comm = std::make_unique<cl::Communicator>(cl::Communicator::first(*topo, gpus));
        return *communicators.emplace(gpus, std::move(comm)).first->second;
    }
};

CollectivePredictor::CollectivePredictor(const hardware::ClusterSpec& cluster)
    : impl_(std::make_unique<Impl>()) {
    impl_->cluster = cluster;
}
CollectivePredictor::~CollectivePredictor() = default;

hardware::LinkLevel CollectivePredictor::level(int gpus) const {
    const auto& node = impl_->cluster.node;
    if (gpus > node.gpus)
        return hardware::LinkLevel::network;
    return node.fabric == hardware::IntraNodeFabric::pcie ? hardware::LinkLevel::pcie
                                                          : hardware::LinkLevel::nvlink;
}

CollectivePredictor::Result CollectivePredictor::predict(const CollectiveMeasurement& m) {
    cl::Collective c;
    c.op = m.op;
    c.bytes = m.bytes;
    c.dtype = m.dtype;
    if (!m.algorithm.empty()) {
        const auto a = cl::parse_algorithm(m.algorithm);
        if (!a)
            throw InputError("algorithm '" + m.algorithm + "' is not modelled");
        c.algorithm = *a;
    }
    const cl::Communicator& comm = impl_->communicator(m.gpus);
    comm.validate(c);
    const cl::Choice choice = comm.choose(c);
    return {
        choice.time.seconds(),
        fmt::format("{}/{}", cl::to_string(choice.algorithm), hardware::to_string(choice.protocol)),
        strategies::parallel::message_regime(comm, c, choice)};
}

} // namespace clustersim::calibrate
