#include "strategies/collectives/plan.h"

#include "base/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <stdexcept>
#include <tuple>

namespace clustersim::strategies::collectives::detail {
namespace {

/// The busiest link of each window of K consecutive stages lo .. lo + K - 1, lo = 1 .. S-K-1,
/// by sliding one window along: each stage's loads added once and taken off once, the busiest
/// edge from a max-heap whose entries are dropped once their edge's load has changed. For long
/// pipelines (a broadcast's chain over 16,384 ranks has 16,383 stages): summing every window
/// afresh costs (S - K) x K stages, minutes at 100,000 ranks. An edge no hop crosses any more
/// is exactly 0 again (hops counted), so the maximum holds no residue of what left.
std::vector<double> sliding_middle_windows(const hardware::Topology& topo,
                                           const std::vector<std::vector<TreeData::Loaded>>& sl,
                                           int S, std::int64_t K) {
    const std::size_t E = topo.edge_count();
    std::vector<double> load(E, 0.0);
    std::vector<int> hops(E, 0);
    std::vector<std::uint64_t> version(E, 0);
    using Entry = std::tuple<double, std::uint64_t, sim::ResourceId>; // cost, version, edge
    std::priority_queue<Entry> heap;
    auto apply = [&](std::int64_t o, bool add) {
        for (const TreeData::Loaded& f : sl[size_t(o)]) {
            for (sim::ResourceId e : f.route->edges) {
                hops[e] += add ? 1 : -1;
                load[e] = hops[e] == 0 ? 0.0 : load[e] + (add ? f.wire : -f.wire);
                ++version[e];
                if (hops[e] > 0)
                    heap.emplace(load[e] / topo.edge(e).bandwidth, version[e], e);
            }
        }
    };
    std::vector<double> out;
    for (std::int64_t o = 1; o < 1 + K; ++o)
        apply(o, true);
    for (std::int64_t lo = 1; lo + K - 1 <= S - 2; ++lo) {
        if (lo > 1) {
            apply(lo - 1, false);
            apply(lo + K - 1, true);
        }
        while (!heap.empty() && std::get<1>(heap.top()) != version[std::get<2>(heap.top())])
            heap.pop();
        out.push_back(heap.empty() ? 0.0 : std::get<0>(heap.top()));
    }
    return out;
}

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

LinkLevel level_of(const hardware::Topology& topo, const hardware::Route& r) {
    LinkLevel level = LinkLevel::nvlink;
    for (hardware::EdgeIndex e : r.edges) {
        switch (topo.edge(e).kind) {
        case hardware::LinkKind::nic:
        case hardware::LinkKind::fabric:
            return LinkLevel::network;
        case hardware::LinkKind::pcie:
        case hardware::LinkKind::host:
            level = LinkLevel::pcie;
            break;
        default:
            break;
        }
    }
    return level;
}

/// NCCL's binary tree over positions 0..n-1 (ncclGetBtree): the parent of position r.
int btree_parent(int r, int n) {
    if (r == 0)
        return -1;
    const int bit = r & -r;
    int up = (r ^ bit) | (bit << 1);
    if (up >= n)
        up = r ^ bit;
    return up;
}

/// trees.cc ncclGetDtree: the second tree mirrors the first (even count) or shifts it by one
/// (odd); returns the parent of position q in tree tr and q's child type (0: its parent's first
/// child) in that tree's own numbering.
int dtree_parent(int tr, int q, int count, int& child_type) {
    const int m = tr == 0 ? q : count % 2 == 0 ? count - 1 - q : (q - 1 + count) % count;
    const int u = btree_parent(m, count);
    child_type = m < u ? 0 : 1;
    if (u < 0 || tr == 0)
        return u;
    return count % 2 == 0 ? count - 1 - u : (u + 1) % count;
}

} // namespace

Plan::Plan(const hardware::Topology& topology, std::vector<int> gpu_list)
    : topo(topology)
    , tuning(topology.spec().collectives)
    , gpus(std::move(gpu_list))
    , n(static_cast<int>(gpus.size())) {
    const auto& spec = topo.spec();
    if (gpus.empty())
        throw InputError("a communicator needs at least one GPU");
    std::set<int> seen;
    for (int g : gpus) {
        if (g < 0 || g >= topo.gpu_count())
            throw InputError("GPU " + std::to_string(g) +
                             " is not in the cluster (it has GPUs 0 to " +
                             std::to_string(topo.gpu_count() - 1) + ")");
        if (!seen.insert(g).second)
            throw InputError("GPU " + std::to_string(g) + " appears twice in the communicator");
    }
    // The transport scales InfiniBand's network efficiencies and adds its latency to every
    // network step (hardware/specs.h: Transport).
    for (auto& proto : tuning.protocols) {
        auto& net = proto.levels[static_cast<std::size_t>(LinkLevel::network)];
        net.efficiency *= spec.network.transport_efficiency;
        net.step_latency += spec.network.transport_latency;
    }
    for (auto& per_level : tuning.tree.step_latency) {
        auto& net = per_level[static_cast<std::size_t>(LinkLevel::network)];
        if (net > sim::Time::zero())
            net += spec.network.transport_latency;
    }
    if (!tuning.present())
        throw InputError("hardware '" + spec.name +
                         "' has no 'collectives:' section (protocol latencies and efficiencies); "
                         "add one or extend a preset that has it");

    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return gpus[size_t(a)] < gpus[size_t(b)]; });
    rank_node.assign(size_t(n), 0);
    rank_local.assign(size_t(n), 0);
    for (int r : order) {
        const int tn = topo.node_of(gpus[size_t(r)]);
        if (node_topology.empty() || node_topology.back() != tn) {
            node_topology.push_back(tn);
            node_ranks.emplace_back();
        }
        rank_node[size_t(r)] = static_cast<int>(node_ranks.size()) - 1;
        rank_local[size_t(r)] = static_cast<int>(node_ranks.back().size());
        node_ranks.back().push_back(r);
    }
    for (const auto& members : node_ranks)
        regular = regular && members.size() == node_ranks.front().size();
    route_rows_.resize(static_cast<std::size_t>(n) + node_ranks.size());
    intra_level = spec.node.fabric == hardware::IntraNodeFabric::nvswitch ? LinkLevel::nvlink
                                                                          : LinkLevel::pcie;
    nvls_capable = spec.node.nvls && spec.node.fabric == hardware::IntraNodeFabric::nvswitch &&
                   node_ranks.size() == 1 && n >= 2;
    for (int g : gpus) {
        const hardware::Route r = topo.memory_route(g);
        memory_edges_.push_back(r.edges.at(0));
    }
    // PXN needs NVLink between the sender and the relay (src/graph/paths.cc: the relay's
    // path to the sender at most PATH_NVL), so NVSwitch nodes only, and NICs to relay to.
    if (tuning.pxn && spec.node.fabric == hardware::IntraNodeFabric::nvswitch &&
        spec.node.nics > 0 && node_ranks.size() > 1) {
        rank_by_device_.assign(node_ranks.size(), std::vector<int>(size_t(spec.node.gpus), -1));
        for (int r = 0; r < n; ++r)
            rank_by_device_[size_t(rank_node[size_t(r)])]
                           [size_t(gpus[size_t(r)] % spec.node.gpus)] = r;
    }
    build_rings();
    if (nvls_capable) {
        const int sw = switch_of(0);
        std::vector<PFlow> ar, ag, rs;
        const double inv = 1.0 / n;
        for (int r = 0; r < n; ++r) {
            // all_reduce: every rank feeds every slice to the switch and stores its own reduced
            // slice back (multimem.ld_reduce + multimem.st); it receives its slice and the
            // multicast of all slices.
            ar.push_back({r, sw, 1 + inv});
            ar.push_back({sw, r, 1 + inv});
            ag.push_back({r, sw, inv});
            ag.push_back({sw, r, 1});
            rs.push_back({r, sw, 1});
            rs.push_back({sw, r, inv});
        }
        nvls_all_reduce = pattern_cost(ar, Protocol::simple);
        nvls_all_gather = pattern_cost(ag, Protocol::simple);
        nvls_reduce_scatter = pattern_cost(rs, Protocol::simple);
    }
}

