// Closed forms of every (op, algorithm, protocol) on a communicator. Each is the sum of the
// latencies of its steps and, per step, the bytes over the bottleneck of that step's transfers,
// plus the kernel's memory and arithmetic work; schedule.cpp decomposes the same steps for the
// flow network, and tests hold the two within 1% when nothing else runs.
#include "strategies/collectives/communicator.h"

#include "base/error.h"
#include "strategies/collectives/plan.h"
#include "strategies/collectives/rccl_tuning.h"
#include "strategies/collectives/torus.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <shared_mutex>
#include <span>
#include <tuple>
#include <vector>

namespace clustersim::strategies::collectives {

using detail::idx;
using detail::Plan;
using hardware::LinkLevel;

namespace detail {

double kernel_memory_bytes(const Plan& plan, Op op, double bytes, bool is_root) {
    return plan.tuning.memory_passes *
           rank_buffer_bytes(op, static_cast<std::int64_t>(bytes), plan.n, is_root);
}

namespace {
/// NVLS runs the intra-node phases of hierarchical and NVLSTree (HierData::nvls_rs > 0, known
/// without building HierData's patterns: a million transfers on 100,000 GPUs).
bool nvls_in_nodes(const Plan& plan) {
    const auto& node = plan.topo.spec().node;
    return node.nvls && node.fabric == hardware::IntraNodeFabric::nvswitch &&
           plan.node_ranks.front().size() >= 2;
}
} // namespace

double kernel_compute_seconds(const Plan& plan, Op op, Algorithm algorithm, double bytes,
                              hardware::Dtype dtype, bool is_root) {
    const auto& gpu = plan.topo.spec().node.gpu;
    const double fp32 = gpu.peak(hardware::Dtype::fp32);
    if (!(fp32 > 0))
        return 0;
    // Element-wise adds run on CUDA cores: the fp32 rate, twice that for packed half2/bfloat162.
    const double rate = dtype == hardware::Dtype::fp32 ? fp32 : 2 * fp32;
    const double count = bytes / static_cast<double>(hardware::bytes_per_element(dtype));
    const double n = plan.n;
    double elements = 0;
    switch (op) {
    case Op::all_reduce:
        if (algorithm == Algorithm::direct) {
            elements = (n - 1) * count;
        } else if (algorithm == Algorithm::nvls) {
            elements = 0;
        } else if (algorithm == Algorithm::collnet_direct) {
            // Each head adds the g-1 others' parts of its 1/heads share; the switch adds nodes.
            const auto& m = plan.multi();
            elements = (m.per_node - 1.0) / m.heads * count;
        } else if (algorithm == Algorithm::collnet_chain) {
            elements = count; // each rank of a chain adds its buffer once
        } else if ((algorithm == Algorithm::hierarchical || algorithm == Algorithm::nvls_tree) &&
                   nvls_in_nodes(plan)) {
            const double nodes = static_cast<double>(plan.node_ranks.size());
            const auto per_node = static_cast<int>(plan.node_ranks.front().size());
            elements = (nodes - 1) / nodes * count / per_node;
        } else {
            elements = (n - 1) / n * count;
        }
        break;
    case Op::reduce_scatter:
        elements = algorithm == Algorithm::nvls ? 0 : (n - 1) / n * count;
        break;
    case Op::reduce:
        elements = algorithm == Algorithm::direct ? (is_root ? (n - 1) * count : 0) : count;
        break;
    default:
        break;
    }
    return elements / rate;
}

double tree_cap_seconds(const Plan& plan, Protocol p, double bytes) {
    const int N = static_cast<int>(plan.node_ranks.size());
    if (N < 2 || !plan.regular)
        return 0;
    const double channels = plan.tree_parts() / 2.0; // one per NIC port (plan.cpp)
    double cap = plan.tuning.tree.channel.at(N);
    const double ll128 = plan.tuning.tree.ll128_channel.at(N);
    if (p == Protocol::ll128 && ll128 > 0)
        cap = cap > 0 ? std::min(cap, ll128) : ll128;
    if (p != Protocol::ll && cap > 0)
        return 2 * bytes / (channels * cap);
    return 0;
}

double nvls_tree_latency_seconds(const Plan& plan, Protocol p) {
    int log2_nodes = 0; // NCCL's log2i
    for (int x = static_cast<int>(plan.node_ranks.size()); x > 1; x >>= 1)
        ++log2_nodes;
    return plan.tuning.nvls.latency.seconds() +
           2 * log2_nodes * plan.tuned_network_latency(p).seconds();
}

double nvls_tree_cap_seconds_per_byte(const Plan& plan) {
    // NCCL's cap is in bus bandwidth (algbw = busbw n / (2(n-1))), one channel per head.
    const double cap = plan.tuning.nvls_tree_channel.at(static_cast<int>(plan.node_ranks.size()));
    const double n = plan.n;
    return cap > 0 ? 2 * (n - 1) / n / (plan.multi().heads * cap) : 0.0;
}

double nvls_tree_seconds_per_byte(const Plan& plan) {
    const MultiNodeData& m = plan.multi();
    return std::max(std::max(m.nvls_intra, m.nvls_tree_inter),
                    nvls_tree_cap_seconds_per_byte(plan));
}

/// NCCL runs `channels` CTAs; each loops over one chunk per head (src/device/all_reduce.h,
/// RunWorkColl<..., NCCL_ALGO_NVLS_TREE>: loopCount = nHeads x chunkCount), so one pipeline
/// step moves channels x heads x chunk of the buffer, at the pace of the slowest part. The
/// chunk is NCCL's, shrunk for small buffers as src/enqueue.cc calcCollChunking does for
/// NCCL_ALGO_NVLS_TREE.
double nvls_tree_step_bytes(const Plan& plan, double bytes) {
    const hardware::NvlsTreePipeline& pipe = plan.tuning.nvls_tree_pipeline;
    std::int64_t chunk = pipe.chunk(static_cast<int>(plan.node_ranks.size()));
    if (pipe.channels <= 0 || chunk <= 0)
        return 0;
    const double ops = static_cast<double>(pipe.channels) * plan.multi().heads; // concurrentOps
    // (times concurrentOps x chunk, chunk size above which the rule applies, new chunk)
    static constexpr struct {
        double times;
        std::int64_t above;
    } kRules[] = {{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}};
    for (const auto& rule : kRules) {
        if (bytes < rule.times * ops * static_cast<double>(chunk) && chunk > rule.above)
            chunk = rule.above;
    }
    return std::min(bytes, ops * static_cast<double>(chunk));
}

/// A chunk crosses the tree's depth D up and D down before the first result returns: 2D steps
/// of fill (the NVLS reduce and multicast at either end overlap the neighbouring chunks' hops).
double nvls_tree_fill_bytes(const Plan& plan, double bytes) {
    return 2.0 * plan.multi().tree_depth * nvls_tree_step_bytes(plan, bytes);
}

} // namespace detail

namespace {

double seconds(sim::Time t) {
    return t.seconds();
}

/// floor(log2(x)), NCCL's log2i.
int log2i(int x) {
    int l = 0;
    while (x > 1) {
        x >>= 1;
        ++l;
    }
    return l;
}

std::int64_t chunks(double bytes, std::int64_t chunk_bytes) {
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(bytes / static_cast<double>(chunk_bytes))));
}

