#include "hardware/graph_size.h"

#include "hardware/graph_builder.h"

#include <algorithm>
#include <cmath>

namespace clustersim::hardware {

namespace {
constexpr double kBytesPerVertex = 125;
constexpr double kBytesPerEdge = 120;
} // namespace

// Mirrors Topology's constructor (hardware/topology.cpp), counting instead of adding.
GraphSize graph_size(const ClusterSpec& spec) {
    const NodeSpec& n = spec.node;
    const double nodes = spec.nodes;
    const double gpus = n.gpus;
    const double ports = n.nic_ports();
    const double pcie_switches = n.gpus / std::max(1, n.gpus_per_pcie_switch);
    const bool nvswitch = n.fabric == IntraNodeFabric::nvswitch;
    // Per node: the host, its PCIe switches, the NVSwitch, a GPU's SM and HBM, the NIC ports;
    // links: a PCIe switch to the host, a GPU's HBM, PCIe (and NVLink), a NIC port's PCIe.
    GraphSize s;
    s.vertices = nodes * (1 + pcie_switches + (nvswitch ? 1 : 0) + 2 * gpus + ports);
    double links = nodes * (pcie_switches + gpus * (nvswitch ? 3 : 2) + ports);
    if (n.fabric == IntraNodeFabric::xgmi_mesh)
        links += nodes * gpus * (gpus - 1) / 2; // a link per pair of GPUs
    if (n.fabric == IntraNodeFabric::torus) {
        // No host vertex nor host links; the torus's routers and links (graph_builder.h).
        const GraphSize t = detail::torus_size(spec.torus);
        s.vertices += nodes * (t.vertices - 1);
        links += nodes * (t.edges / 2 - pcie_switches);
    }
    if (spec.nodes > 1) {
        // The rail-optimised fat tree: `ports` rails of leaves, each NIC port on its rail's
        // leaf, each leaf up to every spine.
        const double down = std::max(1, spec.network.switch_radix / 2);
        const double leaves_per_rail = std::ceil(nodes / down);
        const double spines = (ports > 1 || leaves_per_rail > 1) ? down : 0;
        s.vertices += spines + ports * leaves_per_rail;
        links += nodes * ports + ports * leaves_per_rail * spines;
    }
    s.edges = 2 * links;
    return s;
}

double graph_bytes(const GraphSize& size) {
    return size.vertices * kBytesPerVertex + size.edges * kBytesPerEdge;
}

} // namespace clustersim::hardware
