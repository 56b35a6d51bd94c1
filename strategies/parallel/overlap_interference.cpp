#include "strategies/parallel/overlap_interference.h"

#include "strategies/collectives/plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace clustersim::strategies::parallel {

namespace {

/// NCCL's per-channel speeds of the ring search inside a node, GB/s (src/graph/search.cc:
/// speedArrayIntra, and sm90SpeedArrayIntra for compute capability 9.0).
constexpr std::array<double, 13> kSpeedsIntra{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                              9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
constexpr std::array<double, 11> kSpeedsIntraSm90{60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                                  15.0, 12.0, 11.0, 6.0,  3.0};
/// The same across nodes (src/graph/search.cc: speedArrayInter, sm90SpeedArrayInter).
constexpr std::array<double, 19> kSpeedsInter{48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0,
                                              12.0, 10.0, 9.0,  7.0,  6.0,  5.0,  4.0,
                                              3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array<double, 17> kSpeedsInterSm90{48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                                  22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                                  3.0,  2.4,  1.2,  0.24, 0.12};
/// A ring graph's most channels (init.cc: ringGraph.maxChannels = MAXCHANNELS / 2) and the
/// most a communicator keeps after ncclTopoPostset doubles them (MAXCHANNELS).
constexpr int kMaxChannels = 32;
/// NCCL's bandwidth of one NVLink in its topology, GB/s (src/graph/topo.h: SM80_NVLINK_BW
/// 20.0, SM90_NVLINK_BW 20.6; the same 20.0 for Volta), against the 25 GB/s per direction of an
/// NVLink 2, 3 or 4 link in the datasheets.
constexpr double kNvlinkDatasheetGBps = 25.0;
constexpr double kNcclNvlinkGBps = 20.0;
constexpr double kNcclNvlinkGBpsSm90 = 20.6;
/// Bytes of a buffer per thread before NCCL adds a channel (enqueue.cc, getAlgoInfo:
/// NCCL_SIMPLE_THREAD_THRESHOLD) and threads of a Simple channel (NCCL_SIMPLE_MAX_NTHREADS).
constexpr double kThreadThresholdBytes = 64;
constexpr double kSimpleThreads = 512;
/// A guard against a rate of zero where shares add up to 1 (never reached by real loads: 32
/// CTAs on the smallest GPU simulated, 80 SMs, are 0.4).
constexpr double kMaxShare = 0.95;

/// ncclTopoDupChannels: a graph found at `speed` GB/s per channel with `n` channels doubled
/// (at speeds of 25 GB/s and more; on Hopper only at 50 and more or with at most 4 channels).
bool duplicated(double speed, int n, bool hopper) {
    return speed >= 25.0 && !(hopper && speed < 50.0 && n > 4);
}

template <std::size_t N>
int ring_search(const std::array<double, N>& speeds, double max_bw, bool hopper) {
    std::size_t i = 0;
    while (i + 1 < N && speeds[i] > max_bw)
        ++i;
    double speed = speeds[i];
    int n = std::clamp(static_cast<int>(std::floor(max_bw / speed)), 1, kMaxChannels / 2);
    // ncclTopoDupChannels.
    if (duplicated(speed, n, hopper)) {
        const int dup = std::min(2 * n, kMaxChannels / 2);
        speed /= std::ceil(static_cast<double>(dup) / n);
        n = dup;
    }
    // Pass 2: a faster speed with as many channels, where the links hold it.
    std::size_t j = 0;
    while (j + 1 < N && speeds[j] > speed)
        ++j;
    while (j > 0 && n * speeds[j - 1] <= max_bw)
        speed = speeds[--j];
    // ncclTopoPostset: the rings doubled once more.
    return std::min(kMaxChannels, 2 * n);
}

} // namespace

int nvswitch_ring_channels(const hardware::NodeSpec& node) {
    // Hopper's tables where the GPU has FP8 tensor cores (compute capability 9.0; the one
    // NVSwitch GPU with them).
    const bool hopper = node.gpu.supports(hardware::Dtype::fp8);
    const double links_gbps = node.nvlink.bandwidth / 1e9;
    const double max_bw =
        links_gbps / kNvlinkDatasheetGBps * (hopper ? kNcclNvlinkGBpsSm90 : kNcclNvlinkGBps);
    return hopper ? ring_search(kSpeedsIntraSm90, max_bw, true)
                  : ring_search(kSpeedsIntra, max_bw, false);
}

int nccl_ctas(const collectives::Communicator& comm, const collectives::Collective& c,
              collectives::Algorithm algorithm) {
    using collectives::Algorithm;
    // XLA's collectives on a TPU slice are moved by the chip's DMA engines, not by kernels on
    // the TensorCores (collectives/torus.h): they take no compute, only HBM bandwidth.
    if (algorithm == Algorithm::torus)
        return 0;
    const auto& plan = comm.plan();
    const auto& node = comm.topology().spec().node;
    int channels = 0;
    if ((algorithm == Algorithm::nvls || algorithm == Algorithm::nvls_tree) &&
        plan.tuning.nvls_tree_pipeline.channels > 0) {
        channels = plan.tuning.nvls_tree_pipeline.channels;
    } else if (comm.node_count() > 1) {
        // The model's rings: one channel per NIC port a node's ranks reach. NCCL's search finds
        // them at the fastest speed of its table not above a port's bandwidth, duplicates them
        // where ncclTopoDupChannels does, and ncclTopoPostset doubles them.
        const bool hopper = node.gpu.supports(hardware::Dtype::fp8);
        const double port = node.nic_port_bandwidth() / 1e9;
        double speed = 0;
        if (hopper) {
            speed = kSpeedsInterSm90.back();
            for (double v : kSpeedsInterSm90)
                if (v <= port) {
                    speed = v;
                    break;
                }
        } else {
            speed = kSpeedsInter.back();
            for (double v : kSpeedsInter)
                if (v <= port) {
                    speed = v;
                    break;
                }
        }
        int n = plan.channels;
        if (duplicated(speed, n, hopper))
            n = std::min(2 * n, kMaxChannels / 2);
        channels = std::min(kMaxChannels, 2 * n);
    } else if (node.fabric == hardware::IntraNodeFabric::nvswitch) {
        channels = nvswitch_ring_channels(node);
    } else {
        channels = 2 * plan.channels;
    }
    // NCCL's nBytes: the per-rank block where the buffer is split per rank.
    const int n = std::max(1, comm.size());
    const double bytes = collectives::splits_per_rank(c.op) ? static_cast<double>(c.bytes) / n
                                                            : static_cast<double>(c.bytes);
    while (channels > 1 && bytes < channels * kSimpleThreads * kThreadThresholdBytes)
        --channels;
    return std::max(1, channels);
}

CommLoad comm_load(const hardware::GpuSpec& gpu, int ctas, double hbm_bytes, double seconds) {
    CommLoad l;
    if (gpu.sm_count > 0)
        l.sm_share = std::min(1.0, static_cast<double>(std::max(0, ctas)) / gpu.sm_count);
    if (gpu.hbm_bandwidth > 0 && seconds > 0)
        l.hbm_share = std::min(1.0, hbm_bytes / seconds / gpu.hbm_bandwidth);
    return l;
}

CommLoad nccl_load(const collectives::Communicator& comm, const collectives::Collective& c,
                   double seconds) {
    if (comm.size() < 2 || c.bytes <= 0 || !(seconds > 0))
        return {};
    return nccl_load(comm, c, comm.choose(c).algorithm, seconds);
}

CommLoad nccl_load(const collectives::Communicator& comm, const collectives::Collective& c,
                   collectives::Algorithm algorithm, double seconds) {
    if (comm.size() < 2 || c.bytes <= 0 || !(seconds > 0))
        return {};
    return kernel_load(comm, c, nccl_ctas(comm, c, algorithm), seconds);
}

CommLoad kernel_load(const collectives::Communicator& comm, const collectives::Collective& c,
                     int sms, double seconds) {
    if (comm.size() < 2 || c.bytes <= 0 || !(seconds > 0))
        return {};
    const double each_way =
        collectives::bus_factor(c.op, comm.size()) * static_cast<double>(c.bytes);
    return comm_load(comm.topology().spec().node.gpu, sms, 2 * each_way, seconds);
}

double overlap_slowdown(double comm, double compute, double share) {
    if (!(share > 0) || !(comm > 0) || !(compute > 0))
        return 0;
    const double s = std::min(share, kMaxShare);
    return std::min(comm * s, compute * s / (1 - s));
}

double stretched_end(double start, double work, models::OpKind kind,
                     std::span<const CommSpan> spans) {
    double t = start;
    double left = work;
    // Each round ends at a span's begin or end, so 2 x spans + 1 rounds reach the end of the
    // last span, after which the rate is 1 and the loop returns.
    const std::size_t rounds = 2 * spans.size() + 1;
    for (std::size_t round = 0; left > 0 && round < rounds; ++round) {
        double share = 0;
        double next = std::numeric_limits<double>::infinity();
        for (const CommSpan& s : spans) {
            if (s.end <= t)
                continue;
            if (s.begin <= t) {
                share += s.load.of(kind);
                next = std::min(next, s.end);
            } else {
                next = std::min(next, s.begin);
            }
        }
        const double rate = 1 - std::min(share, kMaxShare);
        if (!(next < std::numeric_limits<double>::infinity()) || left <= rate * (next - t))
            return t + left / rate;
        left -= rate * (next - t);
        t = next;
    }
    return t + left;
}

} // namespace clustersim::strategies::parallel