/// A pipelined chain over cycle 0 starting at cyclic hop `start`: n - 1 hops, K chunks.
/// Round r runs hops max(0, r-K+1) .. min(n-2, r); its time is its slowest hop's.
double chain_seconds(const Plan& plan, Protocol p, int start, double bytes) {
    const int n = plan.n;
    if (n < 2)
        return 0;
    const std::int64_t K = chunks(bytes, plan.tuning.protocol(p).chunk_bytes);
    const double chunk = bytes / static_cast<double>(K);
    const auto& w = plan.hop_cost[idx(p)];
    double latency = 0;
    for (int j = 0; j < n - 1; ++j)
        latency += seconds(plan.step_latency(plan.hop_level[size_t((start + j) % n)], p));
    // sum over rounds of max over active hops = sum over cost levels u_i of (u_i - u_{i-1}) x
    // (rounds in which a hop costing >= u_i is active).
    double total = 0, previous = 0;
    for (double level : plan.hop_cost_levels[idx(p)]) {
        std::int64_t covered = 0, end = 0;
        for (int j = 0; j < n - 1; ++j) {
            if (w[size_t((start + j) % n)] < level)
                continue;
            const std::int64_t lo = std::max<std::int64_t>(j, end);
            const std::int64_t hi = j + K;
            if (hi > lo)
                covered += hi - lo;
            end = std::max(end, hi);
        }
        total += (level - previous) * static_cast<double>(covered);
        previous = level;
    }
    return latency + total * chunk;
}

/// The transfers of the tree pipeline: per round, the busiest link of the stages it runs.
double tree_transfer_seconds(const Plan& plan, Protocol p, double bytes) {
    const detail::TreeData& t = plan.tree();
    const double part = bytes / t.parts(); // each tree carries an equal part
    const std::int64_t K = chunks(part, plan.tuning.protocol(p).chunk_bytes);
    const double chunk = part / static_cast<double>(K);
    return plan.tree_rounds(p, K) * chunk;
}

/// Broadcast and reduce across the ring channels (Plan::chains): a step latency per stage, by
/// the slowest link any channel's hop crosses, and the pipeline of 1/channels of S per chain.
double chains_seconds(const Plan& plan, Protocol p, int root, bool reduce, double bytes) {
    const detail::TreeData& t = plan.chains(root, reduce);
    double latency = 0;
    for (LinkLevel l : t.stage_level)
        latency += seconds(plan.step_latency(l, p));
    const double part = bytes / t.parts();
    const std::int64_t K = chunks(part, plan.tuning.protocol(p).chunk_bytes);
    return latency + plan.pipeline_rounds(t, p, K) * (part / static_cast<double>(K));
}

/// The tree's step latencies: one per pipeline stage, by the slowest link the stage crosses;
/// across nodes, NCCL's Tree row of hardware latencies (plan.h: tree_step_latency).
double tree_latency(const Plan& plan, Protocol p) {
    double latency = 0;
    const bool across = plan.node_ranks.size() > 1;
    for (LinkLevel l : plan.tree().stage_level)
        latency += seconds(across ? plan.tree_step_latency(l, p) : plan.step_latency(l, p));
    return latency + (across ? seconds(plan.tree_plugin_latency(p)) : 0.0);
}

