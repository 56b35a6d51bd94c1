#pragma once
/// \file
/// What a collective is: the operation, its size as nccl-tests counts it, the data type, the
/// root, and the algorithm/protocol asked for; plus nccl-tests' reporting conventions (count,
/// redop, bus bandwidth factor, size rounding).
///
/// Sizes follow nccl-tests: `bytes` is the per-rank buffer for all_reduce, broadcast, reduce
/// and send_recv; the whole (output) buffer of n blocks for all_gather and gather; the whole
/// (input) buffer for reduce_scatter and scatter; the per-rank buffer of n blocks for
/// all_to_all. busbw = algbw x factor, factor 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
/// reduce_scatter, all_to_all, gather and scatter, 1 for broadcast, reduce and send_recv.

#include "hardware/collective_tuning.h"
#include "hardware/dtype.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clustersim::strategies::collectives {

using hardware::Protocol;

/// The one collective-op vocabulary of clustersim: the simulator's collectives, calibrate's
/// measurements and importers, and the reports all use it. The names (to_string) are a file
/// format: measurement files, CSV tables and the CLI's --op spell ops this way.
enum class CollectiveOp : std::uint8_t {
    broadcast,
    reduce,
    all_reduce,
    all_gather,
    reduce_scatter,
    all_to_all,
    gather,
    scatter,
    send_recv,
};
/// The short name used throughout strategies/collectives.
using Op = CollectiveOp;
inline constexpr std::array<Op, 9> kAllOps{Op::broadcast,  Op::reduce,         Op::all_reduce,
                                           Op::all_gather, Op::reduce_scatter, Op::all_to_all,
                                           Op::gather,     Op::scatter,        Op::send_recv};

enum class Algorithm : std::uint8_t {
    automatic,    ///< the cheapest predicted among those NCCL offers for the op
    ring,         ///< rings over NVLink and rail-aligned NICs; pipelined chain for rooted ops
    tree,         ///< NCCL's double binary tree, pipelined (all_reduce)
    direct,       ///< every pair at once (all_to_all, gather, scatter, send_recv, small groups)
    nvls,         ///< NVLink SHARP: the NVSwitch reduces and multicasts (one node)
    hierarchical, ///< intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather
    /// NCCL's NVLSTree (all_reduce across NVLS nodes): NVLink SHARP reduce-scatter in each
    /// node, a double binary tree across nodes per rail, NVLS all-gather; pipelined together.
    nvls_tree,
    /// NCCL's CollNet direct (all_reduce): each GPU reduce-scatters to the node's NIC heads
    /// over NVLink, the fabric's switches reduce across nodes (SHARP), heads all-gather back.
    collnet_direct,
    /// NCCL's CollNet chain (all_reduce): a chain through the node's GPUs to a NIC per
    /// channel, the fabric's switches reduce across nodes, the result runs back down the chain.
    collnet_chain,
    /// XLA on a TPU slice (strategies/collectives/torus.h): per mesh axis bidirectional rings
    /// on the torus, one axis after another; across slices a ring over the DCN. The only
    /// algorithm on TPU hardware, as NCCL's are the only ones on GPUs.
    torus,
};
inline constexpr std::array<Algorithm, 9> kConcreteAlgorithms{
    Algorithm::ring,           Algorithm::tree,          Algorithm::direct,
    Algorithm::nvls,           Algorithm::hierarchical,  Algorithm::nvls_tree,
    Algorithm::collnet_direct, Algorithm::collnet_chain, Algorithm::torus};
/// Algorithms NCCL runs with the Simple protocol only.
constexpr bool simple_only(Algorithm a) {
    return a == Algorithm::nvls_tree || a == Algorithm::collnet_direct ||
           a == Algorithm::collnet_chain;
}
/// Algorithms whose closed form pipelines phases that flow fidelity plays one after another
/// (the flow network has no switch that reduces, and its phases run in series): flow fidelity
/// is slower for them by the overlap the closed form counts. NVLSTree runs pipelined in both.
constexpr bool phased_in_flow(Algorithm a) {
    return a == Algorithm::collnet_direct || a == Algorithm::collnet_chain;
}

