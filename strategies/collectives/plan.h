#pragma once
/// \file
/// Internal to strategies/collectives: what a communicator precomputes once so that closed
/// forms cost a few arithmetic operations (communicator.cpp) and decompositions know their
/// rings, trees and routes (schedule.cpp). Not part of the public API.
///
/// Costs are "seconds per byte" of some unit, on the bottleneck edge of a set of concurrent
/// transfers: max over edges of (sum of wire bytes crossing it) / capacity, where wire bytes are
/// payload / protocol efficiency of the transfer's link level. For a set of transfers that a
/// bottleneck edge serves alone this is exactly when the flow network finishes them.

#include "hardware/collective_tuning.h"
#include "hardware/topology.h"
#include "sim/flow_network.h"
#include "sim/time.h"
#include "strategies/collectives/collective.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace clustersim::strategies::collectives::detail {

using hardware::LinkLevel;

/// An endpoint of a transfer: a rank (>= 0), or the NVSwitch of the communicator's k-th node.
constexpr int switch_of(int comm_node) {
    return -1 - comm_node;
}
constexpr bool is_switch(int endpoint) {
    return endpoint < 0;
}
constexpr int switch_node(int endpoint) {
    return -1 - endpoint;
}

/// A transfer between endpoints; `bytes` is payload, often per byte of some unit.
struct PFlow {
    int src = 0;
    int dst = 0;
    double bytes = 0;
};

struct RouteInfo {
    std::span<const sim::ResourceId> edges; ///< kept by the plan (Plan::route_edges_)
    LinkLevel level = LinkLevel::nvlink;
    double bottleneck = 0;
};

/// Per protocol, indexed by static_cast<size_t>(Protocol).
template <typename T>
using PerProtocol = std::array<T, hardware::kProtocolCount>;

constexpr std::size_t idx(Protocol p) {
    return static_cast<std::size_t>(p);
}

/// NCCL's double binary tree and its pipeline stages. In one node (or on nodes of unequal
/// size): two binary trees over ring positions, each carrying half of the buffer. Across
/// nodes of g ranks, NCCL's shape (src/graph/connect.cc ncclTopoPreset and connectTrees,
/// src/graph/trees.cc ncclGetDtree): per channel a chain through each node's ranks, hung from
/// the rank beside the channel's NIC, and two binary trees of nodes (the second mirrored or
/// shifted) joining the chains; one channel per NIC port, each of its two trees carrying
/// 1/(2 x ports) of the buffer.
struct TreeData {
    int depth = 0; ///< D: the deepest rank of any tree
    /// One tree per equal part of the buffer: each rank's parent (-1 for the root), its depth.
    std::vector<std::vector<int>> parent;
    std::vector<std::vector<int>> level;
    int nparts = 0; ///< equal parts of the buffer (one per tree, or per chain)
    int parts() const { return nparts; }
    /// Stage o (0 .. 2D-1) moves chunk k at step k + o: up from depth D - o for o < D, down
    /// from depth o - D for o >= D. Hops of tree t carry part t of the buffer.
    struct Hop {
        int src;
        int dst;
        int part;
    };
    std::vector<std::vector<Hop>> stages;
    std::vector<bool> stage_reduces;
    std::vector<LinkLevel> stage_level;
    /// window[p][lo * stages + hi]: cost per byte of chunk of a step running stages lo..hi;
    /// in one node only. Across nodes prefix[p][hi] (stages 0..hi) and suffix[p][lo] (stages
    /// lo..S-1), and Plan::tree_rounds computes the others it needs.
    PerProtocol<std::vector<double>> window, prefix, suffix;
    /// Each stage's hops with their routes and wire bytes per byte of chunk, per protocol.
    struct Loaded {
        const RouteInfo* route;
        double wire;
    };
    PerProtocol<std::vector<std::vector<Loaded>>> stage_loads;
};