double tree_seconds(const Plan& plan, Protocol p, double bytes) {
    return tree_latency(plan, p) + tree_transfer_seconds(plan, p, bytes);
}

/// The direct algorithm (every rank to every peer at once): its bandwidth term and the link
/// level whose latency it pays, inside a node and across nodes alike.
struct DirectCost {
    double body = 0;
    LinkLevel level = LinkLevel::network;
};

DirectCost direct_cost(const Plan& p, const Collective& c, Protocol pr) {
    const detail::DirectData& dd = p.direct();
    const double S = static_cast<double>(c.bytes);
    const double n = p.n;
    DirectCost d{0, dd.all_pairs_level};
    switch (c.op) {
    case Op::all_reduce:
        d.body = dd.all_pairs_cost[idx(pr)] * S;
        break;
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::all_to_all:
        d.body = dd.all_pairs_cost[idx(pr)] * S / n;
        break;
    case Op::send_recv:
        d.body = dd.send_recv_cost[idx(pr)] * S;
        d.level = dd.send_recv_level;
        break;
    default: { // rooted: the root's ports carry one transfer per peer
        const double per_peer = (c.op == Op::broadcast || c.op == Op::reduce) ? S : S / n;
        const double local =
            static_cast<double>(p.node_ranks[size_t(p.rank_node[size_t(c.root)])].size());
        d.body = std::max(dd.sharing(local - 1) * dd.port_intra[idx(pr)],
                          (n - local) * dd.port_inter[idx(pr)]) *
                 per_peer;
        d.level = n > local ? LinkLevel::network : p.intra_level;
        if (p.pxn() && (c.op == Op::broadcast || c.op == Op::scatter) && n > local) {
            // The root sends: with PXN each remote peer's bytes cross NVLink to the GPU on the
            // peer's rail and leave by its NIC, so the node's NICs share them and the root's
            // NVLink port carries them too. Gather and reduce need no term here: their
            // non-root senders do relay to the root's rail (NCCL relays on the sending side,
            // src/transport/net.cc), but every remote byte still enters by the root's one NIC,
            // which bounds the time with or without PXN (flow fidelity's DirectPhase plays the
            // relays).
            const auto nic_of = [&](int r) { return p.topo.gpu_nic(p.gpus[size_t(r)]); };
            std::vector<std::pair<hardware::Topology::VertexId, int>> per_nic; // a few NICs
            double nvlink = local - 1;
            int most = 0;
            for (int j = 0; j < p.n; ++j) {
                if (p.rank_node[size_t(j)] == p.rank_node[size_t(c.root)])
                    continue;
                const int relay = p.pxn_relay(c.root, j);
                nvlink += relay >= 0 ? 1 : 0;
                const hardware::Topology::VertexId v = nic_of(relay >= 0 ? relay : c.root);
                auto it = std::find_if(per_nic.begin(), per_nic.end(),
                                       [v](const auto& e) { return e.first == v; });
                if (it == per_nic.end())
                    it = per_nic.insert(per_nic.end(), {v, 0});
                most = std::max(most, ++it->second);
            }
            d.body =
                std::max(nvlink * dd.port_intra[idx(pr)], most * dd.port_inter[idx(pr)]) * per_peer;
        }
    }
    }
    return d;
}

/// Communicators across at least this many nodes weigh the tree by a lower bound first: on
/// fewer, its sample is not much smaller than the tree.
constexpr std::size_t kTreeBoundNodes = 64;

/// The kernel's own memory and arithmetic work across nodes (predict_across_nodes).
double local_seconds_across(const Plan& p, const Collective& c, Algorithm a) {
    const double S = static_cast<double>(c.bytes);
    const double hbm = p.topo.spec().node.gpu.hbm_bandwidth;
    double local = 0;
    for (bool is_root : {false, true}) {
        if (is_root && !has_root(c.op))
            continue;
        local = std::max({local, detail::kernel_memory_bytes(p, c.op, S, is_root) / hbm,
                          detail::kernel_compute_seconds(p, c.op, a, S, c.dtype, is_root)});
    }
    return local;
}

/// A lower bound on predict_across_nodes(c, tree, pr) without planning the tree: a step
/// latency per stage at least the least of NCCL's Tree row, and the pipeline's rounds costed
/// on Plan::tree_sample, whose every window costs at most the tree's (taken a millionth lower
/// still, against rounding in sums taken in another order).
sim::Time tree_lower_bound(const Plan& p, const Collective& c, Protocol pr) {
    const detail::TreeData& t = p.tree_sample();
    const double S = static_cast<double>(c.bytes);
    double least_step = std::numeric_limits<double>::infinity();
    for (LinkLevel l : {LinkLevel::nvlink, LinkLevel::pcie, LinkLevel::network})
        least_step = std::min(least_step, seconds(p.tree_step_latency(l, pr)));
    const double lat = seconds(p.tuning.launch_latency) +
                       seconds(p.tuning.protocol(pr).base_latency) +
                       static_cast<double>(t.stages.size()) * least_step;
    const double part = S / t.parts();
    const std::int64_t K = chunks(part, p.tuning.protocol(pr).chunk_bytes);
    double body = p.pipeline_rounds(t, pr, K) * (part / static_cast<double>(K)) * (1 - 1e-6);
    body = std::max(body, detail::tree_cap_seconds(p, pr, S));
    const double local = local_seconds_across(p, c, Algorithm::tree);
    return sim::Time::from_seconds((lat + std::max(body, local)) * (1 - 1e-6));
}

