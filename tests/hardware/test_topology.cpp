#include "base/error.h"
#include "hardware/flow_binding.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "strategies/transfer.h"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using namespace clustersim;
using namespace clustersim::hardware;

namespace {
bool is_transit_forbidden(VertexKind k) {
    return k == VertexKind::gpu_hbm || k == VertexKind::gpu_sm || k == VertexKind::nic;
}
/// Every vertex strictly inside a GPU-to-GPU route is a switch or the host, except the two
/// GPUs' own NICs on a route between nodes.
void check_no_endpoint_transit(const Topology& t, const Route& r, int a, int b) {
    for (std::size_t i = 0; i + 1 < r.edges.size(); ++i) {
        const auto v = t.edge_target(r.edges[i]);
        if (t.node_of(a) != t.node_of(b) && (v == t.gpu_nic(a) || v == t.gpu_nic(b)))
            continue;
        REQUIRE_FALSE(is_transit_forbidden(t.vertex(v).kind));
    }
}
} // namespace

TEST_CASE("topology: every GPU reaches every GPU, routes are connected paths",
          "[hardware][topology]") {
    for (auto [preset, gpus] : {std::pair{"dgx-a100", 8}, std::pair{"dgx-h100", 24},
                                std::pair{"pcie-4gpu", 8}, std::pair{"hgx-h200", 16}}) {
        INFO(preset << " x " << gpus);
        const Topology t(with_gpu_count(load_hardware(preset), gpus));
        REQUIRE(t.gpu_count() == gpus);
        for (int a = 0; a < gpus; ++a) {
            for (int b = 0; b < gpus; ++b) {
                if (a == b)
                    continue;
                const Route r = t.gpu_route(a, b);
                REQUIRE(!r.edges.empty());
                REQUIRE(t.edge_source(r.edges.front()) == t.gpu_hbm(a));
                REQUIRE(t.edge_target(r.edges.back()) == t.gpu_hbm(b));
                for (std::size_t i = 0; i + 1 < r.edges.size(); ++i)
                    REQUIRE(t.edge_target(r.edges[i]) == t.edge_source(r.edges[i + 1]));
                check_no_endpoint_transit(t, r, a, b);
            }
        }
    }
}

TEST_CASE("topology: each vertex's out- and in-edges are exactly the edges from and to it, by "
          "ascending index",
          "[hardware][topology]") {
    for (auto [preset, gpus] : {std::pair{"dgx-h100", 48}, std::pair{"pcie-4gpu", 12}}) {
        INFO(preset << " x " << gpus);
        const Topology t(with_gpu_count(load_hardware(preset), gpus));
        std::vector<std::vector<EdgeIndex>> out(t.vertex_count()), in(t.vertex_count());
        for (EdgeIndex e = 0; e < t.edge_count(); ++e) {
            out[t.edge_source(e)].push_back(e);
            in[t.edge_target(e)].push_back(e);
        }
        std::size_t listed = 0;
        for (std::size_t v = 0; v < t.vertex_count(); ++v) {
            const auto o = t.out_edges(v);
            const auto i = t.in_edges(v);
            REQUIRE(std::vector<EdgeIndex>(o.begin(), o.end()) == out[v]);
            REQUIRE(std::vector<EdgeIndex>(i.begin(), i.end()) == in[v]);
            listed += o.size();
        }
        CHECK(listed == t.edge_count());
        CHECK(t.edge_count() > 0);
    }
}

TEST_CASE("topology: path bottlenecks equal the datasheet", "[hardware][topology]") {
    const Topology a100(load_hardware("dgx-a100"));
    CHECK(a100.gpu_route(0, 7).bottleneck == Approx(300e9)); // NVLink 3, 12 x 25 GB/s
    CHECK(a100.gpu_route(0, 7).edges.size() == 2);           // hbm -> nvswitch -> hbm

    const Topology h100(with_gpu_count(load_hardware("dgx-h100"), 16));
    CHECK(h100.gpu_route(1, 2).bottleneck == Approx(450e9)); // NVLink 4, 18 x 25 GB/s
    CHECK(h100.gpu_route(0, 8).bottleneck == Approx(50e9));  // NDR 400 Gb/s NIC

    const Topology pcie(load_hardware("pcie-4gpu"));
    CHECK(pcie.gpu_route(0, 1).bottleneck == Approx(32e9)); // same PCIe switch
    const Route across = pcie.gpu_route(0, 3);              // through the host
    CHECK(across.bottleneck == Approx(32e9));
    bool via_host = false;
    for (EdgeIndex e : across.edges)
        via_host |= pcie.vertex(pcie.edge_target(e)).kind == VertexKind::host;
    CHECK(via_host);

    // The HBM edge carries the memory bandwidth.
    CHECK(h100.memory_route(3).bottleneck == Approx(3.35e12));
}