void Plan::build_rings() {
    const int nodes = static_cast<int>(node_ranks.size());
    if (nodes == 1) {
        channels = 1;
        cycles = {node_ranks[0]};
    } else {
        int fewest = n;
        for (const auto& members : node_ranks)
            fewest = std::min(fewest, static_cast<int>(members.size()));
        channels = std::max(1, std::min(fewest, std::max(1, topo.spec().node.nic_ports())));
        // With fewer NICs than GPUs, channel c runs on the GPUs beside NIC c (stride g / nics),
        // so that each NIC carries one channel each way (NCCL's rings over rails).
        const int stride = std::max(1, fewest / channels);
        for (int c = 0; c < channels; ++c) {
            std::vector<int> cycle;
            for (int k = 0; k < nodes; ++k) {
                const auto& m = node_ranks[size_t(k)];
                const int p = static_cast<int>(m.size());
                const int a = (c * stride) % p;
                const int b = (c * stride + 1) % p;
                for (int i = 0; i < p; ++i) {
                    // Even nodes run a, a-1, ..., b; odd nodes b, b+1, ..., a: the hop out of
                    // node k leaves from the GPU that enters node k+1, so it stays on a rail.
                    const int local = (k % 2 == 0) ? (a - i + p) % p : (b + i) % p;
                    cycle.push_back(m[size_t(local)]);
                }
            }
            cycles.push_back(std::move(cycle));
        }
    }
    std::map<std::pair<int, int>, double> step;
    if (n > 1) {
        for (const auto& cycle : cycles) {
            for (int p = 0; p < n; ++p)
                step[{cycle[size_t(p)], cycle[size_t((p + 1) % n)]}] += 1.0 / channels;
        }
    }
    for (const auto& [pair, bytes] : step)
        ring_step.push_back({pair.first, pair.second, bytes});
    // pattern_cost and pattern_level of the ring's step and of each hop of cycle 0, with each
    // route looked up once for every protocol (the same sums in the same order).
    {
        std::vector<const RouteInfo*> step_routes;
        for (const PFlow& f : ring_step)
            step_routes.push_back(f.src == f.dst || f.bytes <= 0 ? nullptr : &route(f.src, f.dst));
        EdgeLoads loads(topo);
        for (Protocol p : hardware::kAllProtocols) {
            loads.clear();
            for (std::size_t i = 0; i < ring_step.size(); ++i) {
                if (step_routes[i] != nullptr)
                    loads.add(*step_routes[i],
                              ring_step[i].bytes / efficiency(step_routes[i]->level, p));
            }
            ring_cost[idx(p)] = loads.max_cost();
        }
    }
    ring_level = pattern_level(ring_step);

    cycle_position.assign(size_t(n), 0);
    for (int i = 0; i < n; ++i)
        cycle_position[size_t(cycles[0][size_t(i)])] = i;
    EdgeLoads loads(topo);
    for (int i = 0; i < n; ++i) {
        const int a = cycles[0][size_t(i)];
        const int b = cycles[0][size_t((i + 1) % n)];
        if (n < 2 || a == b) {
            hop_level.push_back(intra_level);
            for (Protocol p : hardware::kAllProtocols)
                hop_cost[idx(p)].push_back(0.0);
            continue;
        }
        const RouteInfo& r = route(a, b);
        hop_level.push_back(r.level);
        for (Protocol p : hardware::kAllProtocols) {
            loads.clear();
            loads.add(r, 1.0 / efficiency(r.level, p));
            hop_cost[idx(p)].push_back(loads.max_cost());
        }
    }
    for (Protocol p : hardware::kAllProtocols) {
        auto levels = hop_cost[idx(p)];
        std::sort(levels.begin(), levels.end());
        levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
        hop_cost_levels[idx(p)] = std::move(levels);
    }
}