/// RCCL's network proxy post overhead (src/graph/tuning.cc:294-300, getNetOverhead): 2 us on
/// an x86 AMD host (1 on an Intel one). The hosts of the validated MI300X runs are not stated;
/// the choice is the same with either at every size of data/reference/rccl (the test says so).
constexpr double kRcclNetOverheadUs = 2.0;

/// RCCL's own choice of algorithm and protocol (rccl_tuning.h) where the hardware runs RCCL
/// (`collectives.library: rccl`) and the call leaves the protocol open; on whole nodes of an
/// xGMI mesh only, the nodes RCCL's rome models 79 and 81 match and give tuning model 5.
/// nullopt elsewhere: the cheapest predicted then runs, as on NVIDIA hardware.
std::optional<detail::RcclChoice> rccl_choice(const Plan& p, const Collective& c) {
    const auto& node = p.topo.spec().node;
    if (p.tuning.library != hardware::CollectiveLibrary::rccl || c.protocol || !p.regular ||
        node.fabric != hardware::IntraNodeFabric::xgmi_mesh)
        return std::nullopt;
    const int nodes = static_cast<int>(p.node_ranks.size());
    if (node.gpus != 8 || p.n != nodes * node.gpus) // the rome models' 8-GPU nodes, whole
        return std::nullopt;
    // In one node RCCL hands all_reduce to MSCCL++ (to 1 MiB, src/init.cc:105) and to MSCCL's
    // all-pairs programs (to 16 MiB out of place: tools/msccl-algorithms/
    // allreduce-allpairs-8n-simple-op.xml, maxBytes) where its rome model enables MSCCL
    // (rome_model_79): not modelled, so the cheapest predicted runs there.
    constexpr std::int64_t kMscclMaxBytes = 16 << 20;
    if (nodes == 1 && c.op == Op::all_reduce && c.bytes <= kMscclMaxBytes)
        return std::nullopt;
    detail::RcclCall call;
    call.op = c.op;
    call.bytes = static_cast<double>(c.bytes);
    call.ranks = p.n;
    call.nodes = nodes;
    call.total_bw_gbps = detail::rccl_total_bw_gbps(node.gpus);
    call.net_overhead_us = kRcclNetOverheadUs;
    call.simple_only = p.tuning.simple_protocol_only;
    return detail::rccl_choose(call, c.algorithm);
}

} // namespace

struct Communicator::Memo {
    /// (op, dtype, root, bytes): what an automatic choice depends on beside the communicator.
    using Key = std::tuple<int, int, int, std::int64_t>;
    std::shared_mutex mutex;
    std::map<Key, Choice> choices;
};

Communicator::Communicator(const hardware::Topology& topology, std::vector<int> gpus)
    : plan_(std::make_unique<Plan>(topology, std::move(gpus)))
    , memo_(std::make_unique<Memo>()) {
    static_assert(static_cast<size_t>(Algorithm::torus) == kConcreteAlgorithms.size());
    for (size_t a = 0; a < runs_.size(); ++a)
        for (Op op : kAllOps)
            runs_[a][static_cast<size_t>(op)] = why_not(static_cast<Algorithm>(a), op).empty();
}

Communicator Communicator::first(const hardware::Topology& topology, int count) {
    if (count < 1 || count > topology.gpu_count())
        throw InputError("a communicator of " + std::to_string(count) +
                         " GPUs does not fit a cluster of " + std::to_string(topology.gpu_count()));
    std::vector<int> gpus(static_cast<size_t>(count));
    std::iota(gpus.begin(), gpus.end(), 0);
    return Communicator(topology, std::move(gpus));
}

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;

int Communicator::size() const {
    return plan_->n;
}
const std::vector<int>& Communicator::gpus() const {
    return plan_->gpus;
}
const hardware::Topology& Communicator::topology() const {
    return plan_->topo;
}
int Communicator::node_count() const {
    return static_cast<int>(plan_->node_ranks.size());
}

