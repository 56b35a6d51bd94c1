#include "hardware/topology.h"

#include "base/error.h"
#include "base/units.h"
#include "hardware/fabric_routes.h"
#include "hardware/graph_builder.h"
#include "hardware/graph_size.h"
#include "hardware/memory_limit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <ostream>
#include <queue>
#include <stdexcept>

namespace clustersim::hardware {

std::string_view to_string(VertexKind k) {
    switch (k) {
    case VertexKind::gpu_sm:
        return "sm";
    case VertexKind::gpu_hbm:
        return "hbm";
    case VertexKind::nvswitch:
        return "nvswitch";
    case VertexKind::pcie_switch:
        return "pcie-switch";
    case VertexKind::host:
        return "host";
    case VertexKind::nic:
        return "nic";
    case VertexKind::leaf:
        return "leaf";
    case VertexKind::spine:
        return "spine";
    case VertexKind::ici:
        return "ici";
    }
    return "?";
}

std::string_view to_string(LinkKind k) {
    switch (k) {
    case LinkKind::hbm:
        return "HBM";
    case LinkKind::nvlink:
        return "NVLink";
    case LinkKind::pcie:
        return "PCIe";
    case LinkKind::host:
        return "PCIe-host";
    case LinkKind::nic:
        return "NIC";
    case LinkKind::fabric:
        return "InfiniBand";
    case LinkKind::xgmi:
        return "xGMI";
    case LinkKind::ici:
        return "ICI";
    }
    return "?";
}

namespace {

/// Refuses, before building anything, a cluster whose graph would not fit in this machine's
/// memory: an estimate (hardware/graph_size.h, measured) and an input error (exit 2) instead of
/// bad_alloc halfway through.
GraphSize refuse_if_too_large(const ClusterSpec& spec) {
    const GraphSize size = graph_size(spec);
    // Vertex ids and edge indices are stored in 32 bits; memory runs out long before, but the
    // bound is said, not assumed.
    if (size.vertices >= 4294967295.0 || size.edges >= 4294967295.0)
        throw InputError(fmt::format("a cluster of {} GPUs has {:.3g} vertices and {:.3g} edges; "
                                     "at most 2^32 - 1 of each can be held",
                                     spec.gpu_count(), size.vertices, size.edges));
    const double need = graph_bytes(size);
    // The machine's memory, or less where `ulimit -v` or a cgroup says so (memory_limit.h).
    const MemoryLimit limit = memory_limit();
    if (limit.bytes <= 0)
        return size;
    const double have = limit.bytes;
    if (need > 0.8 * have)
        throw InputError(fmt::format(
            "a cluster of {} GPUs needs about {:.1f} GiB for its graph ({:.3g} vertices and "
            "{:.3g} edges, about {:.0f} bytes per vertex with its edges); {} {:.1f} GiB of "
            "memory: simulate fewer GPUs (data-parallel replicas repeat: a smaller dp predicts "
            "the same step)",
            spec.gpu_count(), need / (1 << 30), size.vertices, size.edges, need / size.vertices,
            limit.which == "physical memory" ? "this machine has"
                                             : "this process may use (" + limit.which + ")",
            have / (1 << 30)));
    return size;
}

} // namespace

Topology::Topology(ClusterSpec spec)
    : spec_(std::move(spec)) {
    const NodeSpec& n = spec_.node;
    const int nodes = spec_.nodes;
    if (nodes < 1 || n.gpus < 1)
        throw InputError("a cluster needs at least one node with at least one GPU");
    if (nodes > 1 &&
        (n.nics < 1 || spec_.network.switch_radix < 2 || !(spec_.network.link.bandwidth > 0)))
        throw InputError("hardware '" + spec_.name +
                         "' needs NICs and a network (switch_radix, link) to span " +
                         std::to_string(nodes) + " nodes");
    detail::GraphBuilder g{vertices_, edges_, ends_, weight_};
    g.reserve(refuse_if_too_large(spec_));
    const LinkSpec hbm{n.gpu.hbm_bandwidth, sim::Time::zero()};
    const int pcie_switches = n.gpus / n.gpus_per_pcie_switch;
    // Rail-optimised two-level fat tree (built after the nodes): rail r's leaves hold NIC r of
    // `down` nodes each; every leaf has `down` uplinks, one to each spine, so the tree is
    // non-blocking.
    const NetworkSpec& net = spec_.network;
    const int ports = n.nic_ports();
    const int down = std::max(1, net.switch_radix / 2);
    const int leaves_per_rail = (nodes + down - 1) / down;
    const int spines = nodes > 1 && (ports > 1 || leaves_per_rail > 1) ? down : 0;
    for (int node = 0; node < nodes; ++node) {
        if (node == 1) {
            node_vertices_ = g.vertices.size();
            node_edges_ = static_cast<EdgeIndex>(g.edges.size());
        }
        // A TPU slice's hosts are its PCIe switches, each with its chips and NICs, and no
        // vertex joins them: hosts talk over ICI or the DCN.
        const bool torus = n.fabric == IntraNodeFabric::torus;
        const VertexId host = torus ? 0 : g.add_vertex(VertexKind::host, node, 0);
        std::vector<VertexId> pcie;
        for (int p = 0; p < pcie_switches; ++p) {
            pcie.push_back(g.add_vertex(VertexKind::pcie_switch, node, p));
            if (!torus)
                g.add_link(pcie.back(), host, LinkKind::host, n.host_link);
        }
        VertexId sw = 0;
        if (n.fabric == IntraNodeFabric::nvswitch) {
            sw = g.add_vertex(VertexKind::nvswitch, node, 0);
            nvswitch_.push_back(sw);
        }
        for (int local = 0; local < n.gpus; ++local) {
            const int gpu = node * n.gpus + local;
            const VertexId sm = g.add_vertex(VertexKind::gpu_sm, node, gpu);
            const VertexId mem = g.add_vertex(VertexKind::gpu_hbm, node, gpu);
            gpu_sm_.push_back(sm);
            gpu_hbm_.push_back(mem);
            g.add_link(sm, mem, LinkKind::hbm, hbm);
            g.add_link(mem, pcie[static_cast<std::size_t>(local / n.gpus_per_pcie_switch)],
                       LinkKind::pcie, n.pcie);
            if (n.fabric == IntraNodeFabric::nvswitch)
                g.add_link(mem, sw, LinkKind::nvlink, n.nvlink, sim::Time::zero(),
                           n.nvswitch_latency);
        }
        // An xGMI mesh: every pair of the node's GPUs has its own link (no switch), so the
        // route between two GPUs is their link; GPUs never forward, so no route crosses a third.
        if (n.fabric == IntraNodeFabric::xgmi_mesh) {
            const auto first = static_cast<std::size_t>(node) * static_cast<std::size_t>(n.gpus);
            for (int a = 0; a < n.gpus; ++a)
                for (int b = a + 1; b < n.gpus; ++b)
                    g.add_link(gpu_hbm_[first + static_cast<std::size_t>(a)],
                               gpu_hbm_[first + static_cast<std::size_t>(b)], LinkKind::xgmi,
                               n.xgmi);
        }
        if (torus)
            detail::add_torus(g, spec_.torus, node,
                              std::vector<VertexId>(gpu_hbm_.end() - n.gpus, gpu_hbm_.end()));
        // One port per NIC; with several NICs per GPU, one port per GPU carrying their sum
        // (NodeSpec::nic_ports). A port sits on the PCIe switch of the GPU beside it, so the
        // GPUs of that switch reach it without crossing the host, and share it.
        for (int i = 0; i < ports; ++i) {
            const VertexId nic = g.add_vertex(VertexKind::nic, node, i);
            nic_.push_back(nic);
            const int near_gpu = static_cast<int>(static_cast<long>(i) * n.gpus / ports);
            LinkSpec slot = n.pcie;
            if (n.nics > n.gpus) // the GPU's NICs each have their own PCIe link to the switch
                slot.bandwidth *= static_cast<double>(n.nics / n.gpus);
            g.add_link(nic, pcie[static_cast<std::size_t>(near_gpu / n.gpus_per_pcie_switch)],
                       LinkKind::pcie, slot);
        }
    }

    if (nodes > 1) {
        std::vector<VertexId> spine;
        for (int s = 0; s < spines; ++s)
            spine.push_back(g.add_vertex(VertexKind::spine, -1, s));
        const LinkSpec nic_link{n.nic_port_bandwidth(), n.nic.latency};
        // An oversubscribed leaf (network.oversubscription = k, k:1) has 1/k of the uplink
        // bandwidth its `down` nodes could send: each of its `down` uplinks carries 1/k.
        const LinkSpec uplink{net.link.bandwidth / net.oversubscription, net.link.latency};
        for (int rail = 0; rail < ports; ++rail) {
            for (int l = 0; l < leaves_per_rail; ++l) {
                const VertexId leaf = g.add_vertex(VertexKind::leaf, -1, rail, l);
                for (int node = l * down; node < std::min(nodes, (l + 1) * down); ++node) {
                    const VertexId nic = nic_[static_cast<std::size_t>(node * ports + rail)];
                    g.add_link(nic, leaf, LinkKind::nic, nic_link, sim::Time::zero(),
                               net.switch_latency);
                }
                for (VertexId s : spine)
                    g.add_link(leaf, s, LinkKind::fabric, uplink, net.switch_latency,
                               net.switch_latency);
            }
        }
    }

    index_edges();
    fabric_ = std::make_shared<const detail::FabricIndex>(*this, weight_);
    if (nodes == 1) {
        node_vertices_ = g.vertices.size();
        node_edges_ = static_cast<EdgeIndex>(g.edges.size());
    }
    // The routes within a node are kept per pair of its vertices: room for node_vertices_^2,
    // which a large TPU slice (thousands of chips in one node) cannot afford; its routes are
    // searched each time (a torus neighbour's is one hop).
    if (node_vertices_ <= kMaxKeptNodeVertices)
        node_routes_ = std::make_shared<NodeRoutes>(node_vertices_ * node_vertices_);
}

void Topology::index_edges() {
    // A counting sort of the edge indices by source and by target: each row then lists its
    // edges by ascending index.
    auto lay_out = [&](std::vector<std::uint32_t>& first, std::vector<EdgeIndex>& list,
                       auto end_of) {
        first.assign(vertices_.size() + 1, 0);
        for (const auto& ends : ends_)
            ++first[end_of(ends) + 1];
        for (std::size_t v = 0; v < vertices_.size(); ++v)
            first[v + 1] += first[v];
        list.resize(ends_.size());
        std::vector<std::uint32_t> next(first.begin(), first.end() - 1);
        for (EdgeIndex e = 0; e < ends_.size(); ++e)
            list[next[end_of(ends_[e])]++] = e;
    };
    lay_out(out_first_, out_, [](const auto& ends) { return ends.first; });
    lay_out(in_first_, in_, [](const auto& ends) { return ends.second; });
}

Topology::VertexId Topology::gpu_nic(int gpu) const {
    const NodeSpec& n = spec_.node;
    if (n.nics == 0)
        throw InputError("hardware '" + spec_.name + "' has no NICs");
    const int node = node_of(gpu);
    const int local = gpu % n.gpus;
    const int ports = n.nic_ports();
    const int nic = static_cast<int>(static_cast<long>(local) * ports / n.gpus);
    return nic_.at(static_cast<std::size_t>(node * ports + nic));
}

Topology::VertexId Topology::nvswitch(int node) const {
    if (nvswitch_.empty())
        throw std::invalid_argument("hardware '" + spec_.name + "' has no NVSwitch");
    return nvswitch_.at(static_cast<std::size_t>(node));
}

namespace {
/// Vertices that never forward traffic: GPUs (no PXN-style relaying) and NICs (a NIC is an
/// endpoint of the fabric, not a switch).
bool is_endpoint_only(VertexKind k) {
    return k == VertexKind::gpu_sm || k == VertexKind::gpu_hbm || k == VertexKind::nic;
}
} // namespace

namespace {

/// Dijkstra's scratch, kept per thread across calls: the distances stay at "unreached" between
/// calls and only the vertices a search reached are reset, so a route costs what its search
/// explores, not the size of the graph.
struct RouteScratch {
    std::vector<std::int64_t> dist;
    std::vector<std::size_t> reached;
};

} // namespace

/// Routes within one node by the node's local vertex ids (from * node_vertices_ + to): null
/// until found; `tied` when an ECMP tie chose among equal paths by the absolute ids, so that
/// the route cannot be shifted and is searched for in each node.
struct Topology::NodeRoutes {
    struct Local {
        Route route; ///< node 0's edges
        bool tied = false;
    };
    explicit NodeRoutes(std::size_t n)
        : slots(n) {}
    NodeRoutes(const NodeRoutes&) = delete;
    NodeRoutes& operator=(const NodeRoutes&) = delete;
    ~NodeRoutes();
    std::vector<std::atomic<const Local*>> slots;
};

Route Topology::route(VertexId from, VertexId to) const {
    if (from == to)
        return Route{};
    const detail::FabricIndex& index = fabric_index();
    if (auto fabric = index.nic_route(*this, from, to))
        return std::move(*fabric); // between NICs of two nodes on a Clos fabric: closed form
    const int node = vertices_[from].node;
    const bool one_node =
        index.closed_nodes() && node >= 0 && node == vertices_[to].node &&
        !(vertices_[from].kind == VertexKind::nic && vertices_[to].kind == VertexKind::nic);
    bool tied = false;
    if (!one_node || !node_routes_)
        return search(from, to, tied);
    // Within one node: node 0's route shifted to this node, found once (NodeRoutes).
    const std::size_t base = static_cast<std::size_t>(node) * node_vertices_;
    const EdgeIndex shift = static_cast<EdgeIndex>(node) * node_edges_;
    auto& slot = node_routes_->slots[(from - base) * node_vertices_ + (to - base)];
    const NodeRoutes::Local* local = slot.load(std::memory_order_acquire);
    if (local == nullptr) {
        Route r = search(from, to, tied);
        auto made = std::make_unique<NodeRoutes::Local>();
        made->tied = tied;
        if (!tied) {
            made->route = r;
            for (EdgeIndex& e : made->route.edges)
                e -= shift;
        }
        if (slot.compare_exchange_strong(local, made.get(), std::memory_order_acq_rel))
            made.release();
        return r;
    }
    if (local->tied)
        return search(from, to, tied);
    Route r = local->route;
    for (EdgeIndex& e : r.edges)
        e += shift;
    return r;
}

Topology::NodeRoutes::~NodeRoutes() {
    for (auto& slot : slots)
        delete slot.load();
}

Route Topology::search(VertexId from, VertexId to, bool& tied) const {
    Route r;
    const detail::FabricIndex& index = fabric_index();
    // Dijkstra from the destination over reversed edges; GPUs and NICs other than the two
    // endpoints are not expanded, so no route passes through a third GPU or a NIC. Nor through
    // a third node, then: every way into a node's PCIe switches, host or NVSwitch passes one of
    // its GPUs or NICs. So the search never enters the vertices of other nodes, which keeps it
    // to the two nodes and the network's switches (the routes are the same: those vertices
    // could only be reached, never crossed).
    const std::size_t nv = vertex_count();
    constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
    thread_local RouteScratch scratch;
    std::vector<std::int64_t>& dist = scratch.dist;
    if (dist.size() < nv)
        dist.resize(nv, kInf);
    scratch.reached.clear();
    auto reach = [&](VertexId v, std::int64_t d) {
        if (dist[v] == kInf)
            scratch.reached.push_back(v);
        dist[v] = d;
    };
    struct Reset { // leaves every distance unreached again, also when a route throws
        RouteScratch& s;
        ~Reset() {
            for (std::size_t v : s.reached)
                s.dist[v] = std::numeric_limits<std::int64_t>::max();
        }
    } reset{scratch};
    const int node_from = vertices_[from].node;
    const int node_to = vertices_[to].node;
    // Within one node, unless both ends are NICs, a closed node keeps the route inside: leaving
    // it and coming back would pass a NIC that is not an end (fabric_routes.h).
    const bool one_node =
        index.closed_nodes() && node_from >= 0 && node_from == node_to &&
        !(vertices_[from].kind == VertexKind::nic && vertices_[to].kind == VertexKind::nic);
    auto in_scope = [&](VertexId v) {
        const int n = vertices_[v].node;
        return n == node_from || n == node_to || (n < 0 && !one_node);
    };
    using Item = std::pair<std::int64_t, VertexId>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
    reach(to, 0);
    heap.emplace(0, to);
    while (!heap.empty()) {
        auto [d, v] = heap.top();
        heap.pop();
        if (d != dist[v])
            continue;
        if (v == from)
            break;
        if (v != to && is_endpoint_only(vertices_[v].kind))
            continue;
        for (const EdgeIndex e : in_edges(v)) {
            const VertexId u = ends_[e].first;
            const std::int64_t nd = d + weight_[e];
            if (nd < dist[u] && in_scope(u)) {
                reach(u, nd);
                heap.emplace(nd, u);
            }
        }
    }
    if (dist[from] == kInf)
        throw std::invalid_argument("no route from " + vertex_name(from) + " to " +
                                    vertex_name(to));
    // Walk forward choosing among equal-cost next hops by a hash (deterministic ECMP).
    r.bottleneck = std::numeric_limits<double>::infinity();
    VertexId v = from;
    for (std::uint64_t hop = 0; v != to; ++hop) {
        std::vector<EdgeIndex> next;
        for (const EdgeIndex e : out_edges(v)) {
            const VertexId w = ends_[e].second;
            if (dist[w] != kInf && dist[v] == weight_[e] + dist[w] &&
                (w == to || !is_endpoint_only(vertices_[w].kind)))
                next.push_back(e);
        }
        std::sort(next.begin(), next.end());
        tied = tied || next.size() > 1;
        const EdgeIndex e = next[detail::ecmp_choice(from, to, hop, next.size())];
        r.edges.push_back(e);
        r.bottleneck = std::min(r.bottleneck, edge(e).bandwidth);
        r.latency += edge(e).latency;
        v = edge_target(e);
    }
    return r;
}

Route Topology::gpu_route(int from_gpu, int to_gpu) const {
    if (from_gpu < 0 || from_gpu >= gpu_count() || to_gpu < 0 || to_gpu >= gpu_count())
        throw InputError("GPU index out of range: the cluster has GPUs 0 to " +
                         std::to_string(gpu_count() - 1));
    if (node_of(from_gpu) == node_of(to_gpu))
        return route(gpu_hbm(from_gpu), gpu_hbm(to_gpu));
    // Between nodes a GPU sends through its own NIC (GPUDirect RDMA) and the peer receives
    // through its own, as NCCL does on rail-optimised nodes.
    Route r = route(gpu_hbm(from_gpu), gpu_nic(from_gpu));
    for (const Route& part :
         {route(gpu_nic(from_gpu), gpu_nic(to_gpu)), route(gpu_nic(to_gpu), gpu_hbm(to_gpu))}) {
        r.edges.insert(r.edges.end(), part.edges.begin(), part.edges.end());
        r.bottleneck = std::min(r.bottleneck, part.bottleneck);
        r.latency += part.latency;
    }
    return r;
}

Route Topology::memory_route(int gpu) const {
    return route(gpu_hbm(gpu), gpu_sm(gpu));
}

std::string Topology::vertex_name(VertexId v) const {
    const VertexInfo& i = vertices_[v];
    switch (i.kind) {
    case VertexKind::gpu_sm:
        return fmt::format("gpu{}.sm", i.index);
    case VertexKind::gpu_hbm:
        return fmt::format("gpu{}.hbm", i.index);
    case VertexKind::nvswitch:
        return fmt::format("node{}.nvswitch", i.node);
    case VertexKind::pcie_switch:
        return fmt::format("node{}.pcie{}", i.node, i.index);
    case VertexKind::host:
        return fmt::format("node{}.host", i.node);
    case VertexKind::nic:
        return fmt::format("node{}.nic{}", i.node, i.index);
    case VertexKind::leaf:
        return fmt::format("rail{}.leaf{}", i.index, i.place);
    case VertexKind::spine:
        return fmt::format("spine{}", i.index);
    case VertexKind::ici:
        return fmt::format("chip{}.ici", i.index);
    }
    return "?";
}

std::string Topology::describe(const Route& route, VertexId from) const {
    std::string s = vertex_name(from);
    for (EdgeIndex e : route.edges)
        s += " -> " + vertex_name(edge_target(e));
    return s;
}

namespace {
const char* dot_shape(VertexKind kind) {
    switch (kind) {
    case VertexKind::gpu_sm:
    case VertexKind::gpu_hbm:
        return "box";
    case VertexKind::nvswitch:
    case VertexKind::leaf:
    case VertexKind::spine:
        return "hexagon";
    default:
        return "ellipse";
    }
}
} // namespace

void write_dot(std::ostream& out, const Topology& topology) {
    // Boost's write_graphviz layout, with the edges in the order they were added (by index),
    // not the compressed rows' order (by source).
    out << "digraph G {\n";
    for (std::size_t v = 0; v < topology.vertex_count(); ++v)
        out << v << "[label=\"" << topology.vertex_name(v)
            << "\", shape=" << dot_shape(topology.vertex(v).kind) << "];\n";
    for (EdgeIndex e = 0; e < topology.edge_count(); ++e) {
        const EdgeInfo& info = topology.edge(e);
        out << topology.edge_source(e) << "->" << topology.edge_target(e) << " [label=\""
            << to_string(info.kind) << " " << base::format_bandwidth(info.bandwidth) << "\"];\n";
    }
    out << "}\n";
}

} // namespace clustersim::hardware
