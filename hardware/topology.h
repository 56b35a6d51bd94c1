#pragma once
/// \file
/// The cluster as a directed bandwidth/latency graph, in compressed sparse rows: per edge its
/// link, ends and routing cost, by edge index; per vertex the indices of its out- and in-edges,
/// one array each. A cluster of 100,000 GPUs costs a few allocations, not millions.
///
/// Vertices: per GPU an `sm` and an `hbm` vertex; per node NVSwitch (or, on an xGMI mesh, a
/// link between the `hbm` vertices of every pair of GPUs; or neither), PCIe switches,
/// the host, NICs; per network InfiniBand leaf and spine switches. A TPU slice (a node whose
/// fabric is a torus, hardware/torus.h) has per chip an ICI router joined to its neighbours'
/// (torus_topology.cpp), its hosts as PCIe switches and no host vertex. Every physical link is two
/// directed edges, each with its own bandwidth and latency, so the two directions of a link are
/// separate resources in the flow network. Routing is shortest path by serialisation cost
/// (sum of 1/bandwidth, so NVLink beats PCIe), GPUs are never transit vertices, and ties are
/// broken by a deterministic hash of (source, destination, hop): ECMP that every run repeats.
///
/// Why not Boost.Graph's compressed_sparse_row_graph (used here before): its bidirectional form
/// takes edges only unsorted, through a copy of them all, keeps 8-byte vertex columns and its
/// edge properties in row order, so a second table mapped each edge index to its place. The
/// first touch of that memory (page faults) was most of the cost of building a large cluster:
/// 16,384 GPUs of DGX A100 took 36-48 ms and a peak RSS of 36 MiB, these arrays 15-18 ms and
/// 19.5 MiB (bench/bench_scale.cpp, BM_Topology, run alone; 2-core EPYC VM).

#include "hardware/specs.h"
#include "sim/time.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace clustersim::hardware {

namespace detail {
class FabricIndex;
}

enum class VertexKind : std::uint8_t {
    gpu_sm,
    gpu_hbm,
    nvswitch,
    pcie_switch,
    host,
    nic,
    leaf,
    spine,
    ici, ///< a TPU chip's ICI router: its devices' port to the torus (hardware/torus.h)
};
/// xgmi: a point-to-point link between two GPUs of a mesh node (AMD Instinct's xGMI); ici: a
/// TPU chip's ICI link to a torus neighbour.
enum class LinkKind : std::uint8_t { hbm, nvlink, pcie, host, nic, fabric, xgmi, ici };

std::string_view to_string(VertexKind k);
std::string_view to_string(LinkKind k);

struct VertexInfo {
    VertexKind kind{};
    int node = -1;  ///< the node it belongs to; -1 for network switches
    int index = -1; ///< global GPU index for gpu_*; local index for NICs/PCIe; rail for leaves
    int place = 0;  ///< a leaf's position in its rail; 0 for the others
};

struct EdgeInfo {
    LinkKind kind{};
    double bandwidth = 0; ///< bytes/s in this direction
    sim::Time latency = sim::Time::zero();
};

/// A directed edge's dense index: its place in the order the graph was built, and its resource
/// id in the flow network.
using EdgeIndex = std::uint32_t;

/// A path through the graph.
struct Route {
    std::vector<EdgeIndex> edges;
    double bottleneck = 0; ///< smallest bandwidth on the path (bytes/s); 0 for an empty path
    sim::Time latency = sim::Time::zero(); ///< sum of edge latencies
};

class Topology {
public:
    using VertexId = std::size_t;

    /// Builds the graph of `spec` (all of its nodes and their network).
    explicit Topology(ClusterSpec spec);

    const ClusterSpec& spec() const { return spec_; }

    int gpu_count() const { return spec_.gpu_count(); }
    int node_count() const { return spec_.nodes; }
    int node_of(int gpu) const { return gpu / spec_.node.gpus; }