int Plan::pxn_relay(int src, int dst) const {
    const int node = rank_node[size_t(src)];
    if (rank_by_device_.empty() || node == rank_node[size_t(dst)])
        return -1;
    // ncclTopoGetNetDev (src/graph/search.cc): the local rank with the peer's device index
    // (nvmlDev) gives the NIC; PXN level 2 relays through the GPU beside that NIC. No such
    // rank in the communicator: the send keeps src's own NIC.
    const int per_node = topo.spec().node.gpus;
    const int relay = rank_by_device_[size_t(node)][size_t(gpus[size_t(dst)] % per_node)];
    if (relay < 0 || topo.gpu_nic(gpus[size_t(relay)]) == topo.gpu_nic(gpus[size_t(src)]))
        return -1;
    return relay;
}

void Plan::add_p2p(int src, int dst, double bytes, std::vector<PFlow>& out) const {
    const int relay = pxn_relay(src, dst);
    if (relay < 0) {
        out.push_back({src, dst, bytes});
        return;
    }
    out.push_back({src, relay, bytes});
    out.push_back({relay, dst, bytes});
}

const DirectData& Plan::direct() const {
    std::call_once(direct_once_, [this] {
        auto d = std::make_unique<DirectData>();
        auto& port_intra = d->port_intra;
        auto& port_inter = d->port_inter;
        auto& all_pairs_cost = d->all_pairs_cost;
        auto& send_recv_cost = d->send_recv_cost;
        const auto& node = topo.spec().node;
        const int nodes = static_cast<int>(node_ranks.size());
        const double intra_port = node.fabric == hardware::IntraNodeFabric::nvswitch
                                      ? node.nvlink.bandwidth
                                      : node.pcie.bandwidth;
        for (Protocol p : hardware::kAllProtocols) {
            port_intra[idx(p)] = 1.0 / (efficiency(intra_level, p) * intra_port);
            port_inter[idx(p)] = nodes > 1
                                     ? 1.0 / (efficiency(LinkLevel::network, p) *
                                              std::min(node.nic.bandwidth, node.pcie.bandwidth))
                                     : 0.0;
        }
        d->all_pairs_level = nodes > 1 ? LinkLevel::network : intra_level;
        if (n <= 64) {
            std::vector<PFlow> pairs;
            for (int i = 0; i < n; ++i) {
                for (int j = 0; j < n; ++j) {
                    if (i != j)
                        add_p2p(i, j, 1.0, pairs);
                }
            }
            for (Protocol p : hardware::kAllProtocols)
                all_pairs_cost[idx(p)] = pattern_cost(pairs, p);
        } else {
            // Port model (n^2 routes would cost more than the prediction is worth): a rank's
            // intra-node peers share its NVLink port, its inter-node peers its NIC, and ranks on
            // one NIC share it. It assumes a non-blocking fabric with PXN's rail-local traffic:
            // neither collectives.pxn: false nor network.oversubscription adds a spine term
            // here, so above 64 ranks those two settings do not change an all-to-all.
            for (Protocol p : hardware::kAllProtocols) {
                double worst = 0;
                for (int k = 0; k < nodes; ++k) {
                    const auto& m = node_ranks[size_t(k)];
                    std::map<std::size_t, int> per_nic;
                    int share = 1;
                    if (nodes > 1) {
                        for (int r : m)
                            share = std::max(share, ++per_nic[topo.gpu_nic(gpus[size_t(r)])]);
                    }
                    const double p_k = static_cast<double>(m.size());
                    worst = std::max(worst, (p_k - 1) * port_intra[idx(p)]);
                    worst = std::max(worst, (n - p_k) * share * port_inter[idx(p)]);
                }
                all_pairs_cost[idx(p)] = worst;
            }
        }
        std::vector<PFlow> shift;
        if (n > 1) {
            for (int i = 0; i < n; ++i)
                add_p2p(i, (i + 1) % n, 1.0, shift);
        }
        for (Protocol p : hardware::kAllProtocols)
            send_recv_cost[idx(p)] = pattern_cost(shift, p);
        d->send_recv_level = n > 1 ? pattern_level(shift) : intra_level;
        direct_ = std::move(d);
    });
    return *direct_;
}

std::size_t Plan::route_row(int endpoint) const {
    return is_switch(endpoint) ? static_cast<std::size_t>(n) + std::size_t(switch_node(endpoint))
                               : static_cast<std::size_t>(endpoint);
}

const RouteInfo* Plan::known_route(std::size_t row, int dst) const {
    const auto& known = route_rows_.at(row);
    for (const KnownRoute& k : known)
        if (k.dst == dst)
            return k.route;
    if (known.size() < kRowRoutes)
        return nullptr;
    const auto it = more_routes_.find((std::uint64_t(row) << 32) | std::uint32_t(dst));
    return it != more_routes_.end() ? it->second : nullptr;
}