std::string Communicator::why_not(Algorithm a, Op op) const {
    const Plan& p = *plan_;
    const std::string name(to_string(a));
    const std::string op_name(to_string(op));
    if (p.torus) {
        if (a == Algorithm::automatic || a == Algorithm::torus) {
            if (op != Op::all_reduce && op != Op::all_gather && op != Op::reduce_scatter &&
                op != Op::all_to_all)
                return "on a TPU slice the collectives modelled are XLA's all_reduce, all_gather, "
                       "reduce_scatter and all_to_all on the torus, not " +
                       op_name;
            return p.torus->why_not;
        }
        return "--algo " + name + " is NCCL's; on a TPU slice (hardware '" + p.topo.spec().name +
               "') collectives run as XLA's rings on the torus: --algo torus";
    }
    switch (a) {
    case Algorithm::torus:
        return "--algo torus runs on a TPU slice's torus; hardware '" + p.topo.spec().name +
               "' is a GPU cluster (NCCL's algorithms: ring, tree, ...)";
    case Algorithm::automatic:
    case Algorithm::direct:
        return {};
    case Algorithm::ring:
        if (op == Op::all_reduce || op == Op::all_gather || op == Op::reduce_scatter ||
            op == Op::broadcast || op == Op::reduce)
            return {};
        return "--algo ring runs all_reduce, all_gather, reduce_scatter, broadcast and reduce; " +
               op_name + " runs direct (point-to-point), as in NCCL";
    case Algorithm::tree:
        if (op != Op::all_reduce)
            return "--algo tree runs all_reduce only (NCCL's double binary tree), not " + op_name;
        if (p.n < 2)
            return "--algo tree needs at least 2 GPUs, got 1";
        return {};
    case Algorithm::nvls:
        if (op != Op::all_reduce && op != Op::all_gather && op != Op::reduce_scatter)
            return "--algo nvls runs all_reduce, all_gather and reduce_scatter, not " + op_name;
        if (!(p.topo.spec().node.nvls &&
              p.topo.spec().node.fabric == hardware::IntraNodeFabric::nvswitch))
            return "--algo nvls needs NVSwitch with NVLink SHARP (node.nvswitch.nvls: true); "
                   "hardware '" +
                   p.topo.spec().name + "' has none";
        if (p.node_ranks.size() > 1)
            return "--algo nvls runs within one node, but the GPUs span " +
                   std::to_string(p.node_ranks.size()) + " nodes (use hierarchical)";
        if (p.n < 2)
            return "--algo nvls needs at least 2 GPUs, got 1";
        return {};
    case Algorithm::hierarchical:
    case Algorithm::nvls_tree:
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain: {
        if (op != Op::all_reduce)
            return "--algo " + name + " runs all_reduce only, not " + op_name;
        const auto& spec = p.topo.spec();
        if (a == Algorithm::nvls_tree &&
            !(spec.node.nvls && spec.node.fabric == hardware::IntraNodeFabric::nvswitch))
            return "--algo nvls_tree needs NVSwitch with NVLink SHARP in each node "
                   "(node.nvswitch.nvls: true, H100 and later); hardware '" +
                   spec.name + "' has none (use ring or tree)";
        if ((a == Algorithm::collnet_direct || a == Algorithm::collnet_chain) &&
            !spec.network.in_network_reduction)
            return "--algo " + name +
                   " needs a fabric whose switches reduce (SHARP: "
                   "network.in_network_reduction: true); hardware '" +
                   spec.name + "' has none (use ring, tree" +
                   (spec.node.nvls ? ", nvls_tree" : "") + ")";
        if (a == Algorithm::collnet_direct &&
            spec.node.fabric != hardware::IntraNodeFabric::nvswitch)
            return "--algo collnet_direct needs NVSwitch nodes (NCCL disables it elsewhere); use "
                   "collnet_chain";
        if (p.node_ranks.size() < 2)
            return "--algo " + name + " needs GPUs on at least 2 nodes; these " +
                   std::to_string(p.n) + " are on one" +
                   (a == Algorithm::nvls_tree ? " (use nvls)" : "");
        if (!p.regular)
            return "--algo " + name + " needs the same number of GPUs on every node";
        if (a == Algorithm::nvls_tree && p.node_ranks.front().size() < 2)
            return "--algo nvls_tree needs at least 2 GPUs per node";
        return {};
    }
    }
    return "unknown algorithm";
}

void Communicator::validate(const Collective& c) const {
    const Plan& p = *plan_;
    using hardware::Dtype;
    if (c.dtype != Dtype::fp32 && c.dtype != Dtype::fp16 && c.dtype != Dtype::bf16)
        throw InputError("dtype '" + std::string(hardware::to_string(c.dtype)) +
                         "': collectives run fp32, fp16 and bf16");
    const std::int64_t elem = hardware::bytes_per_element(c.dtype);
    const std::int64_t unit = elem * (splits_per_rank(c.op) ? p.n : 1);
    if (c.bytes <= 0)
        throw InputError("the size of a collective must be positive, got " +
                         std::to_string(c.bytes) + " B");
    if (c.bytes % unit != 0)
        throw InputError(std::string(to_string(c.op)) + " of " + std::to_string(c.bytes) +
                         " B on " + std::to_string(p.n) + " GPUs: the size must be a multiple of " +
                         std::to_string(unit) + " B (" +
                         (splits_per_rank(c.op) ? std::to_string(p.n) + " blocks of " : "") +
                         std::to_string(elem) + "-byte " +
                         std::string(hardware::to_string(c.dtype)) + " elements)");
    if (has_root(c.op) && (c.root < 0 || c.root >= p.n))
        throw InputError("root " + std::to_string(c.root) + " is not a rank: ranks are 0 to " +
                         std::to_string(p.n - 1));
    const std::string why = why_not(c.algorithm, c.op);
    if (!why.empty())
        throw InputError(why);
    if (p.torus && c.protocol)
        throw InputError("a TPU's collectives have no NCCL protocol (" +
                         std::string(hardware::to_string(*c.protocol)) + "): leave it out");
    if ((c.algorithm == Algorithm::nvls || simple_only(c.algorithm)) && c.protocol &&
        *c.protocol != Protocol::simple)
        throw InputError("--algo " + std::string(to_string(c.algorithm)) +
                         " runs the Simple protocol only, not " +
                         std::string(hardware::to_string(*c.protocol)));
    if (p.tuning.simple_protocol_only && c.protocol && *c.protocol != Protocol::simple)
        throw InputError("this hardware runs the Simple protocol only (collectives.protocols: "
                         "simple, NCCL_PROTO=Simple), not " +
                         std::string(hardware::to_string(*c.protocol)));
}

