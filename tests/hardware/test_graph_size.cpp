// graph_size (the size refusal's count of the graph, from the spec alone) against the graph
// Topology builds: the same vertices and directed edges, on nodes of NVSwitch and of PCIe, one
// node, rails of one leaf, of several leaves, and one NIC port per node (no spines when one leaf
// holds every node).
#include "hardware/graph_size.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <catch2/catch.hpp>

#include <string>

using namespace clustersim;
using namespace clustersim::hardware;

TEST_CASE("graph_size counts the vertices and edges Topology builds", "[hardware][topology]") {
    auto check = [](const ClusterSpec& spec) {
        const Topology t(spec);
        const GraphSize s = graph_size(spec);
        INFO(spec.name << " on " << spec.nodes << " nodes");
        CHECK(s.vertices == static_cast<double>(t.vertex_count()));
        CHECK(s.edges == static_cast<double>(t.edge_count()));
    };
    for (const std::string preset :
         {"dgx-a100", "dgx-h100", "pcie-4gpu", "aws-p4d", "dgx2-v100", "gcp-a3-high"}) {
        const ClusterSpec node = load_hardware(preset);
        for (int nodes : {1, 2, 3, 40}) {
            if (nodes > 1 && node.node.nics == 0)
                continue;
            check(with_gpu_count(node, nodes * node.node.gpus));
        }
    }
    // One NIC per node: a rail of one leaf has no spine; of two leaves, spines.
    ClusterSpec one_nic = load_hardware("dgx-a100");
    one_nic.node.nics = 1;
    check(with_gpu_count(one_nic, 4 * 8));
    check(with_gpu_count(one_nic, 40 * 8));
}
