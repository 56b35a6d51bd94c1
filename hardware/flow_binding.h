#pragma once
/// \file
/// Puts a Topology onto a flow network: one resource per directed edge, with the edge's
/// bandwidth as capacity and the edge index as resource id, so a Route is directly a flow path.

#include "hardware/topology.h"
#include "sim/flow_network.h"

#include <vector>

namespace clustersim::hardware {

/// Adds a resource per edge of `topology` to `net`, which must have no resources yet. Names
/// ("<source vertex>-><target vertex>") are made from `topology` when asked for: it must
/// outlive every call of net.name().
void bind_topology(sim::FlowNetwork& net, const Topology& topology);

/// The flow path of a route (valid for a network set up by bind_topology).
inline std::vector<sim::ResourceId> flow_path(const Route& route) {
    return {route.edges.begin(), route.edges.end()};
}

} // namespace clustersim::hardware