/// Direct algorithms: all pairs at once (per byte sent to each peer) and send/recv to the next
/// rank. Computed on first use: an exact all-pairs pattern costs n^2 routes.
struct DirectData {
    PerProtocol<double> all_pairs_cost{};
    PerProtocol<double> send_recv_cost{};
    LinkLevel all_pairs_level = LinkLevel::nvlink;
    LinkLevel send_recv_level = LinkLevel::nvlink;
    /// Port model of a rooted op: per byte per peer, the root's intra-node peers share its
    /// NVLink (or PCIe) port, the others its NIC. On an xGMI mesh (`mesh`) each intra-node
    /// peer has a link of its own: port_intra is one link's, and the peers do not share it.
    PerProtocol<double> port_intra{};
    PerProtocol<double> port_inter{};
    bool mesh = false;
    /// How many of `peers` intra-node peers' transfers share one port (all, or 1 on a mesh).
    double sharing(double peers) const { return mesh ? std::min(1.0, peers) : peers; }
};

/// Hierarchical all_reduce on a regular multi-node communicator.
struct HierData {
    int per_node = 0;                 ///< g
    PerProtocol<double> intra_ring{}; ///< per step, per byte of S (all nodes at once)
    PerProtocol<double> inter_ring{}; ///< per step, per byte of S (all g rings at once)
    double nvls_rs = 0, nvls_ag = 0;  ///< per byte of S, when NVLS runs the intra phases
};

/// The algorithms NCCL runs across nodes of a regular communicator (g ranks on each of N
/// nodes), as costs per byte of S of all their transfers at once: their phases are pipelined
/// chunk by chunk, so the slowest link sets the pace (NCCL's tuning.cc models each as one
/// latency plus bytes over one bandwidth).
struct MultiNodeData {
    int per_node = 0;   ///< g
    int heads = 0;      ///< ranks per node beside a NIC port: NVLSTree and CollNet heads, rails
    int tree_depth = 0; ///< hops from the deepest node to the root, deeper of the two trees
    /// The two trees of nodes (ncclGetDtree): each communicator node's parent (-1: the root)
    /// and depth (0: the root), per tree.
    std::array<std::vector<int>, 2> node_parent, node_depth;
    /// Position in its node of the head of channel j (the rank beside NIC port j).
    std::vector<int> head_local;
    /// NVLSTree: NVLS reduce-scatter and all-gather in every node at once (Simple).
    double nvls_intra = 0;
    /// NVLSTree: per head, a double binary tree over the nodes (half of the head's share of S
    /// on each), every hop up and down at once (Simple).
    double nvls_tree_inter = 0;
    /// CollNet (direct_intra, chain_intra): 0 where the fabric does not reduce (refused there).
    /// CollNet direct: every rank sends 1/heads of S to each head and each head sends its
    /// reduced part back to every rank (Simple).
    double collnet_direct_intra = 0;
    /// CollNet chain: per head, a chain through the node's ranks up to it and back (Simple).
    double collnet_chain_intra = 0;
    /// CollNet: each head sends its part to the fabric's reducing switches and receives the
    /// result: 1/heads of S each way over its NIC (Simple).
    double collnet_inter = 0;
};

struct TorusGrid;

class Plan {
public:
    Plan(const hardware::Topology& topology, std::vector<int> gpus);

    /// On a TPU slice (hardware/torus.h) the communicator's axes (torus.h); null on GPUs. A
    /// torus plan holds nothing of NCCL's (rings, trees, tuning): XLA's torus rings run there.
    std::shared_ptr<const TorusGrid> torus;

    const hardware::Topology& topo;
    hardware::CollectiveTuning tuning;
    std::vector<int> gpus;
    int n = 0;

    // Nodes: ranks grouped by the node that holds their GPU, nodes by topology index, ranks in
    // a node by GPU index.
    std::vector<int> rank_node;               ///< communicator node of each rank
    std::vector<int> rank_local;              ///< position of each rank in its node
    std::vector<std::vector<int>> node_ranks; ///< ranks of each communicator node
    std::vector<int> node_topology;           ///< topology node of each communicator node
    bool regular = true;                      ///< same number of ranks on every node
    LinkLevel intra_level = LinkLevel::nvlink;
    bool nvls_capable = false; ///< one node, NVSwitch with NVLS, at least 2 GPUs