const RouteInfo& Plan::route(int src, int dst) const {
    const std::size_t row = route_row(src);
    {
        std::shared_lock<std::shared_mutex> lock(route_mutex_); // readers side by side
        if (const RouteInfo* known = known_route(row, dst))
            return *known;
    }
    hardware::Route r; // found outside the lock; a route found twice is the same route
    if (!is_switch(src) && !is_switch(dst)) {
        r = topo.gpu_route(gpus[size_t(src)], gpus[size_t(dst)]);
    } else if (is_switch(dst)) {
        r = topo.route(topo.gpu_hbm(gpus[size_t(src)]),
                       topo.nvswitch(node_topology[size_t(switch_node(dst))]));
    } else {
        r = topo.route(topo.nvswitch(node_topology[size_t(switch_node(src))]),
                       topo.gpu_hbm(gpus[size_t(dst)]));
    }
    std::unique_lock<std::shared_mutex> lock(route_mutex_);
    if (const RouteInfo* known = known_route(row, dst))
        return *known; // the first stays
    auto* edges = static_cast<sim::ResourceId*>(
        route_edges_.allocate(r.edges.size() * sizeof(sim::ResourceId), alignof(sim::ResourceId)));
    std::copy(r.edges.begin(), r.edges.end(), edges);
    const RouteInfo* made =
        &routes_.emplace_back(RouteInfo{{edges, r.edges.size()}, level_of(topo, r), r.bottleneck});
    auto& known = route_rows_[row];
    if (known.size() < kRowRoutes)
        known.push_back(KnownRoute{dst, made});
    else
        more_routes_.emplace((std::uint64_t(row) << 32) | std::uint32_t(dst), made);
    return *made;
}

double Plan::efficiency(LinkLevel level, Protocol p) const {
    const double e = tuning.protocol(p).level(level).efficiency;
    if (!(e > 0))
        throw InputError("hardware '" + topo.spec().name + "' gives no collectives." +
                         [&] {
                             std::string s(hardware::to_string(p));
                             for (char& c : s)
                                 c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                             return s;
                         }() +
                         "." + std::string(hardware::to_string(level)) +
                         ".efficiency, which this communicator needs");
    return e;
}

double Plan::flow_efficiency(int src, int dst, Protocol p) const {
    if (is_switch(src) || is_switch(dst)) {
        if (!(tuning.nvls.efficiency > 0))
            throw InputError("hardware '" + topo.spec().name +
                             "' gives no collectives.nvls.efficiency");
        return tuning.nvls.efficiency;
    }
    return efficiency(route(src, dst).level, p);
}

double Plan::pattern_cost(const std::vector<PFlow>& flows, Protocol p) const {
    EdgeLoads loads(topo);
    for (const PFlow& f : flows) {
        if (f.src == f.dst || f.bytes <= 0)
            continue;
        // One route lookup: flow_efficiency's, by the route's level, without looking it up again.
        const RouteInfo& r = route(f.src, f.dst);
        const bool nvls = is_switch(f.src) || is_switch(f.dst);
        loads.add(r, f.bytes / (nvls ? flow_efficiency(f.src, f.dst, p) : efficiency(r.level, p)));
    }
    return loads.max_cost();
}

LinkLevel Plan::pattern_level(const std::vector<PFlow>& flows) const {
    LinkLevel worst = LinkLevel::nvlink;
    bool any = false;
    for (const PFlow& f : flows) {
        if (f.src == f.dst)
            continue;
        any = true;
        if (!is_switch(f.src) && !is_switch(f.dst))
            worst = std::max(worst, route(f.src, f.dst).level);
    }
    return any ? worst : intra_level;
}

const TreeData& Plan::tree() const {
    std::call_once(tree_once_, [this] {
        auto t = std::make_unique<TreeData>();
        const auto& pos = cycles[0];
        const int N = static_cast<int>(node_ranks.size());
        if (N > 1 && regular) {
            // Across nodes (connect.cc, BALANCED_TREE pattern): channel j's chain in a node
            // runs treeIntra[0] (beside NIC port j) .. treeIntra[g-1], each rank's parent the
            // one before it; treeIntra[0] joins the parent node at its treeIntra[1] as a first
            // child, at its treeIntra[0] as a second (connectTrees); every channel runs both
            // trees of nodes.
            const int g = static_cast<int>(node_ranks.front().size());
            const int P = std::max(1, std::min(g, topo.spec().node.nic_ports()));
            auto intra = [&](int k, int j, int i) {
                const int first = static_cast<int>(static_cast<long>(j) * g / P);
                return node_ranks[size_t(k)][size_t((first + i) % g)];
            };
            for (int tr = 0; tr < 2; ++tr) {
                for (int j = 0; j < P; ++j) {
                    std::vector<int> parent(size_t(n), -1);
                    for (int k = 0; k < N; ++k) {
                        for (int i = 1; i < g; ++i)
                            parent[size_t(intra(k, j, i))] = intra(k, j, i - 1);
                        int child_type = 0;
                        const int up = dtree_parent(tr, k, N, child_type);
                        if (up >= 0)
                            parent[size_t(intra(k, j, 0))] =
                                intra(up, j, child_type == 0 && g > 1 ? 1 : 0);
                    }
                    t->parent.push_back(std::move(parent));
                }
            }
        } else {
            for (int tr = 0; tr < 2; ++tr) {
                std::vector<int> parent(size_t(n), -1);
                for (int q = 0; q < n; ++q) {
                    int child_type = 0;
                    const int up = dtree_parent(tr, q, n, child_type);
                    parent[size_t(pos[size_t(q)])] = up < 0 ? -1 : pos[size_t(up)];
                }
                t->parent.push_back(std::move(parent));
            }
        }
        t->nparts = static_cast<int>(t->parent.size());
        const int parts = t->parts();
        t->level.assign(size_t(parts), std::vector<int>(size_t(n), 0));
        for (int tr = 0; tr < parts; ++tr) {
            for (int r = 0; r < n; ++r) {
                int d = 0;
                for (int u = t->parent[size_t(tr)][size_t(r)]; u >= 0;
                     u = t->parent[size_t(tr)][size_t(u)])
                    ++d;
                t->level[size_t(tr)][size_t(r)] = d;
                t->depth = std::max(t->depth, d);
            }
        }
        const int D = t->depth;
        // Stage o moves up from depth D - o (o < D) and down to depth o - D + 1 (o >= D): each
        // hop goes to its two stages directly, in (tree, rank) order within a stage.
        t->stages.resize(size_t(2 * D));
        for (int tr = 0; tr < parts; ++tr) {
            for (int r = 0; r < n; ++r) {
                const int parent = t->parent[size_t(tr)][size_t(r)];
                if (parent < 0)
                    continue;
                const int h = t->level[size_t(tr)][size_t(r)];
                t->stages[size_t(D - h)].push_back({r, parent, tr});
                t->stages[size_t(D + h - 1)].push_back({parent, r, tr});
            }
        }
        for (int o = 0; o < 2 * D; ++o)
            t->stage_reduces.push_back(o < D);
        load_pipeline(*t, node_ranks.size() == 1);
        tree_ = std::move(t);
    });
    return *tree_;
}

