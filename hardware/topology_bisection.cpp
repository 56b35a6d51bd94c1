// Bisection bandwidth of a Topology as a maximum flow (Boost.Graph's Boykov-Kolmogorov).
#include "hardware/topology.h"

// GCC 12 reports false "maybe-uninitialized" warnings inside Boost's max-flow iterators when
// they are inlined at -O2; the code is Boost's, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include <cmath>
#include <limits>

namespace clustersim::hardware {

double Topology::bisection_bandwidth() const {
    const int g = gpu_count();
    if (g < 2)
        return 0;
    // A flow graph with a super source feeding the first half of the GPUs and a super sink fed
    // by the second half. Capacities in MB/s as integers keep the max-flow exact.
    using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
    using FlowGraph = boost::adjacency_list<
        boost::vecS, boost::vecS, boost::directedS,
        boost::property<
            boost::vertex_name_t, std::string,
            boost::property<
                boost::vertex_index_t, long,
                boost::property<boost::vertex_color_t, boost::default_color_type,
                                boost::property<boost::vertex_distance_t, long,
                                                boost::property<boost::vertex_predecessor_t,
                                                                Traits::edge_descriptor>>>>>,
        boost::property<
            boost::edge_capacity_t, long,
            boost::property<boost::edge_residual_capacity_t, long,
                            boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
    FlowGraph fg(vertex_count() + 2);
    const auto source = static_cast<Traits::vertex_descriptor>(vertex_count());
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
    for (EdgeIndex e = 0; e < edge_count(); ++e)
        add(edge_source(e), edge_target(e), std::lround(edge(e).bandwidth / 1e6));
    constexpr long kUnbounded = std::numeric_limits<long>::max() / 4;
    for (int i = 0; i < g; ++i) {
        if (i < g / 2)
            add(source, gpu_hbm(i), kUnbounded);
        else
            add(gpu_hbm(i), sink, kUnbounded);
    }
    const long flow = boost::boykov_kolmogorov_max_flow(fg, source, sink);
    return static_cast<double>(flow) * 1e6;
}

} // namespace clustersim::hardware