Choice Communicator::choose(const Collective& c) const {
    if (c.algorithm != Algorithm::automatic || c.protocol)
        return choose_now(c);
    const Memo::Key key{static_cast<int>(c.op), static_cast<int>(c.dtype), c.root, c.bytes};
    {
        std::shared_lock<std::shared_mutex> lock(memo_->mutex);
        const auto it = memo_->choices.find(key);
        if (it != memo_->choices.end())
            return it->second;
    }
    // Computed outside the lock (a pure function of the key): two threads that miss at once
    // both compute it, and store the same value.
    const Choice choice = choose_now(c);
    std::unique_lock<std::shared_mutex> lock(memo_->mutex);
    if (memo_->choices.size() < kMemoEntries)
        memo_->choices.emplace(key, choice);
    return choice;
}

Choice Communicator::choose_now(const Collective& c) const {
    if (plan_->torus) { // XLA's rings are the one algorithm on a torus
        if (!runs(Algorithm::torus, c.op))
            throw InputError(why_not(Algorithm::torus, c.op));
        return Choice{Algorithm::torus, Protocol::simple,
                      predict(c, Algorithm::torus, Protocol::simple)};
    }
    if (const auto rccl = rccl_choice(*plan_, c))
        return Choice{rccl->algorithm, rccl->protocol, predict(c, rccl->algorithm, rccl->protocol)};
    static constexpr Algorithm kOrder[] = {Algorithm::ring,           Algorithm::tree,
                                           Algorithm::nvls,           Algorithm::nvls_tree,
                                           Algorithm::collnet_direct, Algorithm::collnet_chain,
                                           Algorithm::hierarchical,   Algorithm::direct};
    auto offered = [&](Algorithm a) {
        // The algorithms NCCL offers per op (tuning.cc, ncclTopoTuneModel): ring and tree;
        // NVLS in a node, NVLSTree across NVLS nodes (hierarchical is not NCCL's: it is never
        // chosen); CollNet where the fabric reduces (why_not checks each).
        switch (c.op) {
        case Op::all_reduce:
            return a != Algorithm::hierarchical && a != Algorithm::direct;
        case Op::all_gather:
        case Op::reduce_scatter:
            return a == Algorithm::ring || a == Algorithm::nvls;
        case Op::broadcast:
        case Op::reduce:
            return a == Algorithm::ring;
        default:
            return a == Algorithm::direct;
        }
    };
    // The double binary tree across many nodes costs a route per hop to plan (16 hops per rank
    // on 8 NIC ports): the automatic choice weighs it last, and plans it only where a lower
    // bound on its time (Plan::tree_sample) does not already exceed the best of the others.
    // A tree so skipped is slower than the choice, so the choice is the same.
    const Plan& plan = *plan_;
    const bool defer_tree = c.algorithm == Algorithm::automatic && plan.regular &&
                            plan.node_ranks.size() >= kTreeBoundNodes;
    struct Candidate {
        Algorithm a;
        Protocol p;
        bool deferred;
        std::optional<sim::Time> t;
    };
    // At most every concrete algorithm with every protocol: a fixed array, no allocation.
    std::array<Candidate, std::size(kOrder) * hardware::kAllProtocols.size()> candidates{};
    size_t candidate_count = 0;
    std::optional<sim::Time> fastest;
    for (Algorithm a : kOrder) {
        if (c.algorithm != Algorithm::automatic ? a != c.algorithm
                                                : (!offered(a) || !runs(a, c.op)))
            continue;
        for (Protocol p : hardware::kAllProtocols) {
            if (c.protocol ? p != *c.protocol
                           : ((a == Algorithm::nvls || simple_only(a) ||
                               plan.tuning.simple_protocol_only) &&
                              p != Protocol::simple))
                continue;
            Candidate k{a, p, defer_tree && a == Algorithm::tree, std::nullopt};
            if (!k.deferred) {
                k.t = predict(c, a, p);
                fastest = fastest ? std::min(*fastest, *k.t) : *k.t;
            }
            candidates[candidate_count++] = k;
        }
    }
    const auto chosen = std::span(candidates).first(candidate_count);
    for (Candidate& k : chosen) {
        if (k.deferred && !(fastest && tree_lower_bound(plan, c, k.p) > *fastest))
            k.t = predict(c, k.a, k.p);
    }
    Choice best;
    bool found = false;
    for (const Candidate& k : chosen) {
        if (k.t && (!found || *k.t < best.time)) {
            best = Choice{k.a, k.p, *k.t};
            found = true;
        }
    }
    if (!found)
        throw InputError("no algorithm runs " + std::string(to_string(c.op)) + " here");
    return best;
}

