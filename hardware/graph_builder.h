#pragma once
/// \file
/// Internal to hardware/: how Topology's builders (topology.cpp, torus_topology.cpp) add
/// vertices and edges to its arrays.

#include "hardware/graph_size.h"
#include "hardware/topology.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace clustersim::hardware::detail {

/// Adds vertices and edges to a Topology's arrays (by index, in the order added); the
/// compressed rows are laid out once all are in (Topology::index_edges).
struct GraphBuilder {
    using VertexId = Topology::VertexId;
    std::vector<VertexInfo>& vertices;
    std::vector<EdgeInfo>& edges;
    std::vector<std::pair<std::uint32_t, std::uint32_t>>& ends;
    std::vector<std::int64_t>& weight;

    VertexId add_vertex(VertexKind kind, int node, int index, int place = 0) {
        vertices.push_back(VertexInfo{kind, node, index, place});
        return static_cast<VertexId>(vertices.size() - 1);
    }
    void add_edge(VertexId from, VertexId to, LinkKind kind, double bw, sim::Time latency,
                  std::int64_t cost) {
        ends.emplace_back(static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to));
        edges.push_back(EdgeInfo{kind, bw, latency});
        weight.push_back(cost);
    }
    void add_link(VertexId a, VertexId b, LinkKind kind, const LinkSpec& link,
                  sim::Time extra_into_b = sim::Time::zero(),
                  sim::Time extra_into_a = sim::Time::zero()) {
        // Serialisation cost of a kilobyte in femtoseconds: integer, so equal paths tie exactly.
        const auto cost = static_cast<std::int64_t>(std::llround(1e18 / link.bandwidth));
        add_edge(a, b, kind, link.bandwidth, link.latency + extra_into_b, cost);
        add_edge(b, a, kind, link.bandwidth, link.latency + extra_into_a, cost);
    }
    /// Room for exactly `size`, so that no vector doubles on the way (doublings were 18% of
    /// the page faults of a whole GPT-3 step on 16,384 GPUs).
    void reserve(const GraphSize& size) {
        const auto nv = static_cast<std::size_t>(size.vertices);
        const auto ne = static_cast<std::size_t>(size.edges);
        vertices.reserve(nv);
        edges.reserve(ne);
        ends.reserve(ne);
        weight.reserve(ne);
    }
};

/// Adds the ICI torus of one slice (node `node`) to `g`: a router vertex per chip, the edges
/// from each device's HBM to its chip's router, and the ICI links between neighbouring routers
/// (torus_topology.cpp). `hbm` holds the slice's devices' HBM vertices, by local index.
void add_torus(GraphBuilder& g, const TorusSpec& torus, int node,
               const std::vector<Topology::VertexId>& hbm);

/// The vertices and directed edges add_torus adds for one slice.
GraphSize torus_size(const TorusSpec& torus);

} // namespace clustersim::hardware::detail
