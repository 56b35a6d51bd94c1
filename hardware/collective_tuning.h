#pragma once
/// \file
/// How fast a node's collective kernels run: the `collectives:` section of a hardware file.
///
/// NCCL models every (algorithm, protocol) pair as `latency + bytes / bandwidth`
/// (src/graph/tuning.cc). Here the same idea is a small value type:
/// - `launch_latency`: the fixed cost of one collective call (kernel launch, host/device
///   synchronisation); calibrated per machine.
/// - per protocol (LL, LL128, Simple): a base latency, and per link level (NVLink, PCIe,
///   network) the latency of one pipeline step and the fraction of the link's bandwidth that
///   the protocol delivers as payload; plus the payload of one pipeline chunk.
/// - NVLS (NVLink SHARP in-switch reduction): a latency and a bandwidth efficiency.
/// - `memory_passes`: bytes of HBM traffic per byte of the user buffer that the collective
///   kernel moves in series with its transfers (reading the input, writing the output).
/// - `pxn` (default true): point-to-point sends across nodes relay over NVLink to the GPU on
///   the peer's rail (NCCL's PXN); `false` is NCCL_PXN_DISABLE=1.
/// Every value in a preset carries a comment saying where it comes from; calibration replaces
/// them. Plain data: the loader (collective_tuning_loader.cpp) validates it once.

#include "sim/time.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace clustersim::hardware {

/// NCCL's three wire protocols.
enum class Protocol : std::uint8_t {
    ll,     ///< 8-byte lines, 4 bytes of flag per 4 of data: lowest latency, half the bandwidth
    ll128,  ///< 128-byte lines with 8 bytes of flag: 120/128 of the bandwidth, low latency
    simple, ///< bulk copies with fences: the most bandwidth, the highest latency
};
inline constexpr std::size_t kProtocolCount = 3;
inline constexpr std::array<Protocol, kProtocolCount> kAllProtocols{Protocol::ll, Protocol::ll128,
                                                                    Protocol::simple};

/// The class of link a transfer's route is limited by.
enum class LinkLevel : std::uint8_t {
    nvlink,  ///< inside a node over NVLink/NVSwitch
    pcie,    ///< inside a node over PCIe switches (and the host)
    network, ///< between nodes, through NICs and the fabric
};
inline constexpr std::size_t kLinkLevelCount = 3;

constexpr std::string_view to_string(Protocol p) {
    switch (p) {
    case Protocol::ll:
        return "LL";
    case Protocol::ll128:
        return "LL128";
    case Protocol::simple:
        return "Simple";
    }
    return "?";
}

/// "ll", "ll128", "simple" (any case); nullopt when unknown.
std::optional<Protocol> parse_protocol(std::string_view s);

constexpr std::string_view to_string(LinkLevel l) {
    switch (l) {
    case LinkLevel::nvlink:
        return "nvlink";
    case LinkLevel::pcie:
        return "pcie";
    case LinkLevel::network:
        return "network";
    }
    return "?";
}

/// One protocol on one link level.
struct LevelTuning {
    sim::Time step_latency = sim::Time::zero(); ///< per pipeline step crossing this level
    double efficiency = 0; ///< payload bandwidth / link bandwidth, in (0, 1]; 0 = not given
};

struct ProtocolTuning {
    sim::Time base_latency = sim::Time::zero(); ///< per call, on top of the launch latency
    std::int64_t chunk_bytes = 0; ///< payload of one pipeline chunk (chain and tree algorithms)
    std::array<LevelTuning, kLinkLevelCount> levels{};

    const LevelTuning& level(LinkLevel l) const { return levels[static_cast<std::size_t>(l)]; }
};

struct NvlsTuning {
    sim::Time latency = sim::Time::zero(); ///< per call, on top of Simple's latencies
    double efficiency = 0; ///< payload bandwidth / NVLink bandwidth of a GPU's switch ports
};

/// The most one channel of an algorithm carries, in NCCL's bus-bandwidth terms (tuning.cc's
/// perChMax*Bws: what one channel's CTA copies and reduces per second), by node count.
/// 0 = no cap.
struct ChannelCap {
    double two_nodes = 0;  ///< bytes/s per channel, communicators on 2 nodes
    double more_nodes = 0; ///< bytes/s per channel, on 3 or more nodes
    double at(int nodes) const { return nodes <= 2 ? two_nodes : more_nodes; }
};

