#include "strategies/collectives/resource_claims.h"

#include <algorithm>

namespace clustersim::strategies::collectives::detail {

namespace {
constexpr std::uint32_t kNone = ~std::uint32_t{0};
using hardware::VertexKind;
} // namespace

void ResourceClaims::claim(std::uint32_t who, std::span<const int> nodes) {
    if (owner_.empty())
        index();
    ++claims_;
    for (const int node : nodes) {
        const auto n = static_cast<std::size_t>(node);
        for (std::uint32_t i = node_edge_first_[n]; i < node_edge_first_[n + 1]; ++i)
            mark(who, node_edge_[i]);
        if (!fabric_claimed())
            continue;
        for (std::uint32_t i = node_leaf_first_[n]; i < node_leaf_first_[n + 1]; ++i) {
            const std::uint32_t leaf = node_leaf_[i];
            if (leaf_stamp_[leaf] == claims_)
                continue; // marked for a node beside this one
            leaf_stamp_[leaf] = claims_;
            for (std::uint32_t k = leaf_edge_first_[leaf]; k < leaf_edge_first_[leaf + 1]; ++k)
                mark(who, leaf_edge_[k]);
        }
    }
}

void ResourceClaims::mark(std::uint32_t who, sim::ResourceId e) {
    std::uint32_t& o = owner_[e];
    if (o == 0)
        o = who + 1;
    else if (o != who + 1)
        o = kShared;
}

void ResourceClaims::index() {
    const hardware::Topology& t = topology_;
    const std::size_t ne = t.edge_count();
    const auto nodes = static_cast<std::size_t>(t.node_count());
    owner_.assign(ne, 0);
    // The edges of each node: a count per node, a running sum, then a fill.
    node_edge_first_.assign(nodes + 1, 0);
    const auto each_node_end = [&](std::size_t e, auto&& visit) {
        const auto i = static_cast<hardware::EdgeIndex>(e);
        const int a = t.vertex(t.edge_source(i)).node;
        const int b = t.vertex(t.edge_target(i)).node;
        if (a >= 0)
            visit(static_cast<std::size_t>(a));
        if (b >= 0 && b != a)
            visit(static_cast<std::size_t>(b));
    };
    for (std::size_t e = 0; e < ne; ++e)
        each_node_end(e, [&](std::size_t n) { ++node_edge_first_[n + 1]; });
    for (std::size_t n = 0; n < nodes; ++n)
        node_edge_first_[n + 1] += node_edge_first_[n];
    node_edge_.resize(node_edge_first_[nodes]);
    std::vector<std::uint32_t> cursor(node_edge_first_.begin(), node_edge_first_.end() - 1);
    for (std::size_t e = 0; e < ne; ++e)
        each_node_end(
            e, [&](std::size_t n) { node_edge_[cursor[n]++] = static_cast<sim::ResourceId>(e); });
    index_fabric();
}

void ResourceClaims::index_fabric() {
    const hardware::Topology& t = topology_;
    const std::size_t nv = t.vertex_count();
    // Ordinals of the leaves and spines.
    std::vector<std::uint32_t> ordinal(nv, kNone);
    std::uint32_t leaves = 0, spines = 0;
    std::vector<hardware::Topology::VertexId> leaf_vertex;
    for (std::size_t v = 0; v < nv; ++v) {
        const VertexKind k = t.vertex(v).kind;
        if (k == VertexKind::leaf) {
            ordinal[v] = leaves++;
            leaf_vertex.push_back(v);
        } else if (k == VertexKind::spine) {
            ordinal[v] = spines++;
        }
    }
    if (leaves == 0)
        return;
    // The shape: switches link only NICs to leaves and leaves to spines; every leaf has one link
    // each way to every spine; uplinks are alike, and downlinks (routing's cost is by bandwidth).
    double up_bandwidth = -1, down_bandwidth = -1;
    std::vector<std::uint32_t> seen_up(spines, kNone), seen_down(spines, kNone);
    std::vector<std::vector<std::uint32_t>> nodes_of(leaves);
    for (std::uint32_t l = 0; l < leaves; ++l) {
        const auto v = leaf_vertex[l];
        std::uint32_t up = 0, down = 0;
        for (const hardware::EdgeIndex e : t.out_edges(v)) {
            const auto w = t.edge_target(e);
            const VertexKind k = t.vertex(w).kind;
            if (k == VertexKind::nic)
                continue;
            if (k != VertexKind::spine || seen_up[ordinal[w]] == l)
                return;
            const double bw = t.edge(e).bandwidth;
            if (up_bandwidth >= 0 && bw != up_bandwidth)
                return;
            up_bandwidth = bw;
            seen_up[ordinal[w]] = l;
            ++up;
        }
        for (const hardware::EdgeIndex e : t.in_edges(v)) {
            const auto w = t.edge_source(e);
            const VertexKind k = t.vertex(w).kind;
            if (k == VertexKind::nic) {
                nodes_of[l].push_back(static_cast<std::uint32_t>(t.vertex(w).node));
                continue;
            }
            if (k != VertexKind::spine || seen_down[ordinal[w]] == l)
                return;
            const double bw = t.edge(e).bandwidth;
            if (down_bandwidth >= 0 && bw != down_bandwidth)
                return;
            down_bandwidth = bw;
            seen_down[ordinal[w]] = l;
            ++down;
        }
        if (up != spines || down != spines)
            return;
    }
    // Spines link to leaves alone (their links to leaves are counted above from the leaves).
    for (std::size_t v = 0; v < nv; ++v) {
        if (t.vertex(v).kind != VertexKind::spine)
            continue;
        if (t.out_edges(v).size() != leaves || t.in_edges(v).size() != leaves)
            return;
    }
    // Recognised: each leaf's links to and from the spines, and each node's leaves.
    leaf_edge_first_.assign(leaves + 1, 0);
    for (std::uint32_t l = 0; l < leaves; ++l) {
        const auto v = leaf_vertex[l];
        for (const hardware::EdgeIndex e : t.out_edges(v))
            if (t.vertex(t.edge_target(e)).kind == VertexKind::spine)
                leaf_edge_.push_back(e);
        for (const hardware::EdgeIndex e : t.in_edges(v))
            if (t.vertex(t.edge_source(e)).kind == VertexKind::spine)
                leaf_edge_.push_back(e);
        leaf_edge_first_[l + 1] = static_cast<std::uint32_t>(leaf_edge_.size());
    }
    const auto nodes = static_cast<std::size_t>(t.node_count());
    node_leaf_first_.assign(nodes + 1, 0);
    for (std::uint32_t l = 0; l < leaves; ++l) {
        auto& of = nodes_of[l];
        std::sort(of.begin(), of.end());
        of.erase(std::unique(of.begin(), of.end()), of.end());
        for (const std::uint32_t n : of)
            ++node_leaf_first_[n + 1];
    }
    for (std::size_t n = 0; n < nodes; ++n)
        node_leaf_first_[n + 1] += node_leaf_first_[n];
    node_leaf_.resize(node_leaf_first_[nodes]);
    std::vector<std::uint32_t> cursor(node_leaf_first_.begin(), node_leaf_first_.end() - 1);
    for (std::uint32_t l = 0; l < leaves; ++l)
        for (const std::uint32_t n : nodes_of[l])
            node_leaf_[cursor[n]++] = l;
    leaf_stamp_.assign(leaves, 0);
}

} // namespace clustersim::strategies::collectives::detail
