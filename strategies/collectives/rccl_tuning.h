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
/// not in any snapshot here. Its CHANGELOG
/// (ROCm/rocm-systems@0005e8e83d9e0fdc68a43b127152c74604fc52f5: projects/rccl/CHANGELOG.md) names
/// two changes on MI300 before the retuning of 2.26.6 ("Suboptimal algorithmic switching point for
/// AllReduce on MI300x", ROCm/rccl PR #1627, 2025-04-03: "suboptimal tree usage for larger messages
/// (above 64 MB)"): for ROCm 6.4.0 "the rail-optimized tree algorithm for the MI300 series" (NIC
/// traffic only between GPUs of the same index across nodes; RCCL_DISABLE_RAIL_TREES=1 restores the
/// old trees; the rome models' treeRail chains), and for ROCm 6.4.2 "support for the LL128 protocol
/// on gfx942". The one 2.22.3 run at hand (data/reference/rccl, from hisohara/ai-scripts@0780bb3c:
/// training/01_rccl-smoketest/README.md, AAC10, whose output prints RCCL 2.22.3-HEAD:7d8d67c and
/// ROCm 6.4.2) had switched to the ring by 256 MiB, where these tables
/// keep the tree (tree/Simple ~14.5 ms against ring/Simple ~16.4 ms by RCCL's model), while its 128
/// MiB took 1,449 us, 627 us more than 64 MiB (822 us) where 256 MiB took 264 us more (1,713 us): a
/// slower algorithm or protocol ran at 128 MiB. Which one, and on which trees, is not known without
/// that version's tables; those sizes are predicted with 2.21.5's choice.

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