/// How NCCL pipelines NVLSTree (src/transport/nvls.cc, ncclNvlsTuning): the CTAs (channels)
/// it runs, each looping over one chunk per head per step, and the chunk before the size
/// rules of src/enqueue.cc (calcCollChunking) shrink it. 0 = no pipeline fill modelled.
struct NvlsTreePipeline {
    int channels = 0;                     ///< NVLS_NCHANNELS_SM90: 16 on Hopper
    std::int64_t chunk_bytes = 0;         ///< NCCL_NVLS_CHUNKSIZE default, 128 KiB
    std::int64_t chunk_bytes_4_nodes = 0; ///< treeMaxChunkSize from 4 nodes on: 64 KiB
    std::int64_t chunk(int nodes) const { return nodes >= 4 ? chunk_bytes_4_nodes : chunk_bytes; }
};

/// NCCL's double binary tree across nodes (src/graph/tuning.cc, ncclTopoTuneModel): what one
/// channel carries (a channel per NIC port; each runs both trees of nodes) and the Tree row of
/// NCCL's hardware latencies, which differ from the ring's the protocol sections give.
struct TreeTuning {
    ChannelCap channel;       ///< Simple (perChMaxTreeBws), bus bandwidth per channel
    ChannelCap ll128_channel; ///< LL128 (perChMaxTreeLL128Bws)
    /// Per protocol and link level; zero = the protocol section's step latency.
    std::array<std::array<sim::Time, kLinkLevelCount>, kProtocolCount> step_latency{};
};

/// Whose rule picks the algorithm and protocol a collective leaves open (`--algo auto`).
enum class CollectiveLibrary : std::uint8_t {
    /// The cheapest predicted: what NCCL's cost model aims at, its tables following its kernels.
    nccl,
    /// RCCL's own cost model and per-size correction tables (tuning_model_5, on MI300-class
    /// 8-GPU xGMI nodes), whose pick can be far from the cheapest
    /// (strategies/collectives/rccl_tuning.h); the pick then costs clustersim's closed form.
    rccl,
};

struct CollectiveTuning {
    sim::Time launch_latency = sim::Time::zero();
    CollectiveLibrary library = CollectiveLibrary::nccl; ///< `collectives.library`
    std::array<ProtocolTuning, kProtocolCount> protocols{};
    NvlsTuning nvls;
    TreeTuning tree;                     ///< the double binary tree across nodes
    ChannelCap nvls_tree_channel;        ///< NVLSTree (tuning.cc perChMaxNVLSTreeBws)
    NvlsTreePipeline nvls_tree_pipeline; ///< NVLSTree's chunks and channels (nvls.cc)
    double memory_passes = 0; ///< HBM bytes per user-buffer byte, in series with transfers
    /// PXN (NCCL 2.12 on, NCCL_PXN_DISABLE=0 by default): a point-to-point send to another
    /// node leaves through the NIC of the local GPU with the peer's device index, reached over
    /// NVLink (src/graph/search.cc ncclTopoGetNetDev, NCCL_P2P_PXN_LEVEL 2), so it stays on
    /// the peer's rail. Only on NVSwitch nodes (paths.cc: the relay must be NVLink-connected).
    /// `collectives.pxn: false` is NCCL_PXN_DISABLE=1 (or NCCL before 2.12).
    bool pxn = true;
    /// Only the Simple protocol runs (NCCL_PROTO=Simple), in every communicator of the
    /// process, NVLink-only ones included. AWS's NCCL plugin sets it when the EFA endpoint
    /// cannot deliver 128-byte pieces in order, which LL and LL128 need for their flags
    /// (aws/aws-ofi-nccl src/platform-aws.cpp, PlatformAWS::config_endpoint: "force the simple
    /// protocol as the LL/LL128 protocols can lead to data corruption without data delivery
    /// ordering").
    bool simple_protocol_only = false;

    const ProtocolTuning& protocol(Protocol p) const {
        return protocols[static_cast<std::size_t>(p)];
    }
    /// True when a hardware file gave the section (every protocol has an NVLink or PCIe
    /// efficiency); collectives refuse hardware without it.
    bool present() const;
};

} // namespace clustersim::hardware
