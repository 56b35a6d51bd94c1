#pragma once
/// \file
/// One point-to-point transfer between two GPUs, played out on the flow network: the smallest
/// end-to-end use of the kernel (engine, flows) and the hardware graph (routes).

#include "hardware/topology.h"
#include "sim/time.h"

#include <cstdint>

namespace clustersim::strategies {

struct TransferResult {
    hardware::Route route;
    sim::Time time;            ///< from start to the last byte's arrival
    double achieved_bandwidth; ///< bytes / time
    std::uint64_t events;      ///< events the engine processed
};

/// Simulates `bytes` from GPU `from` to GPU `to` (HBM to HBM) alone on the cluster.
TransferResult simulate_transfer(const hardware::Topology& topology, int from, int to,
                                 std::int64_t bytes);

} // namespace clustersim::strategies
