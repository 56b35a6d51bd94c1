#include "hardware/flow_binding.h"

#include <stdexcept>

namespace clustersim::hardware {

void bind_topology(sim::FlowNetwork& net, const Topology& topology) {
    if (net.resource_count() != 0)
        throw std::logic_error("bind_topology needs an empty flow network");
    for (EdgeIndex e = 0; e < topology.edge_count(); ++e) {
        const auto& g = topology.graph();
        net.add_resource(topology.edge(e).bandwidth,
                         g[topology.edge_source(e)].name + "->" + g[topology.edge_target(e)].name);
    }
}

} // namespace clustersim::hardware
