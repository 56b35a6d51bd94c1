#include "hardware/fabric_routes.h"

#include <algorithm>
#include <limits>

namespace clustersim::hardware::detail {

namespace {
std::uint64_t mix(std::uint64_t x) { // splitmix64 finaliser: a fixed, portable hash
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
} // namespace

std::size_t ecmp_choice(std::uint64_t from, std::uint64_t to, std::uint64_t hop,
                        std::size_t count) {
    return static_cast<std::size_t>(mix(mix(from * 1000003ULL + to) + hop) % count);
}

FabricIndex::FabricIndex(const Topology& t, const std::vector<std::int64_t>& weight) {
    const std::size_t nv = t.vertex_count();
    const std::size_t ne = t.edge_count();
    auto node = [&](std::size_t v) { return t.vertex(v).node; };
    auto is_nic = [&](std::size_t v) { return t.vertex(v).kind == VertexKind::nic; };

    // Closed nodes: a link between a node and anything outside it ends at one of its NICs, on
    // the node's side, and leads to the network (node -1), never straight into another node.
    closed_nodes_ = true;
    for (EdgeIndex e = 0; e < ne && closed_nodes_; ++e) {
        const std::size_t u = t.edge_source(e);
        const std::size_t v = t.edge_target(e);
        if (node(u) == node(v))
            continue;
        if (node(u) >= 0 && node(v) >= 0)
            closed_nodes_ = false;
        else if (!is_nic(node(u) >= 0 ? u : v))
            closed_nodes_ = false;
    }
    if (!closed_nodes_)
        return;

    // Every NIC: exactly one link out to the network and one in, from the same switch, its leaf.
    leaf_of_.assign(nv, kNone);
    nic_up_.assign(nv, kNone);
    nic_down_.assign(nv, kNone);
    nic_leaf_.assign(nv, kNone);
    std::vector<std::size_t> leaves;
    bool any_nic = false;
    for (std::size_t v = 0; v < nv; ++v) {
        if (!is_nic(v))
            continue;
        any_nic = true;
        int outs = 0;
        int ins = 0;
        std::size_t up_to = 0;
        std::size_t down_from = 0;
        for (const EdgeIndex e : t.out_edges(v)) {
            const std::size_t w = t.edge_target(e);
            if (node(w) < 0) {
                ++outs;
                up_to = w;
                nic_up_[v] = e;
            }
        }
        for (const EdgeIndex e : t.in_edges(v)) {
            const std::size_t w = t.edge_source(e);
            if (node(w) < 0) {
                ++ins;
                down_from = w;
                nic_down_[v] = e;
            }
        }
        if (outs != 1 || ins != 1 || up_to != down_from)
            return; // not a single-homed NIC: no closed form
        if (leaf_of_[up_to] == kNone) {
            leaf_of_[up_to] = static_cast<std::uint32_t>(leaves.size());
            leaves.push_back(up_to);
        }
        nic_leaf_[v] = leaf_of_[up_to];
    }
    if (!any_nic)
        return;

    // The other network vertices are spines; the leaf-spine links must form a complete
    // bipartite graph of uniform cost in each direction.
    spine_of_.assign(nv, kNone);
    for (std::size_t v = 0; v < nv; ++v) {
        if (node(v) < 0 && leaf_of_[v] == kNone)
            spine_of_[v] = static_cast<std::uint32_t>(spines_++);
    }
    const std::size_t nl = leaves.size();
    up_.assign(nl * spines_, kNone);
    down_.assign(nl * spines_, kNone);
    std::vector<std::size_t> ups(nl, 0);
    std::vector<char> has_up(nl * spines_, 0);
    std::int64_t up_cost = -1;
    std::int64_t down_cost = -1;
    auto same_cost = [](std::int64_t& seen, std::int64_t w) {
        if (seen < 0)
            seen = w;
        return seen == w;
    };
    for (EdgeIndex e = 0; e < ne; ++e) {
        const std::size_t u = t.edge_source(e);
        const std::size_t v = t.edge_target(e);
        if (node(u) >= 0 || node(v) >= 0)
            continue;
        if (leaf_of_[u] != kNone && spine_of_[v] != kNone) {
            const std::size_t l = leaf_of_[u];
            char& twice = has_up[l * spines_ + spine_of_[v]];
            if (twice || !same_cost(up_cost, weight[e]))
                return;
            twice = 1;
            up_[l * spines_ + ups[l]++] = e;
        } else if (spine_of_[u] != kNone && leaf_of_[v] != kNone) {
            EdgeIndex& slot = down_[leaf_of_[v] * spines_ + spine_of_[u]];
            if (slot != kNone || !same_cost(down_cost, weight[e]))
                return;
            slot = e;
        } else {
            return; // a leaf-leaf or spine-spine link: not two levels
        }
    }
    // Each leaf: one uplink to every spine (distinct, as counted above) and one downlink from
    // every spine.
    for (std::size_t l = 0; l < nl; ++l) {
        if (ups[l] != spines_)
            return;
        const auto first = up_.begin() + static_cast<std::ptrdiff_t>(l * spines_);
        std::sort(first, first + static_cast<std::ptrdiff_t>(spines_));
        for (std::size_t k = 0; k < spines_; ++k) {
            if (down_[l * spines_ + k] == kNone)
                return;
        }
    }
    clos_ = true;
}

std::optional<Route> FabricIndex::nic_route(const Topology& t, Topology::VertexId from,
                                            Topology::VertexId to) const {
    if (!clos_ || from >= nic_leaf_.size() || to >= nic_leaf_.size())
        return std::nullopt;
    const std::uint32_t la = nic_leaf_[from];
    const std::uint32_t lb = nic_leaf_[to];
    if (la == kNone || lb == kNone || from == to)
        return std::nullopt;
    if (t.vertex(from).node == t.vertex(to).node)
        return std::nullopt; // within a node a route may also run over PCIe: search
    Route r;
    auto hop = [&](EdgeIndex e) {
        r.edges.push_back(e);
        r.bottleneck = std::min(r.bottleneck, t.edge(e).bandwidth);
        r.latency += t.edge(e).latency;
    };
    r.bottleneck = std::numeric_limits<double>::infinity();
    hop(nic_up_[from]);
    if (la != lb) {
        if (spines_ == 0)
            return std::nullopt; // unreachable: the search says so
        const EdgeIndex up = up_[la * spines_ + ecmp_choice(from, to, 1, spines_)];
        hop(up);
        const std::uint32_t s = spine_of_[t.edge_target(up)];
        hop(down_[lb * spines_ + s]);
    }
    hop(nic_down_[to]);
    return r;
}

} // namespace clustersim::hardware::detail