    // Rings: C channel cycles. One node: one cycle by GPU index (on an xGMI mesh, RCCL's set
    // of permutations that loads every link: mesh_rings.h). Several nodes: rail-aligned
    // cycles (node k enters and leaves channel c on GPUs c and c+1, alternating direction with
    // the node's parity, so every inter-node hop stays on one rail and each NIC carries one
    // channel each way).
    int channels = 1;
    std::vector<std::vector<int>> cycles;
    std::vector<PFlow> ring_step; ///< one step of every channel, per byte of a rank's block
    PerProtocol<double> ring_cost{};
    LinkLevel ring_level = LinkLevel::nvlink;

    // Chains (broadcast, reduce): cycle 0's hops; hop i goes from cycles[0][i] to [i + 1].
    PerProtocol<std::vector<double>> hop_cost;
    PerProtocol<std::vector<double>> hop_cost_levels; ///< distinct values, ascending
    std::vector<LinkLevel> hop_level;
    std::vector<int> cycle_position; ///< position of each rank in cycles[0]

    // NVLS (nvls_capable only): per byte of S, by op.
    double nvls_all_reduce = 0, nvls_all_gather = 0, nvls_reduce_scatter = 0;

    /// PXN (hardware::CollectiveTuning::pxn): the rank a point-to-point send from `src` to a
    /// rank on another node relays through, the rank of src's node with dst's device index
    /// whose NIC (dst's rail) is not src's own; -1 when the send goes out through src's NIC
    /// (PXN off, a PCIe node, one node, no such rank in the communicator, or src on that NIC).
    int pxn_relay(int src, int dst) const;
    /// True when sends to other nodes may relay through PXN (pxn_relay can be >= 0).
    bool pxn() const { return !rank_by_device_.empty(); }
    /// Appends a point-to-point transfer of `bytes` as NCCL routes it: src to dst, or with PXN
    /// src to its relay over NVLink and the relay to dst over the relay's NIC, both at once
    /// (the relay's proxy sends each chunk as it lands: a pipeline, not store and forward).
    void add_p2p(int src, int dst, double bytes, std::vector<PFlow>& out) const;

    /// Route between endpoints (cached; thread-safe).
    const RouteInfo& route(int src, int dst) const;
    /// The HBM edge a rank's kernels stream memory through.
    sim::ResourceId memory_edge(int rank) const { return memory_edges_[static_cast<size_t>(rank)]; }
    double efficiency(LinkLevel level, Protocol p) const;
    /// Efficiency of a transfer: NVLS for switch endpoints, else by the route's level.
    double flow_efficiency(int src, int dst, Protocol p) const;
    sim::Time step_latency(LinkLevel level, Protocol p) const {
        return tuning.protocol(p).level(level).step_latency;
    }
    /// NCCL's Tree row of hardware latencies where the hardware gives it (collectives.tree),
    /// else the protocol's step latency.
    sim::Time tree_step_latency(LinkLevel level, Protocol p) const {
        const sim::Time t = tuning.tree.step_latency[idx(p)][static_cast<std::size_t>(level)];
        return t > sim::Time::zero() ? t : step_latency(level, p);
    }
    /// The network plugin's latency on the double binary tree across nodes: NCCL's count,
    /// 2 log2(nNodes) network latencies (tuning.cc: the tree's `log2i(nNodes) * interLat`, up
    /// and down), whatever the depth of the tree's shape here.
    sim::Time tree_plugin_latency(Protocol p) const {
        int log2_nodes = 0;
        for (auto x = node_ranks.size(); x > 1; x >>= 1)
            ++log2_nodes;
        return plugin_latency[idx(p)] * (2 * log2_nodes);
    }
    /// A network step of the algorithms NCCL's tuning model times (rings' all-reduce,
    /// all-gather and reduce-scatter, trees, NVLSTree, CollNet): the step latency and the
    /// latency the network plugin reports (hardware NetworkSpec::net_latency), twice under
    /// Simple (tuning.cc: `interLat += graphs[a]->latencyInter`, again for Simple's flush). Not
    /// the point-to-point transfers, all-to-alls and broadcast/reduce chains, which NCCL's
    /// tuning does not time with it.
    sim::Time tuned_network_latency(Protocol p) const {
        return step_latency(LinkLevel::network, p) + plugin_latency[idx(p)];
    }
    /// NetworkSpec::net_latency per protocol (twice for Simple).
    std::array<sim::Time, hardware::kProtocolCount> plugin_latency{};
    /// max over edges of sum(bytes / efficiency) / capacity, for flows running together.
    double pattern_cost(const std::vector<PFlow>& flows, Protocol p) const;
    /// The slowest link level any of the flows crosses (network > pcie > nvlink).
    LinkLevel pattern_level(const std::vector<PFlow>& flows) const;

