#pragma once
/// \file
/// Internal to strategies/collectives: how RCCL chooses an algorithm and a protocol on AMD
/// Instinct MI300-class nodes (8 GPUs on a full xGMI mesh), as RCCL 2.21.5 (ROCm 6.3) runs it:
/// its own cost model (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, with the
/// tables of `tuning_model_5`, the model RCCL's rome models 79 and 81 select for these nodes)
/// and the cheapest by that model (src/enqueue.cc, topoGetAlgoInfo). RCCL's model is a
/// chooser, not a predictor: its per-size correction factors (0.1 where it prefers another
/// algorithm) and its 320 us per network step of a ring/Simple make it pick tree/Simple for
/// 4-256 MiB all_reduce on 2 nodes. What the chosen algorithm then costs is clustersim's own
/// closed form (communicator.cpp); only the choice comes from here.
///
/// Source: ROCm/rccl at 99b8561b (branch release-staging/rocm-rel-6.3, RCCL 2.21.5 for ROCm
/// 6.3; tuning.cc is the same at develop 0cbce2a7, 2024-10-24). RCCL 2.22.3 (ROCm 6.4.x) is
/// not in any snapshot here; its CHANGELOG lists no tuning change before 2.25.1, whose
/// "Suboptimal algorithmic switching point for AllReduce on MI300x" (ROCm/rccl PR #1627,
/// 2025-04-03: "suboptimal tree usage for larger messages (above 64 MB)") changed these tables.
/// Yet the one 2.22.3 run at hand (data/reference/rccl) had switched to the ring by 256 MiB,
/// where these tables keep the tree (tree/Simple ~14.5 ms against ring/Simple ~16.4 ms by
/// RCCL's model): 2.22.3 chooses differently at 128-256 MiB on 2 nodes in a way its changelog
/// does not name, and those sizes are predicted with the tree.

#include "hardware/collective_tuning.h"
#include "strategies/collectives/collective.h"

#include <optional>

namespace clustersim::strategies::collectives::detail {

/// What RCCL's model reads of a communicator and a call.
struct RcclCall {
    Op op = Op::all_reduce;
    double bytes = 0;           ///< RCCL's nBytes: per-rank buffer, or the whole one for AG/RS
    int ranks = 0;              ///< nRanks
    int nodes = 0;              ///< nNodes
    double total_bw_gbps = 0;   ///< nChannels x bwIntra of RCCL's graphs (system->totalBw)
    double net_overhead_us = 0; ///< getNetOverhead: 1 on Intel hosts, 2 on AMD ones
    /// NCCL_PROTO=Simple: the other protocols disabled (tuning.cc's protoEnable zeroes their
    /// bandwidth, so the pick is among Simple's).
    bool simple_only = false;
};

/// One (algorithm, protocol) in RCCL's model: its latency (us) and algorithm bandwidth (GB/s,
/// before the per-size correction); bandwidth 0 = RCCL does not offer it.
struct RcclCost {
    double latency_us = 0;
    double bandwidth_gbps = 0;
};

/// ncclTopoTuneModel's latency and bandwidth of `a` (ring or tree) with `p` for `call`.
RcclCost rccl_cost(const RcclCall& call, Algorithm a, Protocol p);
/// ncclTopoGetAlgoTime: latency + bytes / (bandwidth x the per-size correction), in us;
/// nullopt where RCCL does not offer (a, p).
std::optional<double> rccl_model_time_us(const RcclCall& call, Algorithm a, Protocol p);

struct RcclChoice {
    Algorithm algorithm = Algorithm::ring;
    Protocol protocol = Protocol::simple;
};
/// topoGetAlgoInfo: the cheapest (algorithm, protocol) by RCCL's model, among ring and tree
/// for all_reduce and ring for all_gather and reduce_scatter, or only `forced` (NCCL_ALGO);
/// nullopt for other ops (RCCL runs them by other rules: point-to-point, or chains whose
/// latency term depends on its graphs' sameChannels, not modelled).
std::optional<RcclChoice> rccl_choose(const RcclCall& call,
                                      Algorithm forced = Algorithm::automatic);

/// RCCL's per-GPU graph bandwidth on a full xGMI mesh of `gpus_per_node` GPUs: every xGMI link
/// at GFX94X_XGMI_WIDTH (src/graph/topo.h:33, 48 GB/s), summed over the GPU's links
/// (src/graph/search.cc:31 getTotalBw), which the rome models split over their channels
/// (src/graph/rome_models.cc:1014: bwIntra = totalBw / nChannels, ring and tree alike).
double rccl_total_bw_gbps(int gpus_per_node);

} // namespace clustersim::strategies::collectives::detail
