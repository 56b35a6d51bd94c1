#pragma once
/// \file
/// Flow fidelity: collectives played out on a shared FlowNetwork, step by step, so that
/// concurrent collectives (and any other flows on the network) contend for links.
///
/// Each round (one step, or a group of identical steps) waits for its latency, runs its
/// transfers as flows on the routes between the GPUs (payload / protocol efficiency on the
/// wire), then each rank's share of the kernel's HBM work as a flow on its HBM edge (capped so it
/// takes at least its share of the reduction arithmetic). A round starts when the previous one
/// is done on every rank of the communicator: a ring moves at the pace of its slowest link, as
/// NCCL's bounded step buffers make it do.

#include "hardware/topology.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/schedule.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace clustersim::strategies::collectives {

struct FlowOptions {
    /// Steps of the same shape are grouped into at most this many rounds per phase (pipeline
    /// fill and drain steps are kept apart). Uncontended times do not depend on it; it sets how
    /// finely concurrent traffic couples to the collective.
    int max_rounds = 128;
};

struct FlowStats {
    std::uint64_t flows = 0;  ///< flows started (link transfers and HBM work)
    double payload_bytes = 0; ///< bytes the collective moved between endpoints
    double wire_bytes = 0;    ///< the same with protocol overhead (what links carry)
    double hbm_bytes = 0;     ///< kernel memory traffic
};

class FlowCollectives {
public:
    /// `net` must have been set up with hardware::bind_topology(net, topology). All three must
    /// outlive this object.
    FlowCollectives(sim::Engine& engine, sim::FlowNetwork& net, const hardware::Topology& topology,
                    FlowOptions options = {});
    ~FlowCollectives();
    FlowCollectives(const FlowCollectives&) = delete;
    FlowCollectives& operator=(const FlowCollectives&) = delete;

    /// Starts `c` on `comm` (a communicator of the same topology) at the engine's current time.
    /// `on_done` is called, at the simulated time the last rank has its result, from inside
    /// the engine's run loop. Validates `c` (InputError) and returns the algorithm and protocol
    /// it runs with, and the closed-form prediction for comparison.
    Choice start(const Communicator& comm, const Collective& c, std::function<void()> on_done);

    /// Collectives started and not yet done.
    std::size_t running() const { return runs_.size(); }
    const FlowStats& stats() const { return stats_; }

private:
    struct Run;
    void next_round(Run* run);
    void local_work(Run* run);
    /// Starts the round's share of the kernel's memory work on every rank, after `delay`.
    void start_local_flows(Run* run, sim::Time delay);
    void advance(Run* run);
    void finish(Run* run);

    sim::Engine& engine_;
    sim::FlowNetwork& net_;
    const hardware::Topology& topology_;
    FlowOptions options_;
    FlowStats stats_;
    std::vector<std::unique_ptr<Run>> runs_;
    std::vector<detail::PFlow> scratch_;
};

/// One collective alone on its cluster, in either fidelity.
struct Outcome {
    Choice choice;            ///< algorithm, protocol and the closed-form time
    sim::Time time;           ///< the prediction in the fidelity asked for
    FlowStats stats;          ///< flow fidelity only
    std::uint64_t events = 0; ///< engine events (flow fidelity only)
};

/// Validates `c`, then predicts it (analytic) or simulates it on a fresh flow network bound to
/// the communicator's topology (flow).
Outcome simulate(const Communicator& comm, const Collective& c, Fidelity fidelity,
                 FlowOptions options = {});

} // namespace clustersim::strategies::collectives
