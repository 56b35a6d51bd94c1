// RCCL's choice of algorithm and protocol on MI300-class nodes (rccl_tuning.h). Every number
// below is RCCL's, at ROCm/rccl 99b8561b (RCCL 2.21.5, ROCm 6.3), src/graph/tuning.cc unless
// said otherwise; the line of each is given. Only ring and tree run here (NVLS, CollNet: no
// NVSwitch, no SHARP); LL128 is off on gfx942 (tuning.cc:516: enabled by default on gfx90a
// only; src/enqueue.cc:1603 skips it outside RCCL_TOPO_XGMI_ALL).
#include "strategies/collectives/rccl_tuning.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace clustersim::strategies::collectives::detail {

namespace {

constexpr std::size_t kAlgoTree = 0;
constexpr std::size_t kAlgoRing = 1;

/// baseLat, us, [tree, ring][LL, LL128, Simple] (tuning.cc:57-58).
constexpr double kBaseLat[2][3] = {{12.0, 12.0, 17.0}, {12.0, 12.0, 17.0}};
/// tuning_model_5 hwLat, us: the NVLINK row (xGMI is RCCL's NVLink level: typeIntra LINK_NVL)
/// and the NET row, [tree, ring][LL, LL128, Simple] (tuning.cc:227, 231).
constexpr double kIntraLat[2][3] = {{0.9, 0.0, 2.3}, {0.8, 0.0, 2.1}};
constexpr double kNetLat[2][3] = {{10.5, 0.0, 25.0}, {9.5, 0.0, 320.0}};
/// tuning_model_5 bwRatio, [2 nodes or fewer, more][tree, ring][LL, LL128, Simple]
/// (tuning.cc:236, 238).
constexpr double kBwRatio[2][2][3] = {{{0.06, 0.00, 0.11}, {0.08, 0.00, 1.00}},
                                      {{0.06, 0.00, 0.59}, {0.08, 0.00, 1.00}}};
/// tuning_model_5 treeCorrectionFactor and ringCorrectionFactor, [LL, LL128, Simple][log2 of
/// bytes / 64, the last entry for all larger] (tuning.cc:242-244, 248-250). LL128's rows are
/// zero (off).
using Factors = std::array<double, 27>;
constexpr Factors kTreeLL{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 1.0, 0.9,
                          1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
constexpr Factors kTreeSimple{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
                              0.1, 0.7, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8};
constexpr Factors kRingLL{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 0.2, 1.0,
                          0.4, 0.4, 0.1, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
constexpr Factors kRingSimple{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
                              0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.8, 1.0, 1.0, 1.0};

std::size_t algo_index(Algorithm a) {
    return a == Algorithm::tree ? kAlgoTree : kAlgoRing;
}

int log2i(std::int64_t v) {
    int l = -1; // as RCCL's log2i: the floor of log2, and -1 for 0
    while (v > 0) {
        v >>= 1;
        ++l;
    }
    return l;
}

/// ncclTopoGetAlgoTime's correction (tuning.cc:648-657): tree always, ring across nodes only.
double correction(const RcclCall& call, Algorithm a, Protocol p) {
    if (a == Algorithm::ring && call.nodes <= 1)
        return 1.0;
    const int log_size = log2i(static_cast<std::int64_t>(call.bytes) >> 6);
    const std::size_t i = log_size < 0    ? 0
                          : log_size > 26 ? 26
                                          : static_cast<std::size_t>(log_size);
    const bool ll = p == Protocol::ll;
    if (a == Algorithm::tree)
        return ll ? kTreeLL[i] : kTreeSimple[i];
    return ll ? kRingLL[i] : kRingSimple[i];
}

} // namespace

RcclCost rccl_cost(const RcclCall& call, Algorithm a, Protocol p) {
    const std::size_t ai = algo_index(a);
    const std::size_t pi = static_cast<std::size_t>(p);
    const bool all_reduce = call.op == Op::all_reduce;
    // LL128 off on gfx942; tree runs all_reduce only (tuning.cc:359-362); tree/Simple is
    // skipped on gfx94 when the communicator is one node (tuning.cc:365).
    if (p == Protocol::ll128 || (a == Algorithm::tree && !all_reduce) ||
        (a == Algorithm::tree && p == Protocol::simple && call.nodes == 1))
        return {};
    const int n = call.ranks;
    const int nodes = call.nodes;
    const int nsteps = all_reduce ? 2 * (n - 1) : n - 1; // tuning.cc:351-353
    const int inter_steps = all_reduce ? (nodes > 1 ? 2 * nodes : 0) : nodes - 1; // :354-356
    // busBw = nChannels x bwIntra (2 nodes or fewer; bwInter, equal on rome graphs, beyond)
    // x bwRatio (tuning.cc:368-380); algorithm bandwidth = busBw x nRanks/nsteps for rings,
    // x 1/2 for trees (tuning.cc:419-421).
    const double bus = call.total_bw_gbps * kBwRatio[nodes <= 2 ? 0 : 1][ai][pi];
    const double ratio = a == Algorithm::ring ? static_cast<double>(n) / nsteps : 0.5;
    RcclCost c;
    c.bandwidth_gbps = bus * ratio;
    double intra = kIntraLat[ai][pi];
    const double inter = kNetLat[ai][pi];
    c.latency_us = kBaseLat[ai][pi];
    if (a == Algorithm::ring) {
        // Inter-node rings launch every step through the network proxy (tuning.cc:445-452).
        if (nodes > 1) {
            const double overhead =
                call.net_overhead_us * (p == Protocol::simple ? 3.0 : 1.0); // tuning.cc:449
            intra = intra > overhead ? intra : overhead;
        }
        c.latency_us += (nsteps - inter_steps) * intra + inter_steps * inter;
    } else {
        c.latency_us += 2 * ((n / nodes - 1) * intra + log2i(nodes) * inter); // tuning.cc:456
    }
    return c;
}

std::optional<double> rccl_model_time_us(const RcclCall& call, Algorithm a, Protocol p) {
    const RcclCost c = rccl_cost(call, a, p);
    const double bw = c.bandwidth_gbps * correction(call, a, p);
    if (!(bw > 0))
        return std::nullopt;
    return c.latency_us + call.bytes / (1000 * bw); // tuning.cc:669
}

std::optional<RcclChoice> rccl_choose(const RcclCall& call, Algorithm forced) {
    if (call.op != Op::all_reduce && call.op != Op::all_gather && call.op != Op::reduce_scatter)
        return std::nullopt;
    if (forced != Algorithm::automatic && forced != Algorithm::ring && forced != Algorithm::tree)
        return std::nullopt;
    std::optional<RcclChoice> best;
    double best_us = 0;
    // enqueue.cc topoGetAlgoInfo: algorithms in RCCL's order (tree, then ring), protocols LL,
    // LL128, Simple; a strictly smaller time replaces the best (src/enqueue.cc:1607).
    for (Algorithm a : {Algorithm::tree, Algorithm::ring}) {
        if (forced != Algorithm::automatic && a != forced)
            continue;
        for (Protocol p : hardware::kAllProtocols) {
            if (call.simple_only && p != Protocol::simple)
                continue;
            const auto t = rccl_model_time_us(call, a, p);
            if (t && (!best || *t < best_us)) {
                best = RcclChoice{a, p};
                best_us = *t;
            }
        }
    }
    return best;
}

double rccl_total_bw_gbps(int gpus_per_node) {
    constexpr double kXgmiWidthGbps = 48.0; // GFX94X_XGMI_WIDTH, src/graph/topo.h:33
    return (gpus_per_node - 1) * kXgmiWidthGbps;
}

} // namespace clustersim::strategies::collectives::detail
