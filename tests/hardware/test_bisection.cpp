// Topology::bisection_bandwidth (Dinic's maximum flow on the CSR graph) against Boost.Graph's
// Boykov-Kolmogorov maximum flow on the same network, as the bisection was computed before: the
// value of a maximum flow is unique, so the two must agree exactly, on nodes of NVSwitch and of
// PCIe, on fat trees of 2 to 5 nodes, and on cuts through the middle of a node (an odd number of
// nodes), and on rails of several leaves.
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

// GCC 12 reports false "maybe-uninitialized" warnings inside Boost's max-flow iterators when
// they are inlined at -O2; the code is Boost's, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

using namespace clustersim;
using namespace clustersim::hardware;

namespace {

/// The bisection as a Boykov-Kolmogorov maximum flow on an adjacency list (capacities in MB/s).
double boost_bisection(const Topology& t) {
    const int g = t.gpu_count();
    using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
    using FlowGraph = boost::adjacency_list<
        boost::vecS, boost::vecS, boost::directedS,
        boost::property<boost::vertex_index_t, long,
                        boost::property<boost::vertex_color_t, boost::default_color_type,
                                        boost::property<boost::vertex_distance_t, long,
                                                        boost::property<boost::vertex_predecessor_t,
                                                                        Traits::edge_descriptor>>>>,
        boost::property<
            boost::edge_capacity_t, long,
            boost::property<boost::edge_residual_capacity_t, long,
                            boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
    FlowGraph fg(t.vertex_count() + 2);
    const auto source = static_cast<Traits::vertex_descriptor>(t.vertex_count());
    const auto sink = source + 1;
    auto cap = boost::get(boost::edge_capacity, fg);
    auto rev = boost::get(boost::edge_reverse, fg);
    auto add = [&](std::size_t a, std::size_t b, long c) {
        auto e1 = boost::add_edge(a, b, fg).first;
        auto e2 = boost::add_edge(b, a, fg).first;
        cap[e1] = c;
        cap[e2] = 0;
        rev[e1] = e2;
        rev[e2] = e1;
    };
    for (EdgeIndex e = 0; e < t.edge_count(); ++e)
        add(t.edge_source(e), t.edge_target(e), std::lround(t.edge(e).bandwidth / 1e6));
    constexpr long kUnbounded = std::numeric_limits<long>::max() / 4;
    for (int i = 0; i < g; ++i) {
        if (i < g / 2)
            add(source, t.gpu_hbm(i), kUnbounded);
        else
            add(t.gpu_hbm(i), sink, kUnbounded);
    }
    return static_cast<double>(boost::boykov_kolmogorov_max_flow(fg, source, sink)) * 1e6;
}

} // namespace

TEST_CASE("bisection: Dinic on the CSR graph equals Boost's Boykov-Kolmogorov max-flow",
          "[hardware][topology][bisection]") {
    for (const std::string preset :
         {"dgx-a100", "dgx-h100", "pcie-4gpu", "aws-p4d", "dgx2-v100", "dgx-superpod-h100"}) {
        const ClusterSpec node = load_hardware(preset);
        for (int nodes : {1, 2, 3, 5}) {
            if (nodes > 1 && node.node.nics == 0)
                continue; // a node without NICs spans no network
            const Topology t(with_gpu_count(node, nodes * node.node.gpus));
            INFO(preset << " on " << nodes << " nodes");
            const double expected = boost_bisection(t);
            CHECK(expected > 0);
            CHECK(t.bisection_bandwidth() == expected);
        }
    }
    // Rails of several leaves under the spines (a leaf's radix / 2 = 32 nodes down).
    const ClusterSpec h100 = load_hardware("dgx-h100");
    REQUIRE(h100.network.switch_radix / 2 < 40);
    const Topology wide(with_gpu_count(h100, 40 * 8));
    CHECK(wide.bisection_bandwidth() == boost_bisection(wide));
}