int Plan::tree_parts() const {
    if (node_ranks.size() > 1 && regular) {
        const int g = static_cast<int>(node_ranks.front().size());
        return 2 * std::max(1, std::min(g, topo.spec().node.nic_ports()));
    }
    return 2;
}

const TreeData& Plan::tree_sample() const {
    std::call_once(tree_sample_once_, [this] {
        if (node_ranks.size() < 2 || !regular)
            throw std::logic_error("Plan::tree_sample: regular communicators across nodes only");
        auto t = std::make_unique<TreeData>();
        // The shape of Plan::tree across nodes: per tree of nodes, each node's parent and child
        // type, and its head's depth (the chain above it: one hop per node, one more where it
        // hangs from its parent's second rank); a rank i of a chain lies i below its head, the
        // same in every channel.
        const int N = static_cast<int>(node_ranks.size());
        const int g = static_cast<int>(node_ranks.front().size());
        const int P = std::max(1, std::min(g, topo.spec().node.nic_ports()));
        auto intra = [&](int k, int j, int i) {
            const int first = static_cast<int>(static_cast<long>(j) * g / P);
            return node_ranks[size_t(k)][size_t((first + i) % g)];
        };
        std::array<std::vector<int>, 2> up, type, head_depth;
        std::array<std::vector<std::vector<int>>, 2> children;
        for (int tr = 0; tr < 2; ++tr) {
            up[size_t(tr)].assign(size_t(N), -1);
            type[size_t(tr)].assign(size_t(N), 0);
            children[size_t(tr)].assign(size_t(N), {});
            for (int k = 0; k < N; ++k) {
                up[size_t(tr)][size_t(k)] = dtree_parent(tr, k, N, type[size_t(tr)][size_t(k)]);
                if (up[size_t(tr)][size_t(k)] >= 0)
                    children[size_t(tr)][size_t(up[size_t(tr)][size_t(k)])].push_back(k);
            }
            head_depth[size_t(tr)].assign(size_t(N), 0);
            for (int k = 0; k < N; ++k) {
                int d = 0;
                for (int x = k; up[size_t(tr)][size_t(x)] >= 0; x = up[size_t(tr)][size_t(x)])
                    d += 1 + (type[size_t(tr)][size_t(x)] == 0 && g > 1 ? 1 : 0);
                head_depth[size_t(tr)][size_t(k)] = d;
                t->depth = std::max(t->depth, d + g - 1);
            }
        }
        // Every hop between nodes on one rail is kept (the fabric's links carry those of many
        // nodes), and the chains of a few nodes: a node's role in a tree is whether it has a
        // parent, a first child, a second child; the first node of each pair of roles (one per
        // tree) is sampled.
        std::map<int, int> first_of_role;
        for (int k = 0; k < N; ++k) {
            int role = 0;
            for (int tr = 0; tr < 2; ++tr) {
                int r = up[size_t(tr)][size_t(k)] >= 0 ? 1 : 0;
                for (int c : children[size_t(tr)][size_t(k)])
                    r |= 2 << type[size_t(tr)][size_t(c)];
                role = role * 8 + r;
            }
            first_of_role.emplace(role, k);
        }
        std::vector<bool> sampled(size_t(N), false);
        for (const auto& [role, k] : first_of_role)
            sampled[size_t(k)] = true;
        const int D = t->depth;
        t->nparts = 2 * P;
        t->stages.resize(size_t(2 * D));
        auto hop = [&](int r, int parent, int part, int h) {
            t->stages[size_t(D - h)].push_back({r, parent, part});
            t->stages[size_t(D + h - 1)].push_back({parent, r, part});
        };
        // One rail of each tree: the hops of part j = 0 (through each node's first NIC port).
        // A window's cost on a subset of the tree's hops is still at most the tree's, and in a
        // regular communicator the other rails' parts are the same hops moved to their own NICs
        // and rails, loaded alike on a rail-optimised fabric: a sample of every rail (16 parts
        // on 8 NIC ports) looked up 8 times the routes for the same maximum (29% of a 1 GiB
        // all-reduce on 100,000 GPUs). Where rails share links (leaves that take every port of
        // a node) the bound is lower than it could be, and the tree is planned where a tighter
        // bound would have skipped it: the same choice, at more cost.
        const int j = 0;
        for (int tr = 0; tr < 2; ++tr) {
            const int part = tr * P + j;
            auto head_hop = [&](int k) {
                const int u = up[size_t(tr)][size_t(k)];
                const int at = type[size_t(tr)][size_t(k)] == 0 && g > 1 ? 1 : 0;
                hop(intra(k, j, 0), intra(u, j, at), part, head_depth[size_t(tr)][size_t(k)]);
            };
            for (int k = 0; k < N; ++k) {
                if (sampled[size_t(k)]) {
                    for (int i = 1; i < g; ++i)
                        hop(intra(k, j, i), intra(k, j, i - 1), part,
                            head_depth[size_t(tr)][size_t(k)] + i);
                }
                if (up[size_t(tr)][size_t(k)] >= 0)
                    head_hop(k);
            }
        }
        for (int o = 0; o < 2 * D; ++o)
            t->stage_reduces.push_back(o < D);
        load_pipeline(*t, false);
        tree_sample_ = std::move(t);
    });
    return *tree_sample_;
}