TEST_CASE("topology: a flow network bound to the topology names each resource by its edge, on "
          "demand",
          "[hardware][topology]") {
    const Topology t(with_gpu_count(load_hardware("dgx-h100"), 16));
    sim::Engine engine;
    sim::FlowNetwork net(engine);
    bind_topology(net, t);
    REQUIRE(net.resource_count() == t.edge_count());
    const Route r = t.gpu_route(0, 15);
    for (EdgeIndex e : r.edges) {
        CHECK(net.capacity(e) == t.edge(e).bandwidth);
        CHECK(net.name(e) ==
              t.vertex_name(t.edge_source(e)) + "->" + t.vertex_name(t.edge_target(e)));
    }
    CHECK(net.name(r.edges[1]) == t.vertex_name(t.edge_source(r.edges[1])) + "->node0.nic0");
    // A name given when the resource is added stays its own.
    const auto extra = net.add_resource(1e9, "extra");
    CHECK(net.name(extra) == "extra");
}

TEST_CASE("topology: inter-node routes use the GPU's own rail and cross leaf and spine",
          "[hardware][topology]") {
    const Topology t(with_gpu_count(load_hardware("dgx-h100"), 128));
    const Route r = t.gpu_route(0, 127);
    std::vector<VertexKind> kinds;
    for (EdgeIndex e : r.edges)
        kinds.push_back(t.vertex(t.edge_target(e)).kind);
    CHECK(kinds == std::vector<VertexKind>{VertexKind::pcie_switch, VertexKind::nic,
                                           VertexKind::leaf, VertexKind::spine, VertexKind::leaf,
                                           VertexKind::nic, VertexKind::pcie_switch,
                                           VertexKind::gpu_hbm});
    CHECK(t.vertex_name(t.edge_target(r.edges[1])) == "node0.nic0");
    CHECK(t.vertex_name(t.edge_target(r.edges[5])) == "node15.nic7");
    // Same rail: no spine needed while the nodes share a leaf (32 nodes per 64-port leaf).
    const Route same_rail = t.gpu_route(0, 8);
    for (EdgeIndex e : same_rail.edges)
        CHECK(t.vertex(t.edge_target(e)).kind != VertexKind::spine);
}

TEST_CASE("topology: ECMP is deterministic and spreads pairs over spines", "[hardware][topology]") {
    const Topology t(with_gpu_count(load_hardware("dgx-h100"), 64));
    std::set<std::string> spines;
    for (int dst = 9; dst < 64; dst += 1) {
        if (dst % 8 == 0)
            continue; // rail 0 to rail 0 stays on its leaf
        const Route a = t.gpu_route(0, dst);
        const Route b = t.gpu_route(0, dst);
        REQUIRE(a.edges == b.edges);
        for (EdgeIndex e : a.edges) {
            if (t.vertex(t.edge_target(e)).kind == VertexKind::spine)
                spines.insert(t.vertex_name(t.edge_target(e)));
        }
    }
    CHECK(spines.size() > 10); // 48 pairs over 32 spines
}

TEST_CASE("topology: bisection bandwidth", "[hardware][topology]") {
    // One DGX A100: 4 GPUs x 300 GB/s of NVLink, plus what PCIe adds through the host (2 PCIe
    // switches' host uplinks at 32 GB/s).
    const Topology a100(load_hardware("dgx-a100"));
    CHECK(a100.bisection_bandwidth() == Approx(4 * 300e9 + 2 * 32e9));
    // 16 DGX H100 nodes: 8 nodes x 8 NICs x 50 GB/s cross the cut; the fat tree is non-blocking.
    const Topology h100(with_gpu_count(load_hardware("dgx-h100"), 128));
    CHECK(h100.bisection_bandwidth() == Approx(8 * 8 * 50e9));
}

TEST_CASE("topology: a multi-node cluster of a NIC-less node is refused", "[hardware][topology]") {
    ClusterSpec s = load_hardware("dgx-a100");
    s.node.nics = 0;
    CHECK_THROWS_AS(with_gpu_count(s, 16), InputError);
    s.nodes = 2;
    CHECK_THROWS_AS(Topology(s), InputError);
}

TEST_CASE("transfer: time is latency + bytes over the bottleneck", "[hardware][transfer]") {
    const Topology node(load_hardware("dgx-h100"));
    const auto r = strategies::simulate_transfer(node, 0, 1, std::int64_t{1} << 30);
    CHECK(r.time.seconds() ==
          Approx(r.route.latency.seconds() + double(std::int64_t{1} << 30) / 450e9).epsilon(1e-9));
    const Topology cluster(with_gpu_count(load_hardware("dgx-h100"), 128));
    const auto x = strategies::simulate_transfer(cluster, 0, 127, std::int64_t{1} << 30);
    CHECK(x.achieved_bandwidth == Approx(50e9).epsilon(0.001)); // set by the NIC
    CHECK_THROWS_AS(strategies::simulate_transfer(cluster, 0, 0, 100), InputError);
    CHECK_THROWS_AS(strategies::simulate_transfer(cluster, 0, 128, 100), InputError);
    CHECK_THROWS_AS(strategies::simulate_transfer(cluster, 0, 1, 0), InputError);
}

TEST_CASE("topology: a cluster too large for this machine is refused up front with an estimate",
          "[hardware][topology]") {
    const ClusterSpec huge = with_gpu_count(load_hardware("dgx-a100"), 1 << 28);
    CHECK_THROWS_WITH(Topology(huge),
                      Catch::StartsWith("a cluster of 268435456 GPUs needs about ") &&
                          Catch::Contains("GiB for its graph") &&
                          Catch::Contains("this machine has"));
}