sim::Time Communicator::predict(const Collective& c, Algorithm a, Protocol pr) const {
    const Plan& p = *plan_;
    if (a == Algorithm::torus)
        return sim::Time::from_seconds(
            detail::torus_seconds(*p.torus, c.op, static_cast<double>(c.bytes), p.n));
    if (a != Algorithm::automatic && p.node_ranks.size() > 1)
        return predict_across_nodes(c, a, pr);
    const double S = static_cast<double>(c.bytes);
    const double n = p.n;
    const auto& proto = p.tuning.protocol(pr);
    double t = seconds(p.tuning.launch_latency) + seconds(proto.base_latency);
    auto alpha = [&](LinkLevel l) { return seconds(p.step_latency(l, pr)); };

    switch (a) {
    case Algorithm::automatic:
        return choose(c).time;
    case Algorithm::ring:
        switch (c.op) {
        case Op::all_reduce:
            t += 2 * (n - 1) * (alpha(p.ring_level) + p.ring_cost[idx(pr)] * S / n);
            break;
        case Op::all_gather:
        case Op::reduce_scatter:
            t += (n - 1) * (alpha(p.ring_level) + p.ring_cost[idx(pr)] * S / n);
            break;
        // Several channels in one node (an xGMI mesh's rings): a chain per channel, as across
        // nodes (Plan::chains); one channel: the chain over cycle 0.
        case Op::broadcast:
            t += p.channels > 1 ? chains_seconds(p, pr, c.root, false, S)
                                : chain_seconds(p, pr, p.cycle_position[size_t(c.root)], S);
            break;
        case Op::reduce:
            t += p.channels > 1
                     ? chains_seconds(p, pr, c.root, true, S)
                     : chain_seconds(p, pr, (p.cycle_position[size_t(c.root)] + 1) % p.n, S);
            break;
        default:
            break;
        }
        break;
    case Algorithm::tree:
        t += tree_seconds(p, pr, S);
        break;
    case Algorithm::direct: {
        const DirectCost d = direct_cost(p, c, pr);
        t += alpha(d.level) + d.body;
        break;
    }
    case Algorithm::nvls: {
        const double cost = c.op == Op::all_reduce   ? p.nvls_all_reduce
                            : c.op == Op::all_gather ? p.nvls_all_gather
                                                     : p.nvls_reduce_scatter;
        t += seconds(p.tuning.nvls.latency) + cost * S;
        break;
    }
    case Algorithm::hierarchical: {
        const detail::HierData& h = p.hier();
        const double g = h.per_node;
        const double nodes = static_cast<double>(p.node_ranks.size());
        const bool nvls = h.nvls_rs > 0;
        if (g > 1) {
            if (nvls)
                t += 2 * seconds(p.tuning.nvls.latency) + (h.nvls_rs + h.nvls_ag) * S;
            else
                t += 2 * (g - 1) * (alpha(p.intra_level) + h.intra_ring[idx(pr)] * S);
        }
        t += 2 * (nodes - 1) * (alpha(LinkLevel::network) + h.inter_ring[idx(pr)] * S);
        break;
    }
    case Algorithm::nvls_tree:
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain:
        break; // across nodes only (why_not): predict_across_nodes
    case Algorithm::torus:
        break; // above
    }

    // The kernel's own memory and arithmetic work, in series with the transfers.
    const double hbm = p.topo.spec().node.gpu.hbm_bandwidth;
    double local = 0;
    for (bool is_root : {false, true}) {
        if (is_root ? !has_root(c.op) : (has_root(c.op) && p.n == 1))
            continue;
        local = std::max({local, detail::kernel_memory_bytes(p, c.op, S, is_root) / hbm,
                          detail::kernel_compute_seconds(p, c.op, a, S, c.dtype, is_root)});
    }
    return sim::Time::from_seconds(t + local);
}

