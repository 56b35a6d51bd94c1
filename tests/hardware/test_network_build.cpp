// Networks as built: NICs shared through PCIe switches, NIC ports striped, transports and
// fabric oversubscription, and the hardware-file errors that guard them.
#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace clustersim;
using namespace clustersim::hardware;

namespace {

/// Loads `text` as a file "net.yaml"; returns the error message, or "(no error)".
std::string load_error(const std::string& text, int gpus = 0) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("clustersim-net-" + std::to_string(std::hash<std::string>{}(text)));
    std::filesystem::create_directories(dir);
    const auto path = dir / "net.yaml";
    std::ofstream(path) << text;
    std::string what = "(no error)";
    try {
        ClusterSpec s = load_hardware(path.string());
        if (gpus > 0)
            s = with_gpu_count(s, gpus);
    } catch (const InputError& e) {
        what = e.what();
    }
    std::filesystem::remove_all(dir);
    return what;
}

/// The capacity of the first edge of `kind` leaving a vertex of `from` kind.
double first_edge(const Topology& t, LinkKind kind, VertexKind from) {
    for (EdgeIndex e = 0; e < t.edge_count(); ++e) {
        if (t.edge(e).kind == kind && t.vertex(t.edge_source(e)).kind == from)
            return t.edge(e).bandwidth;
    }
    return 0;
}

} // namespace

TEST_CASE("network: bad NIC counts, transports and oversubscription exit with file, line, key",
          "[hardware][network][errors]") {
    SECTION("more NICs than the PCIe switches hold") {
        const auto e = load_error("extends: dgx-h100\nnode:\n  nics: 16\n");
        CHECK_THAT(e, Catch::Contains("net.yaml:3:") && Catch::Contains("'node.nics'") &&
                          Catch::Contains("at most 8") &&
                          Catch::Contains("node.pcie.nics_per_switch"));
    }
    SECTION("NICs that do not divide the GPUs") {
        CHECK_THAT(load_error("extends: dgx-h100\nnode:\n  nics: 3\n"),
                   Catch::Contains("net.yaml:3:") && Catch::Contains("divisor or a multiple"));
    }
    SECTION("no NICs on a cluster of several nodes: the line that said 0") {
        const auto e = load_error("extends: dgx-h100\nnode:\n  nics: 0\n", 16);
        CHECK_THAT(e, Catch::Contains("net.yaml:3:") && Catch::Contains("'node.nics'") &&
                          Catch::Contains("no NICs") && Catch::Contains("node.nics: 1 or more"));
    }
    SECTION("oversubscription below 1") {
        CHECK_THAT(load_error("extends: dgx-h100\nnetwork:\n  oversubscription: 0.5\n"),
                   Catch::Contains("net.yaml:3:") &&
                       Catch::Contains("'network.oversubscription'") &&
                       Catch::Contains("2 means 2:1"));
    }
    SECTION("unknown transport") {
        CHECK_THAT(load_error("extends: dgx-h100\nnetwork:\n  transport: pigeon\n"),
                   Catch::Contains("net.yaml:3:") && Catch::Contains("'network.transport'") &&
                       Catch::Contains("infiniband, roce, efa, tcp"));
    }
    SECTION("NICs on PCIe switches with more slots") {
        CHECK(load_error("extends: dgx-h100\nnode:\n  pcie: {nics_per_switch: 4}\n  nics: 16\n") ==
              "(no error)");
    }
}

TEST_CASE("network: GPUs share the NIC of their PCIe switch", "[hardware][network]") {
    ClusterSpec s = load_hardware("aws-p4d"); // 4 NICs, 2 GPUs per PCIe switch
    s = with_gpu_count(s, 16);
    const Topology t(s);
    REQUIRE(s.node.nics == 4);
    for (int g = 0; g < 16; g += 2) {
        CHECK(t.gpu_nic(g) == t.gpu_nic(g + 1)); // the two GPUs of a switch
        if (g % 8 != 6)
            CHECK(t.gpu_nic(g) != t.gpu_nic(g + 2));
    }
    // The route from GPU 1 to the other node stays on its PCIe switch: no host link.
    const Route r = t.gpu_route(1, 9);
    for (EdgeIndex e : r.edges)
        CHECK(t.edge(e).kind != LinkKind::host);
    CHECK(r.bottleneck == Approx(100e9 / 8));
}

TEST_CASE("network: a GPU's several NICs are one port of their sum", "[hardware][network]") {
    const ClusterSpec s = with_gpu_count(load_hardware("aws-p5"), 16); // 32x 100 Gb/s
    const Topology t(s);
    CHECK(s.node.nic_ports() == 8);
    CHECK(s.node.nic_port_bandwidth() == Approx(400e9 / 8));
    CHECK(t.gpu_route(0, 8).bottleneck == Approx(400e9 / 8));
    CHECK(t.gpu_nic(0) != t.gpu_nic(1));
}

TEST_CASE("network: oversubscription divides the leaves' uplinks", "[hardware][network]") {
    ClusterSpec s = with_gpu_count(load_hardware("dgx-h100"), 16);
    const double link = s.network.link.bandwidth;
    CHECK(first_edge(Topology(s), LinkKind::fabric, VertexKind::leaf) == Approx(link));
    s.network.oversubscription = 2;
    CHECK(first_edge(Topology(s), LinkKind::fabric, VertexKind::leaf) == Approx(link / 2));
    CHECK(first_edge(Topology(s), LinkKind::nic, VertexKind::nic) == Approx(400e9 / 8));
}

TEST_CASE("network: transports set their efficiency and latency, files may override them",
          "[hardware][network]") {
    CHECK(load_hardware("dgx-h100").network.transport == Transport::infiniband);
    CHECK(load_hardware("dgx-h100").network.transport_efficiency == 1.0);
    const ClusterSpec roce = load_hardware("oci-bm-gpu4.8");
    CHECK(roce.network.transport == Transport::roce);
    // IBTA header arithmetic at a 4096-byte MTU: 26 bytes of InfiniBand, 82 of RoCE v2.
    CHECK(roce.network.transport_efficiency == Approx((4096.0 / 4178) / (4096.0 / 4122)));
    CHECK(load_hardware("aws-p5").network.transport == Transport::efa);
    CHECK(load_hardware("gcp-a3-mega").network.transport == Transport::tcp);
    // EFA's cost per network step is the latency AWS's plugin reports (net_latency), RoCE's
    // the transport's own.
    CHECK(load_hardware("aws-p5").network.net_latency > sim::Time::zero());
    CHECK(load_hardware("oci-bm-gpu4.8").network.net_latency == sim::Time::zero());
    CHECK(load_hardware("oci-bm-gpu4.8").network.transport_latency > sim::Time::zero());
    const ClusterSpec o = parse_hardware_yaml(
        "extends: aws-p5\nnetwork:\n  transport_efficiency: 0.9\n  transport_latency: 3us\n",
        "inline");
    CHECK(o.network.transport_efficiency == 0.9);
    CHECK(o.network.transport_latency == sim::Time::us(3));
    CHECK(load_hardware("dgx-superpod-h100").network.in_network_reduction);
    CHECK_FALSE(load_hardware("dgx-h100").network.in_network_reduction);
}
