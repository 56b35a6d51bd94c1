#pragma once
/// \file
/// Internal to Plan (plan.cpp, plan_trees.cpp): the load a set of routes puts on each edge of
/// the topology, and the busiest edge's cost. No other module includes it.

#include "hardware/topology.h"

#include <array>
#include <cstddef>
#include <vector>

namespace clustersim::strategies::collectives::detail {

/// Per-edge loads of a set of flows, with the edges touched kept for a cheap maximum; K loads
/// per edge (EdgeLoads: one; ProtocolEdgeLoads: one per protocol, for a set of flows whose
/// wire bytes differ by protocol only, whose edges are then walked once for all of them).
/// The per-edge array is borrowed from a per-thread pool and handed back zeroed (only the
/// touched edges are reset), so a pattern's cost is what its flows cross, not the size of the
/// cluster: a ring's plan costs one pattern per hop, and a fresh array of every edge per
/// pattern made a 16,384-GPU communicator quadratic (memset 56% of a GPT-3 step's time).
template <std::size_t K>
class EdgeLoadsOf {
public:
    using Load = std::array<double, K>;

    explicit EdgeLoadsOf(const hardware::Topology& topo)
        : topo_(topo)
        , load_(borrow(topo.edge_count())) {}
    EdgeLoadsOf(const EdgeLoadsOf&) = delete;
    EdgeLoadsOf& operator=(const EdgeLoadsOf&) = delete;
    ~EdgeLoadsOf() {
        clear();
        pool().push_back(std::move(load_));
    }
    void add(const RouteInfo& r, const Load& wire_bytes) {
        for (sim::ResourceId e : r.edges) {
            Load& l = load_[e];
            if (l == Load{})
                touched_.push_back(e);
            for (std::size_t k = 0; k < K; ++k)
                l[k] += wire_bytes[k];
        }
    }
    void add(const RouteInfo& r, double wire_bytes) requires(K == 1) { add(r, Load{wire_bytes}); }
    /// Per load, the largest cost among the edges of `r` (max_cost over a part of the touched
    /// edges).
    Load max_costs_on(const RouteInfo& r) const {
        Load worst{};
        for (sim::ResourceId e : r.edges) {
            const double bandwidth = topo_.edge(e).bandwidth;
            for (std::size_t k = 0; k < K; ++k)
                worst[k] = std::max(worst[k], load_[e][k] / bandwidth);
        }
        return worst;
    }
    double max_cost() const requires(K == 1) {
        double worst = 0;
        for (sim::ResourceId e : touched_)
            worst = std::max(worst, load_[e][0] / topo_.edge(e).bandwidth);
        return worst;
    }
    void clear() {
        for (sim::ResourceId e : touched_)
            load_[e] = Load{};
        touched_.clear();
    }

private:
    static std::vector<std::vector<Load>>& pool() {
        thread_local std::vector<std::vector<Load>> buffers; // zeroed; one per nested use
        return buffers;
    }
    static std::vector<Load> borrow(std::size_t edges) {
        auto& buffers = pool();
        std::vector<Load> b;
        if (!buffers.empty()) {
            b = std::move(buffers.back());
            buffers.pop_back();
        }
        if (b.size() < edges)
            b.resize(edges, Load{});
        return b;
    }

    const hardware::Topology& topo_;
    std::vector<Load> load_;
    std::vector<sim::ResourceId> touched_;
};

using EdgeLoads = EdgeLoadsOf<1>;
using ProtocolEdgeLoads = EdgeLoadsOf<hardware::kProtocolCount>;

} // namespace clustersim::strategies::collectives::detail
