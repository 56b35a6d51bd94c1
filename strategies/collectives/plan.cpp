#include "strategies/collectives/plan.h"
#include "strategies/collectives/mesh_rings.h"
#include "strategies/collectives/plan_loads.h"
#include "strategies/collectives/torus.h"

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
    // network step (hardware/specs.h: Transport). The network plugin's reported latency joins
    // only the steps of the algorithms NCCL's tuning times (tuned_network_latency), twice under
    // Simple (NetworkSpec::net_latency).
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
    for (Protocol p : hardware::kAllProtocols)
        plugin_latency[idx(p)] = spec.network.net_latency * (p == Protocol::simple ? 2 : 1);
    if (!tuning.present() && !spec.torus.present())
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
    // An xGMI mesh is RCCL's NVLink level (its hwLat row NCCL_HW_NVLINK, graph typeIntra
    // LINK_NVL: ROCm/rccl src/graph/tuning.cc).
    intra_level =
        spec.node.fabric == hardware::IntraNodeFabric::pcie ? LinkLevel::pcie : LinkLevel::nvlink;
    nvls_capable = spec.node.nvls && spec.node.fabric == hardware::IntraNodeFabric::nvswitch &&
                   node_ranks.size() == 1 && n >= 2;
    for (int g : gpus) {
        const hardware::Route r = topo.memory_route(g);
        memory_edges_.push_back(r.edges.at(0));
    }
    if (spec.torus.present()) { // XLA's rings, none of NCCL's (torus.h)
        torus = std::make_shared<const TorusGrid>(torus_grid(topo, gpus));
        return;
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
    // On an xGMI mesh a hop is one link: RCCL runs rings (and across nodes, paths through each
    // node) over different permutations so that every link carries traffic (mesh_rings.h).
    const bool mesh = topo.spec().node.fabric == hardware::IntraNodeFabric::xgmi_mesh;
    if (nodes == 1 && mesh && n > 2) {
        const auto& m = node_ranks[0];
        for (const std::vector<int>& ring : mesh_rings(n)) {
            std::vector<int> cycle;
            for (int local : ring)
                cycle.push_back(m[size_t(local)]);
            cycles.push_back(std::move(cycle));
        }
        channels = static_cast<int>(cycles.size());
    } else if (nodes == 1) {
        channels = 1;
        cycles = {node_ranks[0]};
    } else if (mesh && regular && node_ranks[0].size() > 2) {
        const int p = static_cast<int>(node_ranks[0].size());
        channels = std::max(1, std::min(p, std::max(1, topo.spec().node.nic_ports())));
        // Even nodes run each channel's path forwards, odd nodes backwards: the hop out of
        // node k leaves from the GPU that enters node k+1, so it stays on one rail.
        for (const std::vector<int>& chain : mesh_chains(p, channels)) {
            std::vector<int> cycle;
            for (int k = 0; k < nodes; ++k) {
                const auto& m = node_ranks[size_t(k)];
                for (int i = 0; i < p; ++i)
                    cycle.push_back(m[size_t(chain[size_t(k % 2 == 0 ? i : p - 1 - i)])]);
            }
            cycles.push_back(std::move(cycle));
        }
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
        d->mesh = node.fabric == hardware::IntraNodeFabric::xgmi_mesh;
        const double intra_port = node.fabric == hardware::IntraNodeFabric::nvswitch
                                      ? node.nvlink.bandwidth
                                  : d->mesh ? node.xgmi.bandwidth // a peer's own link
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
                    worst = std::max(worst, d->sharing(p_k - 1) * port_intra[idx(p)]);
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
    if (torus) // no NCCL protocol: the DMA engines move the payload
        return 1.0;
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

} // namespace clustersim::strategies::collectives::detail