void Plan::load_pipeline(TreeData& t, bool all_windows) const {
    const int S = static_cast<int>(t.stages.size());
    // Each hop's route looked up once (a tree across nodes has 2 x NIC ports parts): its
    // stage's level (pattern_level: the slowest link any hop crosses) and, per protocol,
    // its wire bytes (flow_efficiency: by the route's level; tree hops join ranks only).
    std::vector<std::vector<const RouteInfo*>> stage_routes(static_cast<size_t>(S));
    for (int o = 0; o < S; ++o) {
        LinkLevel worst = LinkLevel::nvlink;
        for (const auto& h : t.stages[size_t(o)]) {
            const RouteInfo& r = route(h.src, h.dst);
            stage_routes[size_t(o)].push_back(&r);
            worst = std::max(worst, r.level);
        }
        t.stage_level.push_back(stage_routes[size_t(o)].empty() ? intra_level : worst);
    }
    // Each stage's flows with their routes and wire bytes looked up once per protocol,
    // not once per window (a window is every stage range: 2D^2 of them).
    for (Protocol p : hardware::kAllProtocols) {
        auto& sl = t.stage_loads[idx(p)];
        sl.resize(size_t(S));
        for (int o = 0; o < S; ++o) {
            for (const RouteInfo* r : stage_routes[size_t(o)])
                sl[size_t(o)].push_back({r, 1.0 / efficiency(r->level, p)});
        }
    }
    // The windows of every protocol in one walk of the routes' edges: the protocols load the
    // same routes, with wire bytes that differ (each protocol's sums and maxima are taken in
    // the same order as alone: the same numbers). In one node every window is computed here
    // (a tree of n - 1 hops). Across nodes the tree has 2 x NIC ports parts, 8 times the hops:
    // the windows that start at stage 0 or end at the last one are computed here, those a
    // pipeline of few chunks needs in between on first use (pipeline_rounds).
    using Costs = ProtocolEdgeLoads::Load;
    ProtocolEdgeLoads loads(topo);
    // Loads only grow as a window widens, so the costliest edge is the previous one or an edge
    // the new stage loaded: the same maximum, without rescanning every edge.
    auto widen = [&](int o, Costs worst) {
        const auto& routes = stage_routes[size_t(o)];
        for (std::size_t i = 0; i < routes.size(); ++i) {
            Costs wire;
            for (Protocol p : hardware::kAllProtocols)
                wire[idx(p)] = t.stage_loads[idx(p)][size_t(o)][i].wire;
            loads.add(*routes[i], wire);
        }
        for (const RouteInfo* r : routes) {
            const Costs on = loads.max_costs_on(*r);
            for (std::size_t k = 0; k < on.size(); ++k)
                worst[k] = std::max(worst[k], on[k]);
        }
        return worst;
    };
    if (all_windows) {
        for (Protocol p : hardware::kAllProtocols)
            t.window[idx(p)].assign(size_t(S * S), 0.0);
        for (int lo = 0; lo < S; ++lo) {
            loads.clear();
            Costs worst{};
            for (int hi = lo; hi < S; ++hi) {
                worst = widen(hi, worst);
                for (Protocol p : hardware::kAllProtocols)
                    t.window[idx(p)][size_t(lo * S + hi)] = worst[idx(p)];
            }
        }
        return;
    }
    for (Protocol p : hardware::kAllProtocols) {
        t.prefix[idx(p)].assign(size_t(S), 0.0);
        t.suffix[idx(p)].assign(size_t(S), 0.0);
    }
    loads.clear();
    Costs worst{};
    for (int hi = 0; hi < S; ++hi) {
        worst = widen(hi, worst);
        for (Protocol p : hardware::kAllProtocols)
            t.prefix[idx(p)][size_t(hi)] = worst[idx(p)];
    }
    loads.clear();
    worst = Costs{};
    for (int lo = S - 1; lo >= 0; --lo) {
        worst = widen(lo, worst);
        for (Protocol p : hardware::kAllProtocols)
            t.suffix[idx(p)][size_t(lo)] = worst[idx(p)];
    }
}