sim::Time Communicator::predict_across_nodes(const Collective& c, Algorithm a, Protocol pr) const {
    // Across nodes the latencies are NCCL's tuning.cc model (ncclTopoTuneModel), the bandwidth
    // terms the slowest link of the algorithm's transfers; the kernel's own memory and
    // arithmetic work overlaps the network transfers (the NIC moves the data by DMA while the
    // SMs copy and reduce), so it counts only where it is the slower.
    const Plan& p = *plan_;
    const double S = static_cast<double>(c.bytes);
    const double n = p.n;
    const int N = static_cast<int>(p.node_ranks.size());
    const auto& proto = p.tuning.protocol(pr);
    double lat = seconds(p.tuning.launch_latency) + seconds(proto.base_latency);
    double body = 0;
    auto alpha = [&](LinkLevel l) { return seconds(p.step_latency(l, pr)); };
    const double net = alpha(LinkLevel::network);
    // The network steps of the algorithms NCCL's tuning times hold the plugin's latency too.
    const double tuned_net = seconds(p.tuned_network_latency(pr));

    switch (a) {
    case Algorithm::automatic:
        return choose(c).time;
    case Algorithm::ring:
        switch (c.op) {
        case Op::all_reduce:
        case Op::all_gather:
        case Op::reduce_scatter: {
            // tuning.cc: nsteps steps, of which 2(N-1) (all_reduce) or N-1 cross the network;
            // the others cost the intra-node step latency, at least the network proxy's post
            // overhead (getNetOverhead: 1 us on x86, 3x for Simple).
            const bool ar = c.op == Op::all_reduce;
            const double steps = (ar ? 2 : 1) * (n - 1);
            const double inter = (ar ? 2 : 1) * (N - 1);
            const double overhead = pr == Protocol::simple ? 3e-6 : 1e-6;
            lat += (steps - inter) * std::max(alpha(p.intra_level), overhead) + inter * tuned_net;
            body = steps * p.ring_cost[idx(pr)] * S / n;
            break;
        }
        case Op::broadcast: // over every channel, as NCCL runs it (Plan::chains)
            body = p.channels > 1 ? chains_seconds(p, pr, c.root, false, S)
                                  : chain_seconds(p, pr, p.cycle_position[size_t(c.root)], S);
            break;
        case Op::reduce:
            body = p.channels > 1
                       ? chains_seconds(p, pr, c.root, true, S)
                       : chain_seconds(p, pr, (p.cycle_position[size_t(c.root)] + 1) % p.n, S);
            break;
        default:
            break;
        }
        break;
    case Algorithm::tree: {
        // Latency: a step latency per pipeline stage up and down, NCCL's Tree row of hardware
        // latencies (tuning.cc, ncclTopoTuneModel: 2 ((ppn - 1) intraLat + log2i(nNodes)
        // interLat); the shape's depth gives the same on 2 nodes, and one network step more
        // per level where a chain hangs from its parent node's second rank). Bandwidth: the
        // pipelined trees' slowest link, and NCCL's cap per channel (busBw <= nChannels x
        // perChMaxTreeBw, for LL128 perChMaxTreeLL128Bw too; a tree's algbw is busBw / 2).
        lat += tree_latency(p, pr);
        body = tree_transfer_seconds(p, pr, S);
        const double capped = detail::tree_cap_seconds(p, pr, S);
        if (capped > 0)
            body = std::max(body, capped);
        break;
    }
    case Algorithm::direct: {
        // Every transfer but a send/recv crosses the network here.
        const DirectCost d = direct_cost(p, c, pr);
        body = d.body;
        lat += c.op == Op::send_recv ? alpha(d.level) : net;
        break;
    }
    case Algorithm::nvls:
        break; // one node only (why_not)
    case Algorithm::hierarchical: {
        const detail::HierData& h = p.hier();
        const double g = h.per_node;
        if (g > 1) {
            if (h.nvls_rs > 0) {
                lat += 2 * seconds(p.tuning.nvls.latency);
                body += (h.nvls_rs + h.nvls_ag) * S;
            } else {
                lat += 2 * (g - 1) * alpha(p.intra_level);
                body += 2 * (g - 1) * h.intra_ring[idx(pr)] * S;
            }
        }
        lat += 2 * (N - 1) * net;
        body += 2 * (N - 1) * h.inter_ring[idx(pr)] * S;
        break;
    }
    case Algorithm::nvls_tree: {
        // tuning.cc: NVLSTree latency = NVLS latency + 2 log2(nNodes) network latencies;
        // bandwidth: the NVLS phases in the nodes and the trees across them run pipelined, the
        // slower sets the pace, and NCCL caps each channel (perChMaxNVLSTreeBws, in bus
        // bandwidth: algbw = busbw n / (2(n-1))); one channel per head.
        lat = seconds(p.tuning.launch_latency) + seconds(p.tuning.nvls.latency) +
              2 * log2i(N) * tuned_net;
        const double cost = detail::nvls_tree_seconds_per_byte(p);
        body = cost * S + detail::nvls_tree_fill_bytes(p, S) * cost;
        break;
    }
    case Algorithm::collnet_direct: {
        // tuning.cc: 2 (min(1, ppn-1) intra latency + (ppn-1) x 0.4 us of arity serialisation)
        // + one network latency (the switch reduces: no log(nNodes) term).
        const detail::MultiNodeData& m = p.multi();
        const double g = m.per_node;
        lat = seconds(p.tuning.launch_latency) +
              2 * (std::min(1.0, g - 1) * alpha(p.intra_level) + (g - 1) * 0.4e-6) + tuned_net;
        body = std::max(m.collnet_direct_intra, m.collnet_inter) * S;
        break;
    }
    case Algorithm::collnet_chain: {
        // tuning.cc: 2 (ppn-1) intra latencies + one network latency.
        const detail::MultiNodeData& m = p.multi();
        const double g = m.per_node;
        lat = seconds(p.tuning.launch_latency) + 2 * (g - 1) * alpha(p.intra_level) + tuned_net;
        body = std::max(m.collnet_chain_intra, m.collnet_inter) * S;
        break;
    }
    case Algorithm::torus:
        break; // predict() answers it
    }

    return sim::Time::from_seconds(lat + std::max(body, local_seconds_across(p, c, a)));
}

} // namespace clustersim::strategies::collectives
