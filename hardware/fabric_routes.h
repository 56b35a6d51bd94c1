#pragma once
/// \file
/// What routing knows of a topology's structure, so that a route costs the hops it takes rather
/// than a search of the fabric.
///
/// Two facts are read off the built graph (never assumed from the builder):
/// - *closed nodes*: every edge between a node and the rest of the graph ends at one of the
///   node's NICs, and no edge joins two nodes directly. Since NICs and GPUs never forward
///   traffic, a route between two vertices of one node (not both NICs) then stays inside it.
/// - *a two-level Clos fabric*: every NIC has exactly one link, to one switch (its leaf); the
///   switches that hold no NIC (spines) and the leaves form a complete bipartite graph, one
///   link each way per (leaf, spine), every uplink of one cost and every downlink of one cost.
///   The shortest route between NICs of two nodes is then NIC -> leaf -> NIC on a shared leaf,
///   or NIC -> leaf -> any spine -> leaf -> NIC, every spine an equal-cost choice.
///
/// The closed form makes the same choice Dijkstra's walk makes (the equal-cost uplinks sorted by
/// edge index, one taken by ecmp_choice at hop 1), so the routes are identical edge for edge;
/// tests hold the two against each other. A graph that is not of this shape (a PCIe-only node
/// has no fabric, a multi-homed NIC, an oversubscribed or three-level tree) is routed by search.

#include "hardware/topology.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace clustersim::hardware::detail {

/// Deterministic ECMP: the index of the next hop among `count` equal-cost ones, sorted by edge
/// index, at hop `hop` of the route from `from` to `to` (splitmix64 finaliser: fixed, portable).
std::size_t ecmp_choice(std::uint64_t from, std::uint64_t to, std::uint64_t hop, std::size_t count);

class FabricIndex {
public:
    /// Reads the structure of the graph of `topology` (its vertices and edges; the rest need
    /// not be built yet) whose edge routing costs are `weight` (by edge index).
    FabricIndex(const Topology& topology, const std::vector<std::int64_t>& weight);

    /// Every way into a node passes one of its NICs, and no link joins two nodes.
    bool closed_nodes() const { return closed_nodes_; }
    /// The network is a two-level Clos fabric as described above.
    bool clos() const { return clos_; }

    /// The shortest route from NIC `from` to NIC `to` of another node, in closed form; nullopt
    /// when the fabric is not a recognised Clos or the two are not NICs of different nodes.
    std::optional<Route> nic_route(const Topology& topology, Topology::VertexId from,
                                   Topology::VertexId to) const;

private:
    static constexpr std::uint32_t kNone = 0xffffffffU;
    bool closed_nodes_ = false;
    bool clos_ = false;
    std::size_t spines_ = 0;
    std::vector<std::uint32_t> leaf_of_;  ///< per vertex: leaf ordinal (leaves), or kNone
    std::vector<std::uint32_t> spine_of_; ///< per vertex: spine ordinal (spines), or kNone
    std::vector<std::uint32_t> nic_up_;   ///< per vertex: a NIC's edge to its leaf, or kNone
    std::vector<std::uint32_t> nic_down_; ///< per vertex: the leaf's edge to the NIC, or kNone
    std::vector<std::uint32_t> nic_leaf_; ///< per vertex: a NIC's leaf ordinal, or kNone
    std::vector<EdgeIndex> up_;           ///< leaf * spines + k: the leaf's uplinks, by edge index
    std::vector<EdgeIndex> down_; ///< leaf * spines + spine: the spine's link down to the leaf
};

} // namespace clustersim::hardware::detail
