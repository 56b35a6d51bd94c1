#include "hardware/flow_binding.h"

#include <stdexcept>

namespace clustersim::hardware {

void bind_topology(sim::FlowNetwork& net, const Topology& topology) {
    if (net.resource_count() != 0)
        throw std::logic_error("bind_topology needs an empty flow network");
    for (EdgeIndex e = 0; e < topology.edge_count(); ++e) {
        net.add_resource(topology.edge(e).bandwidth,
                         topology.vertex_name(topology.edge_source(e)) + "->" +
                             topology.vertex_name(topology.edge_target(e)));
    }
}

} // namespace clustersim::hardware