    VertexId gpu_sm(int gpu) const { return gpu_sm_.at(static_cast<std::size_t>(gpu)); }
    VertexId gpu_hbm(int gpu) const { return gpu_hbm_.at(static_cast<std::size_t>(gpu)); }
    /// The NIC a GPU uses for inter-node traffic (GPU i -> NIC i on a rail-optimised node).
    VertexId gpu_nic(int gpu) const;
    /// The node's NVSwitch vertex; throws for a PCIe node.
    VertexId nvswitch(int node) const;

    std::size_t vertex_count() const { return vertices_.size(); }
    std::size_t edge_count() const { return edges_.size(); }
    const VertexInfo& vertex(VertexId v) const { return vertices_[v]; }
    /// The vertex's name, as "gpu3.hbm", "node0.nic1", "rail2.leaf0" or "spine5" (made when
    /// asked: the graph stores none).
    std::string vertex_name(VertexId v) const;
    const EdgeInfo& edge(EdgeIndex e) const { return edges_.at(e); }
    VertexId edge_source(EdgeIndex e) const { return ends_.at(e).first; }
    VertexId edge_target(EdgeIndex e) const { return ends_.at(e).second; }
    /// The edges leaving `v`, by ascending index.
    std::span<const EdgeIndex> out_edges(VertexId v) const {
        return {out_.data() + out_first_[v], out_.data() + out_first_[v + 1]};
    }
    /// The edges entering `v`, by ascending index.
    std::span<const EdgeIndex> in_edges(VertexId v) const {
        return {in_.data() + in_first_[v], in_.data() + in_first_[v + 1]};
    }

    /// Shortest route between two vertices; throws std::invalid_argument if unreachable.
    Route route(VertexId from, VertexId to) const;
    /// Route from one GPU's memory to another's (HBM to HBM).
    Route gpu_route(int from_gpu, int to_gpu) const;
    /// Route from a GPU's memory to its SMs (the HBM edge), for kernels that stream memory.
    Route memory_route(int gpu) const;
    /// Route's edges described as "gpu0.hbm -> node0.nvswitch -> gpu1.hbm".
    std::string describe(const Route& route, VertexId from) const;

    /// Bandwidth (bytes/s, one direction) across the cut between the first and the second half
    /// of the GPUs (by index), computed as a maximum flow on the graph.
    double bisection_bandwidth() const;

private:
    ClusterSpec spec_;
    std::vector<VertexInfo> vertices_;
    // By edge index: the link, its ends, its routing cost (integer, so that sums are exact).
    std::vector<EdgeInfo> edges_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ends_; ///< (source, target)
    std::vector<std::int64_t> weight_;
    // Compressed rows: v's out-edges are out_[out_first_[v] .. out_first_[v + 1]), its in-edges
    // likewise in in_.
    std::vector<std::uint32_t> out_first_, in_first_;
    std::vector<EdgeIndex> out_, in_;
    std::vector<VertexId> gpu_sm_, gpu_hbm_, nvswitch_, nic_;

    // What routing knows of the graph's structure (hardware/fabric_routes.h), read off the built
    // graph in the constructor.
    const detail::FabricIndex& fabric_index() const { return *fabric_; }
    std::shared_ptr<const detail::FabricIndex> fabric_;

    // Every node is built alike: node k's vertices are node_vertices_ ids from k *
    // node_vertices_, its edges node_edges_ indices from k * node_edges_. A route that stays in
    // one node is then node 0's route shifted, unless an ECMP tie made its choice by the ids;
    // those found so are kept by the nodes' local ids, once, whichever thread finds one first.
    struct NodeRoutes;
    static constexpr std::size_t kMaxKeptNodeVertices = 2048;
    std::size_t node_vertices_ = 0;
    EdgeIndex node_edges_ = 0;
    std::shared_ptr<NodeRoutes> node_routes_;
    Route search(VertexId from, VertexId to, bool& tied) const;
    void index_edges();
};

/// Writes the graph in Graphviz DOT (the layout of Boost.Graph's write_graphviz).
void write_dot(std::ostream& out, const Topology& topology);

} // namespace clustersim::hardware
