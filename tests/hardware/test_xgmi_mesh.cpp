// The xGMI mesh as a node fabric (AMD Instinct: a link between every pair of GPUs, no switch):
// the graph it builds, the routes on it, and what a hardware file must say for it.
#include "base/error.h"
#include "hardware/graph_size.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace clustersim;
using namespace clustersim::hardware;

namespace {
/// A DGX H100 whose GPUs are joined by an xGMI mesh instead of NVSwitch, each GPU and its NIC
/// on their own PCIe switch (the shape of the AMD presets, none of their numbers).
ClusterSpec mesh_node() {
    return parse_hardware_yaml("extends: dgx-h100\nname: mesh\n"
                               "node: {fabric: xgmi, xgmi: {bandwidth: 64GB/s}, "
                               "pcie: {gpus_per_switch: 1}}\n",
                               "mesh.yaml");
}
} // namespace

TEST_CASE("xgmi mesh: every pair of a node's GPUs talks over its own link, both directions",
          "[hardware][topology][xgmi]") {
    const ClusterSpec spec = mesh_node();
    REQUIRE(spec.node.fabric == IntraNodeFabric::xgmi_mesh);
    const Topology t(spec);
    std::set<EdgeIndex> used;
    for (int a = 0; a < 8; ++a) {
        for (int b = 0; b < 8; ++b) {
            if (a == b)
                continue;
            INFO("gpu" << a << " -> gpu" << b);
            const Route r = t.gpu_route(a, b);
            REQUIRE(r.edges.size() == 1);
            const EdgeIndex e = r.edges.front();
            CHECK(t.edge(e).kind == LinkKind::xgmi);
            CHECK(t.edge_source(e) == t.gpu_hbm(a));
            CHECK(t.edge_target(e) == t.gpu_hbm(b));
            CHECK(r.bottleneck == Approx(spec.node.xgmi.bandwidth));
            CHECK(used.insert(e).second); // no two pairs share a link
        }
    }
    CHECK(used.size() == 56); // 8 x 7 directed links
    // The graph holds exactly what graph_size counts (the memory estimate mirrors the build).
    const GraphSize size = graph_size(spec);
    CHECK(size.vertices == Approx(static_cast<double>(t.vertex_count())));
    CHECK(size.edges == Approx(static_cast<double>(t.edge_count())));
    // Every GPU has 7 xGMI links out and 7 in.
    for (int g = 0; g < 8; ++g) {
        int out = 0, in = 0;
        for (EdgeIndex e : t.out_edges(t.gpu_hbm(g)))
            out += t.edge(e).kind == LinkKind::xgmi;
        for (EdgeIndex e : t.in_edges(t.gpu_hbm(g)))
            in += t.edge(e).kind == LinkKind::xgmi;
        CHECK(out == 7);
        CHECK(in == 7);
    }
}

TEST_CASE("xgmi mesh: across nodes a GPU leaves through its own NIC, no link joins two nodes",
          "[hardware][topology][xgmi]") {
    const ClusterSpec spec = with_gpu_count(mesh_node(), 32);
    const Topology t(spec);
    const GraphSize size = graph_size(spec);
    CHECK(size.edges == Approx(static_cast<double>(t.edge_count())));
    const Route inside = t.gpu_route(9, 14); // node 1
    REQUIRE(inside.edges.size() == 1);
    CHECK(t.edge(inside.edges.front()).kind == LinkKind::xgmi);
    const Route across = t.gpu_route(3, 3 + 8 * 3);
    CHECK(t.edge_target(across.edges.front()) != t.gpu_hbm(4)); // no relay through a third GPU
    bool nic = false;
    for (EdgeIndex e : across.edges) {
        CHECK(t.edge(e).kind != LinkKind::xgmi);
        nic = nic || t.edge(e).kind == LinkKind::nic;
    }
    CHECK(nic);
    for (EdgeIndex e = 0; e < t.edge_count(); ++e) {
        if (t.edge(e).kind == LinkKind::xgmi)
            CHECK(t.vertex(t.edge_source(e)).node == t.vertex(t.edge_target(e)).node);
    }
}

TEST_CASE("xgmi mesh: a mesh node needs its link's bandwidth", "[hardware][xgmi]") {
    try {
        (void)parse_hardware_yaml("extends: dgx-h100\nnode: {fabric: xgmi}\n", "m.yaml");
        FAIL("a mesh without node.xgmi was accepted");
    } catch (const InputError& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("node.xgmi.bandwidth") != std::string::npos);
    }
    const ClusterSpec ok = parse_hardware_yaml(
        "extends: dgx-h100\nnode: {gpus: 4, nics: 4, fabric: xgmi, xgmi: {bandwidth: 50GB/s}}\n",
        "m.yaml");
    CHECK(ok.node.xgmi.bandwidth == Approx(50e9));
    const Topology t(ok);
    CHECK(t.gpu_route(0, 3).edges.size() == 1);
    CHECK(t.gpu_route(0, 3).bottleneck == Approx(50e9));
}
