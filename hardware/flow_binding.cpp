#include "hardware/flow_binding.h"

#include <stdexcept>

namespace clustersim::hardware {

void bind_topology(sim::FlowNetwork& net, const Topology& topology) {
    if (net.resource_count() != 0)
        throw std::logic_error("bind_topology needs an empty flow network");
    // Resource r is edge r; its name ("gpu3.hbm->nvswitch0", ...) is made only when asked for.
    net.set_namer([&topology](sim::ResourceId r) {
        return topology.vertex_name(topology.edge_source(r)) + "->" +
               topology.vertex_name(topology.edge_target(r));
    });
    net.reserve_resources(topology.edge_count());
    for (EdgeIndex e = 0; e < topology.edge_count(); ++e)
        net.add_resource(topology.edge(e).bandwidth, std::string{});
}

} // namespace clustersim::hardware