const TreeData& Plan::chains(int root, bool reduce) const {
    ChainsEntry* entry = nullptr;
    {
        std::shared_lock<std::shared_mutex> lock(chains_mutex_); // readers side by side
        auto it = chains_.find({root, reduce});
        if (it != chains_.end())
            entry = it->second.get();
    }
    if (entry == nullptr) {
        std::unique_lock<std::shared_mutex> lock(chains_mutex_);
        auto& slot = chains_[{root, reduce}];
        if (!slot)
            slot = std::make_unique<ChainsEntry>();
        entry = slot.get();
    }
    if (const TreeData* built = entry->data.load(std::memory_order_acquire))
        return *built;
    // NCCL runs a broadcast or reduce on every ring channel, each over its own ring with
    // 1/channels of the buffer (src/device/broadcast.h, reduce.h: the channel's part of the
    // buffer; src/enqueue.cc splits it over nChannels): a chain from the root (broadcast) or
    // ending at it (reduce) per channel; stage j runs hop j of every chain.
    auto t = std::make_unique<TreeData>();
    t->nparts = channels;
    t->stages.resize(size_t(std::max(0, n - 1)));
    for (int c = 0; c < channels; ++c) {
        const auto& cycle = cycles[size_t(c)];
        int pos = 0;
        while (cycle[size_t(pos)] != root)
            ++pos;
        const int start = (pos + (reduce ? 1 : 0)) % n;
        for (int j = 0; j + 1 < n; ++j)
            t->stages[size_t(j)].push_back(
                {cycle[size_t((start + j) % n)], cycle[size_t((start + j + 1) % n)], c});
    }
    t->stage_reduces.assign(t->stages.size(), reduce);
    load_pipeline(*t, false);
    // Published as CommunicatorCache publishes a communicator: the build is deterministic, so a
    // racing duplicate equals the first one published, and is dropped.
    const TreeData* first = nullptr;
    if (entry->data.compare_exchange_strong(first, t.get(), std::memory_order_acq_rel,
                                            std::memory_order_acquire))
        return *t.release();
    return *first;
}

double Plan::tree_rounds(Protocol p, std::int64_t K) const {
    return pipeline_rounds(tree(), p, K);
}

double Plan::pipeline_rounds(const TreeData& t, Protocol p, std::int64_t K) const {
    const int S = static_cast<int>(t.stages.size());
    // Round r runs stages max(0, r - K + 1) .. min(S - 1, r); rounds S-1 .. K-1 run them all.
    auto sum_rounds = [&](auto&& window) {
        const std::int64_t rounds = K + S - 1;
        const std::int64_t steady = std::max<std::int64_t>(0, K - S + 1);
        double sum = static_cast<double>(steady) * window(0, S - 1);
        for (std::int64_t r = 0; r < rounds; ++r) {
            if (r >= S - 1 && r <= K - 1) {
                r = K - 1; // skip the steady block, counted above
                continue;
            }
            sum += window(static_cast<int>(std::max<std::int64_t>(0, r - K + 1)),
                          static_cast<int>(std::min<std::int64_t>(S - 1, r)));
        }
        return sum;
    };
    if (!t.window[idx(p)].empty())
        return sum_rounds([&](int lo, int hi) { return t.window[idx(p)][size_t(lo * S + hi)]; });
    // Across nodes: windows from stage 0 and to stage S-1 were computed with the tree; those
    // in between (pipelines of K < S - 1 chunks) are computed once per chunk count.
    const std::vector<double>* inner = nullptr;
    if (K < S - 1) {
        std::lock_guard<std::mutex> lock(tree_inner_mutex_);
        auto& slot = tree_inner_[{&t, idx(p), K}];
        const auto& sl = t.stage_loads[idx(p)];
        // Each window summed afresh where that is cheap (every tree of NCCL's, short chains:
        // the same sums as always); slid along for long chains.
        if (slot.empty() && (S - K - 1) * K > (std::int64_t{1} << 16))
            slot = sliding_middle_windows(topo, sl, S, K);
        if (slot.empty()) {
            EdgeLoads loads(topo);
            for (std::int64_t lo = 1; lo + K - 1 <= S - 2; ++lo) {
                loads.clear();
                for (std::int64_t o = lo; o < lo + K; ++o) {
                    for (const TreeData::Loaded& f : sl[size_t(o)])
                        loads.add(*f.route, f.wire);
                }
                slot.push_back(loads.max_cost());
            }
        }
        inner = &slot; // std::map nodes stay put
    }
    const auto& pre = t.prefix[idx(p)];
    const auto& suf = t.suffix[idx(p)];
    return sum_rounds([&](int lo, int hi) {
        if (lo == 0)
            return pre[size_t(hi)];
        if (hi == S - 1)
            return suf[size_t(lo)];
        return (*inner)[size_t(lo - 1)];
    });
}

const HierData& Plan::hier() const {
    std::call_once(hier_once_, [this] {
        auto h = std::make_unique<HierData>();
        const int N = static_cast<int>(node_ranks.size());
        const int g = static_cast<int>(node_ranks.front().size());
        h->per_node = g;
        std::vector<PFlow> intra, inter, rs, ag;
        for (int k = 0; k < N; ++k) {
            const auto& m = node_ranks[size_t(k)];
            for (int q = 0; q < g && g > 1; ++q)
                intra.push_back({m[size_t(q)], m[size_t((q + 1) % g)], 1.0 / g});
            for (int q = 0; q < g; ++q) {
                rs.push_back({m[size_t(q)], switch_of(k), 1.0});
                rs.push_back({switch_of(k), m[size_t(q)], 1.0 / g});
                ag.push_back({m[size_t(q)], switch_of(k), 1.0 / g});
                ag.push_back({switch_of(k), m[size_t(q)], 1.0});
            }
        }
        for (int l = 0; l < g; ++l) {
            for (int k = 0; k < N; ++k)
                inter.push_back({node_ranks[size_t(k)][size_t(l)],
                                 node_ranks[size_t((k + 1) % N)][size_t(l)], 1.0 / g / N});
        }
        for (Protocol p : hardware::kAllProtocols) {
            h->intra_ring[idx(p)] = pattern_cost(intra, p);
            h->inter_ring[idx(p)] = pattern_cost(inter, p);
        }
        const auto& node = topo.spec().node;
        if (node.nvls && node.fabric == hardware::IntraNodeFabric::nvswitch && g >= 2) {
            h->nvls_rs = pattern_cost(rs, Protocol::simple);
            h->nvls_ag = pattern_cost(ag, Protocol::simple);
        }
        hier_ = std::move(h);
    });
    return *hier_;
}

