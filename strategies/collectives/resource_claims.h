#pragma once
/// \file
/// Internal to the flow runner: which communicators' flows can cross each resource of a
/// cluster's flow network, so that symmetry's proof (flow_fold.h) counts every flow a resource
/// may carry when it counts a round's (`own`).
///
/// A communicator claims the nodes it spans. Routes between two vertices of one node stay in it
/// (NICs and GPUs never forward traffic: hardware/topology.h), so an edge with an end in a node
/// carries only flows of communicators spanning that node. The fabric's switches carry traffic
/// between nodes, but not anyone's: on the two-level fat tree the topology builds (every leaf
/// linked once each way to every spine, uplinks alike and downlinks alike), the shortest route
/// between the NICs of two nodes is NIC -> leaf -> NIC or NIC -> leaf -> spine -> leaf -> NIC
/// (a route through a third leaf crosses two more links for nothing), so a leaf's uplinks carry
/// only flows from the NICs under it, and its downlinks only flows to them. A leaf's links to the
/// spines are therefore claimed with the nodes under it: a communicator whose nodes fill its
/// leaves alone (a data-parallel group of 2,048 nodes holds 102 leaves of its own per rail) owns
/// the fabric links its rounds cross, and symmetry proves the flows between its leaves as it
/// proves those within a node. Where the fabric is not of that shape (checked, not assumed),
/// switch-to-switch links are nobody's and no flow crossing one is proved.
///
/// Tables are compressed rows over the network's resources, made on the first claim: a cluster
/// of 131,072 GPUs has 1.7 million links, and a claim costs the edges of the nodes it spans.

#include "hardware/topology.h"
#include "sim/flow_network.h"

#include <cstdint>
#include <span>
#include <vector>

namespace clustersim::strategies::collectives::detail {

class ResourceClaims {
public:
    explicit ResourceClaims(const hardware::Topology& topology)
        : topology_(topology) {}

    /// Records that claimant `who` (>= 0, the caller's numbering) runs flows between GPUs of the
    /// topology nodes `nodes`.
    void claim(std::uint32_t who, std::span<const int> nodes);
    /// Only claimant `who`'s flows can cross resource `e`: it claimed `e`, and no one else did.
    bool own(std::uint32_t who, sim::ResourceId e) const {
        return e < owner_.size() && owner_[e] == who + 1;
    }
    /// Whether the fabric was recognised, its leaves' links claimed with their nodes.
    bool fabric_claimed() const { return !leaf_edge_first_.empty(); }

private:
    void index();
    /// Fills leaf_of_node_* and leaf_edge_* if the fabric is the two-level tree described above.
    void index_fabric();
    void mark(std::uint32_t who, sim::ResourceId e);

    const hardware::Topology& topology_;
    /// Per resource: 0 nobody, kShared several claimants, else the one claimant plus one.
    std::vector<std::uint32_t> owner_;
    static constexpr std::uint32_t kShared = ~std::uint32_t{0};
    /// Per node: the edges with an end in it, node_edge_[node_edge_first_[n] ..
    /// node_edge_first_[n + 1]).
    std::vector<std::uint32_t> node_edge_first_;
    std::vector<sim::ResourceId> node_edge_;
    /// Per node: the leaves (by ordinal) its NICs hang from; per leaf: its links to and from the
    /// spines; per leaf: the claim that last marked them (a node's leaves are shared with the
    /// nodes beside it).
    std::vector<std::uint32_t> node_leaf_first_, node_leaf_;
    std::vector<std::uint32_t> leaf_edge_first_;
    std::vector<sim::ResourceId> leaf_edge_;
    std::vector<std::uint32_t> leaf_stamp_;
    std::uint32_t claims_ = 0;
};

} // namespace clustersim::strategies::collectives::detail