    const TreeData& tree() const;
    /// Throws InputError, before tree() builds its tables, when they would not fit in what
    /// this process may still take (hardware/memory_limit.h).
    void refuse_if_tree_too_large() const;
    /// Equal parts of the buffer the tree splits it into (tree().parts()), without the tree.
    int tree_parts() const;
    /// A sample of the tree for a cheap lower bound on its cost (the automatic choice skips
    /// planning a tree that cannot win): the same stages (2D), holding the hops of one rail (the
    /// first NIC port's part of each tree): every hop between nodes on it (a 64th of the hops
    /// on 8-GPU nodes with 8 NIC ports) and the chains in a few nodes, one of each role the two
    /// trees of nodes give a node (root, parent, first and second children). Every
    /// window of the sample costs at most what the tree's window costs: its hops are a subset
    /// of the tree's on the same stages. Regular communicators on 2 or more nodes only;
    /// thread-safe.
    const TreeData& tree_sample() const;
    /// Sum over the rounds of a tree pipeline of K chunks of the cost per byte of chunk of the
    /// stages each round runs (cached per K where it is computed on demand; thread-safe).
    double tree_rounds(Protocol p, std::int64_t K) const;
    /// The same for any pipeline of stages (a tree, or chains).
    double pipeline_rounds(const TreeData& t, Protocol p, std::int64_t K) const;
    /// Broadcast (reduce = false) or reduce across the ring channels: a chain per channel from
    /// (to) the root, 1/channels of the buffer each; stages and windows as a tree's (parent and
    /// level empty). Built per root on first use, outside every lock (a thread that asks for
    /// chains another is still building builds them too rather than wait; the first published
    /// is kept); thread-safe.
    const TreeData& chains(int root, bool reduce) const;
    const HierData& hier() const;
    const DirectData& direct() const;
    /// Regular communicators on 2 or more nodes only.
    const MultiNodeData& multi() const;

private:
    void build_rings();