const MultiNodeData& Plan::multi() const {
    std::call_once(multi_once_, [this] {
        auto m = std::make_unique<MultiNodeData>();
        const int N = static_cast<int>(node_ranks.size());
        const int g = static_cast<int>(node_ranks.front().size());
        const auto& node = topo.spec().node;
        m->per_node = g;
        m->heads = std::max(1, std::min(g, node.nic_ports()));
        const int P = m->heads;
        // The head of channel j is the rank beside NIC port j (NodeSpec: port j sits by GPU
        // j * gpus / ports); in a partial node, the j-th of its ranks.
        auto head = [&](int k, int j) {
            return node_ranks[size_t(k)][size_t(static_cast<long>(j) * g / P)];
        };
        // NCCL's double binary tree over nodes (ncclGetDtree): tree 1 mirrors tree 0 (N even)
        // or shifts it by one (N odd).
        auto node_parent = [N](int t, int k) {
            if (t == 0)
                return btree_parent(k, N);
            if (N % 2 == 0) {
                const int up = btree_parent(N - 1 - k, N);
                return up < 0 ? -1 : N - 1 - up;
            }
            const int up = btree_parent((k - 1 + N) % N, N);
            return up < 0 ? -1 : (up + 1) % N;
        };
        for (int t = 0; t < 2; ++t) {
            auto& parent = m->node_parent[size_t(t)];
            auto& depth = m->node_depth[size_t(t)];
            parent.resize(size_t(N));
            depth.resize(size_t(N));
            for (int k = 0; k < N; ++k) {
                parent[size_t(k)] = node_parent(t, k);
                int d = 0;
                for (int u = node_parent(t, k); u >= 0; u = node_parent(t, u))
                    ++d;
                depth[size_t(k)] = d;
                m->tree_depth = std::max(m->tree_depth, d);
            }
        }
        for (int j = 0; j < P; ++j)
            m->head_local.push_back(static_cast<int>(static_cast<long>(j) * g / P));
        // CollNet's patterns only where the fabric reduces (elsewhere why_not refuses it): on
        // 100,000 GPUs they are 3.2 million transfers, each a route to look up.
        const bool collnet = topo.spec().network.in_network_reduction;
        std::vector<PFlow> nvls, inter, direct, chain;
        for (int k = 0; k < N; ++k) {
            const auto& r = node_ranks[size_t(k)];
            for (int q = 0; q < g; ++q) {
                // NVLS reduce-scatter (all to the switch, 1/g back) and all-gather (1/g to the
                // switch, all back), pipelined: both at once.
                nvls.push_back({r[size_t(q)], switch_of(k), 1.0 + 1.0 / g});
                nvls.push_back({switch_of(k), r[size_t(q)], 1.0 + 1.0 / g});
            }
            for (int j = 0; j < P; ++j) {
                const int h = head(k, j);
                const int h_local = static_cast<int>(static_cast<long>(j) * g / P);
                for (int q = 0; q < g && collnet; ++q) {
                    if (r[size_t(q)] == h)
                        continue;
                    direct.push_back({r[size_t(q)], h, 1.0 / P}); // reduce-scatter to heads
                    direct.push_back({h, r[size_t(q)], 1.0 / P}); // all-gather from heads
                }
                for (int i = 0; i + 1 < g && collnet; ++i) { // the chain, up and back down
                    const int a = r[size_t((h_local + i) % g)];
                    const int b = r[size_t((h_local + i + 1) % g)];
                    chain.push_back({b, a, 1.0 / P});
                    chain.push_back({a, b, 1.0 / P});
                }
                // The two trees over nodes each carry half of the head's share.
                for (int t = 0; t < 2; ++t) {
                    const int parent = node_parent(t, k);
                    if (parent < 0)
                        continue;
                    inter.push_back({h, head(parent, j), 0.5 / P});
                    inter.push_back({head(parent, j), h, 0.5 / P});
                }
            }
        }
        if (node.nvls && node.fabric == hardware::IntraNodeFabric::nvswitch && g >= 2)
            m->nvls_intra = pattern_cost(nvls, Protocol::simple);
        m->nvls_tree_inter = pattern_cost(inter, Protocol::simple);
        m->collnet_direct_intra = pattern_cost(direct, Protocol::simple);
        m->collnet_chain_intra = pattern_cost(chain, Protocol::simple);
        // A head's NIC port to the leaf switch, which reduces: 1/P of S each way.
        const double port = std::min(node.nic_port_bandwidth(),
                                     node.pcie.bandwidth * std::max(1, node.nics / node.gpus));
        m->collnet_inter = 1.0 / (P * port * efficiency(LinkLevel::network, Protocol::simple));
        multi_ = std::move(m);
    });
    return *multi_;
}

} // namespace clustersim::strategies::collectives::detail