/// analytic: closed forms on the path bottlenecks; flow: the decomposition played out on the
/// flow network, where concurrent traffic contends.
enum class Fidelity : std::uint8_t { analytic, flow };

/// Flow fidelity refuses, before it runs, a collective or a step whose simulation would take at
/// least this many seconds of CPU (flow_estimate.h); `--max-seconds` of collective and run.
inline constexpr double kDefaultFlowMaxSeconds = 600;

std::string_view to_string(Op op);
std::string_view to_string(Algorithm a);
std::string_view to_string(Fidelity f);
/// "all_reduce"; also without separators or case ("allreduce", "all-reduce", "AllReduce") and
/// nccl-tests' names ("alltoall", "sendrecv"); nullopt when unknown.
std::optional<Op> parse_op(std::string_view s);
/// "auto", "ring", "tree", "direct", "nvls", "hierarchical", "nvls_tree", "collnet_direct",
/// "collnet_chain", "torus" (also NCCL's spellings: "nvlstree", "collnetdirect", "collnetchain").
std::optional<Algorithm> parse_algorithm(std::string_view s);

/// What `--fidelity` names, in every command and in the Python module: the fidelity and, in flow,
/// whether identical flows are left to one representative (`flow`: symmetry, exact) or every
/// flow is simulated (`flow-full`).
struct FidelityChoice {
    Fidelity fidelity = Fidelity::analytic;
    bool symmetry = true;
};
/// The names `--fidelity` takes, in the order help and errors list them.
inline constexpr std::array<std::string_view, 3> kFidelityNames{"analytic", "flow", "flow-full"};
/// One of kFidelityNames; nullopt when unknown.
std::optional<FidelityChoice> parse_fidelity(std::string_view s);
/// The name of a choice (kFidelityNames).
std::string_view to_string(FidelityChoice c);
/// Every op name, comma separated (for error messages).
std::string op_names();

/// One collective call.
struct Collective {
    Op op = Op::all_reduce;
    std::int64_t bytes = 0; ///< nccl-tests size (see the file comment)
    hardware::Dtype dtype = hardware::Dtype::fp32;
    int root = 0; ///< rank (index in the communicator) of broadcast, reduce, gather, scatter
    Algorithm algorithm = Algorithm::automatic;
    std::optional<Protocol> protocol; ///< nullopt: the cheapest
};

/// True for ops that reduce (nccl-tests prints redop "sum", else "none").
bool reduces(Op op);
/// True for broadcast, reduce, gather and scatter.
bool has_root(Op op);
/// True when `bytes` is split into one block per rank (all_gather, reduce_scatter, all_to_all,
/// gather, scatter).
bool splits_per_rank(Op op);
/// nccl-tests' bus bandwidth factor (busbw = algbw x factor, see the file comment): the one
/// home of this rule; the simulator's output, calibrate's importers and measurements and the
/// validation reports all use it.
double bus_factor(Op op, int ranks);
/// The size nccl-tests runs for a requested one: whole elements, and a multiple of `ranks`
/// elements where the buffer is split per rank (it rounds down, as nccl-tests does).
std::int64_t round_bytes(Op op, std::int64_t bytes, hardware::Dtype dtype, int ranks);
/// nccl-tests' "count" column: elements per rank block where the buffer is split, else all.
std::int64_t nccl_count(Op op, std::int64_t bytes, hardware::Dtype dtype, int ranks);
/// Bytes of user buffer a rank reads or writes (the root's buffer for gather and scatter is the
/// whole size, the others hold one block).
double rank_buffer_bytes(Op op, std::int64_t bytes, int ranks, bool is_root);

} // namespace clustersim::strategies::collectives