    std::vector<sim::ResourceId> memory_edges_;
    /// Routes found so far, by source endpoint (ranks, then the nodes' switches: route_row):
    /// up to kRowRoutes (destination, route) per source in its row, the rest of a source that
    /// talks to more (all-to-all) in one hash map by (source, destination). A ring's or a
    /// tree's endpoint talks to a few others and a plan asks source after source, so a lookup
    /// reads one short row; a hash map of every route (875,000 on 100,000 GPUs) missed the
    /// cache on its buckets and nodes, a fifth of a 1 GiB all-reduce on 100,000 GPUs. The routes
    /// themselves sit in a deque, whose elements never move (callers keep references).
    struct KnownRoute {
        int dst;
        const RouteInfo* route;
    };
    static constexpr std::size_t kRowRoutes = 16;
    std::size_t route_row(int endpoint) const;
    /// The route from the source of `row` to `dst` if found before, else null (under the lock).
    const RouteInfo* known_route(std::size_t row, int dst) const;
    mutable std::shared_mutex route_mutex_; ///< guards the four below, never a search
    mutable std::vector<std::vector<KnownRoute>> route_rows_;
    mutable std::unordered_map<std::uint64_t, const RouteInfo*> more_routes_;
    mutable std::deque<RouteInfo> routes_;
    /// The routes' edges, one after another in blocks that are freed with the plan: 100,000
    /// GPUs' plans hold 875,000 routes, which as a vector each cost as many allocations and
    /// frees.
    mutable std::pmr::monotonic_buffer_resource route_edges_;
    mutable std::once_flag tree_once_, hier_once_, direct_once_, multi_once_;
    mutable std::unique_ptr<MultiNodeData> multi_;
    mutable std::unique_ptr<TreeData> tree_;
    mutable std::once_flag tree_sample_once_;
    mutable std::unique_ptr<TreeData> tree_sample_;
    mutable std::mutex tree_inner_mutex_;
    mutable std::map<std::tuple<const TreeData*, std::size_t, std::int64_t>, std::vector<double>>
        tree_inner_;
    /// A root's chains once built; entries are never removed, so a pointer to one stays valid
    /// as long as the plan (Plan::tree_inner_ keys on it).
    struct ChainsEntry {
        std::atomic<const TreeData*> data{nullptr};
        ChainsEntry() = default;
        ChainsEntry(const ChainsEntry&) = delete;
        ChainsEntry& operator=(const ChainsEntry&) = delete;
        ~ChainsEntry() { delete data.load(); }
    };
    mutable std::shared_mutex chains_mutex_; ///< guards chains_ only, never a build
    mutable std::map<std::pair<int, bool>, std::unique_ptr<ChainsEntry>> chains_;
    /// Routes, levels, wire bytes and windows of a pipeline's stages (every window, or those
    /// from the first and to the last stage).
    void load_pipeline(TreeData& t, bool all_windows) const;
    mutable std::unique_ptr<HierData> hier_;
    mutable std::unique_ptr<DirectData> direct_;
    /// PXN relays: per communicator node, the rank holding each device index (-1: none);
    /// empty when PXN does not apply.
    std::vector<std::vector<int>> rank_by_device_;
};

/// HBM bytes a rank's collective kernel moves in series with its transfers (memory_passes x
/// the rank's user buffer).
double kernel_memory_bytes(const Plan& plan, Op op, double bytes, bool is_root);
/// Seconds of reduction arithmetic on a rank (CUDA-core adds: the fp32 rate, twice that for
/// packed 16-bit types; NVLS reduces in the switch).
double kernel_compute_seconds(const Plan& plan, Op op, Algorithm algorithm, double bytes,
                              hardware::Dtype dtype, bool is_root);

/// The double binary tree across nodes of a regular communicator: the least seconds NCCL's
/// cap per channel allows for `bytes` (busBw <= channels x perChMaxTreeBw, for LL128
/// perChMaxTreeLL128Bw too; a tree's algbw is busBw / 2); 0: no cap (one node, LL).
double tree_cap_seconds(const Plan& plan, Protocol p, double bytes);
/// NVLSTree across nodes (regular communicators on 2 or more nodes): seconds per byte of S
/// of its pipelined phases, the slowest of the NVLS phases in the nodes, the trees across them
/// and NCCL's cap per channel (tuning.cc perChMaxNVLSTreeBws).
double nvls_tree_seconds_per_byte(const Plan& plan);
/// NCCL's NVLSTree latency (tuning.cc): the NVLS latency and 2 log2(nodes) network steps.
double nvls_tree_latency_seconds(const Plan& plan, Protocol p);
/// The seconds per byte of S that NCCL's cap per channel alone allows (0: no cap).
double nvls_tree_cap_seconds_per_byte(const Plan& plan);
/// Bytes of one NVLSTree pipeline step (channels x heads x chunk, NCCL's chunk rules), and
/// the bytes whose time its pipeline fill adds: 2D steps (communicator.cpp).
double nvls_tree_step_bytes(const Plan& plan, double bytes);
double nvls_tree_fill_bytes(const Plan& plan, double bytes);

/// Elements [begin, end) of part `i` of `parts` equal parts of `total` (floor boundaries).
inline std::int64_t part_begin(std::int64_t i, std::int64_t parts, std::int64_t total) {
    return i * total / parts; // i * total stays far below 2^63 for any buffer we simulate
}

} // namespace clustersim::strategies::collectives::detail
