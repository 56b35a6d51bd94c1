#pragma once
/// \file
/// Decompositions: a collective as phases of steps, each step a set of transfers between
/// ranks (or a node's NVSwitch) that run together.
///
/// A phase has two views of the same schedule:
/// - `transfers(step)`: element ranges moved (copied or accumulated) in that step, the values
///   view that run_values() applies to real numbers;
/// - `rounds()` / `round_flows()`: consecutive steps grouped for the flow network, with the
///   bytes per endpoint pair as the closed form counts them (continuous, not rounded to
///   elements). Grouping only merges steps of the same shape (all ring steps; the steady part
///   of a pipeline), so an uncontended run takes exactly as long; it bounds the number of flows
///   (a 1,024-GPU ring has 2,046 steps). Tests hold `round_flows` to the sum of `transfers`.
/// Within a step every read happens before any write; steps run in order.

#include "sim/time.h"
#include "strategies/collectives/collective.h"
#include "strategies/collectives/plan.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace clustersim::strategies::collectives {

class Communicator;

/// Elements moved in one step. Endpoints are ranks, or detail::switch_of(k) for the NVSwitch of
/// the communicator's k-th node (whose buffer NVLS reduces into).
struct Transfer {
    int src = 0;
    int dst = 0;
    std::int64_t src_offset = 0;
    std::int64_t dst_offset = 0;
    std::int64_t count = 0;
    bool accumulate = false; ///< dst += src (a reduction) instead of dst = src
};

struct StepRange {
    int begin = 0;
    int end = 0; ///< exclusive
};

class Phase {
public:
    virtual ~Phase() = default;
    virtual int steps() const = 0;
    virtual void transfers(int step, std::vector<Transfer>& out) const = 0;
    /// Latency paid before the step's data moves (0 for steps of a full pipeline).
    virtual sim::Time step_latency(int step) const = 0;
    /// The steps grouped into at most about `max_rounds` rounds (fill and drain steps of a
    /// pipeline stay alone).
    virtual std::vector<StepRange> rounds(int max_rounds) const = 0;
    /// Payload bytes per endpoint pair over the steps of `range` (pairs may repeat).
    virtual void round_flows(StepRange range, std::vector<detail::PFlow>& out) const = 0;
    /// The same transfers, identical ones (same endpoints and bytes) possibly as one PFlow
    /// standing for `counts[i]` of them (empty: one each), in an order of the phase's choosing:
    /// symmetry's flow simulation starts each as one flow (sim::FlowSpec::count), without
    /// making the n^2 of an all-to-all. The counts sit beside the list, not in PFlow, which
    /// stays 16 bytes (rounds of rings and trees hold hundreds of thousands). By default
    /// round_flows'.
    virtual void round_groups(StepRange range, std::vector<detail::PFlow>& out,
                              std::vector<std::uint32_t>& counts) const {
        counts.clear();
        round_flows(range, out);
    }
    /// The flows round_groups gives for `range` (what a flow simulation of the round holds),
    /// counted without listing them where the phase knows it (the default lists them).
    virtual std::size_t round_size(StepRange range) const {
        std::vector<detail::PFlow> out;
        std::vector<std::uint32_t> counts;
        round_groups(range, out, counts);
        return out.size();
    }
    /// The least time the transfers of `range` take, whatever the links allow (NCCL's cap per
    /// channel: what its CTAs copy and reduce); 0: none. The flow network caps each transfer's
    /// rate so that it takes at least this long.
    virtual double min_seconds(StepRange) const { return 0; }
    /// The least time of the whole phase beyond its steps' latencies (a cap per channel on a
    /// pipeline whose rounds differ: the closed form's max(transfers, cap)); 0: none. The next
    /// phase starts no earlier.
    virtual double least_seconds() const { return 0; }
};

struct Decomposition {
    Algorithm algorithm = Algorithm::ring;
    Protocol protocol = Protocol::simple;
    /// Launch and protocol base latency, before the first step.
    sim::Time start_latency = sim::Time::zero();
    std::vector<std::unique_ptr<Phase>> phases;
    /// Elements of each rank's (and each switch's) buffer in values mode.
    std::int64_t buffer_elements = 0;
    /// HBM bytes and reduction arithmetic per rank over the whole collective, spread evenly
    /// over the rounds and run after each round's transfers.
    std::vector<double> memory_bytes;
    std::vector<sim::Time> compute;
};

struct DecomposeOptions {
    /// Payload of a pipeline chunk; 0 takes the protocol's (tests use tiny chunks to exercise
    /// pipelining with a few values).
    std::int64_t chunk_bytes = 0;
};

/// The schedule of `c` with a resolved algorithm and protocol (which must apply; the
/// communicator's validate() checks that).
Decomposition decompose(const Communicator& comm, const Collective& c, Algorithm algorithm,
                        Protocol protocol, const DecomposeOptions& options = {});

/// Elements of a rank's buffer in values mode (all_to_all and send_recv hold a send and a
/// receive region).
std::int64_t buffer_elements(Op op, std::int64_t elements);

} // namespace clustersim::strategies::collectives
