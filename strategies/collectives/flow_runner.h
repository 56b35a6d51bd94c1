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
///
/// Symmetry (FlowOptions::symmetry): many flows of a round are copies of one another (a ring's
/// hops between nodes, a tree's hops from the children of every parent, every rank's memory
/// work). A proof (flow_fold.h) finds the flows whose max-min rate can be told without
/// simulating them (at their cap, or an equal share of a resource every flow of which gets that
/// share, on what the flows proved before leave) and that keep it to their end; proved flows of
/// the same size, rate and latency finish at the same instant, so one representative of each
/// such class is simulated, under the cap of its rate, and the others finish with it. Proved
/// flows that share a resource with an unproved one stay on the network (under their caps) so
/// that it sees their load. The proof counts only the round's flows, so it holds a resource only
/// where that belongs to its communicator alone (`claim`: the edges of the communicator's nodes,
/// NICs included, and the links between the spines and the leaves those NICs hang from, which
/// carry the traffic of those nodes alone (resource_claims.h); every link of the fabric under
/// FlowOptions::exclusive, one collective alone on its network), and only while no other
/// collective runs on the same communicator; when one
/// starts, or a communicator claims resources late, the proved flows get their own caps back and
/// the flows left out of rounds in flight are started there and then as copies of their
/// representatives (FlowNetwork::set_max_rate, start_copy), so the result stays the one of the
/// full simulation.
///
/// A round that repeats the one before (same phase, flows, latency and least time: a ring's
/// rounds, a pipeline's full rounds) starts the same batch of flows again rather than building
/// it anew, and its proof is the last one.

#include "hardware/topology.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/flow_fold.h"
#include "strategies/collectives/resource_claims.h"
#include "strategies/collectives/schedule.h"

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace clustersim::strategies::collectives {

struct FlowOptions {
    /// Steps of the same shape are grouped into at most this many rounds per phase (pipeline
    /// fill and drain steps are kept apart). Uncontended times do not depend on it; it sets how
    /// finely concurrent traffic couples to the collective.
    int max_rounds = 128;
    /// Simulate one representative of each class of identical flows (see above).
    bool symmetry = false;
    /// The caller's promise that every flow on the network is of collectives on one
    /// communicator (simulate(): one collective alone on its cluster), so that symmetry may
    /// treat every resource as that communicator's own, the fabric's switches included.
    bool exclusive = false;
    /// simulate() refuses a collective whose flow simulation would take at least this many
    /// seconds of CPU (flow_estimate.h: flow_seconds); 0: no bound (`--max-seconds 0`).
    double max_seconds = kDefaultFlowMaxSeconds;
};

struct FlowStats {
    std::uint64_t flows = 0;  ///< flows started (link transfers and HBM work)
    double payload_bytes = 0; ///< bytes the collective moved between endpoints
    double wire_bytes = 0;    ///< the same with protocol overhead (what links carry)
    double hbm_bytes = 0;     ///< kernel memory traffic
    /// Flows not simulated: they finished with an identical representative (symmetry), or a
    /// flow on the network stood for them (sim::FlowSpec::count); not counted in `flows`.
    std::uint64_t represented = 0;
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

    /// With symmetry: declares that `comm` will run collectives on this network, so that its
    /// resources are known to be shared with other communicators or not. Call it for every
    /// communicator before the first start() (start() claims a communicator it meets first,
    /// at a cost: the rounds in flight are then simulated in full).
    void claim(const Communicator& comm);

    /// Collectives started and not yet done.
    std::size_t running() const { return runs_.size(); }
    const FlowStats& stats() const { return stats_; }
    /// GPUs an endpoint of at least one simulated flow, ascending.
    std::vector<int> simulated_gpus() const;
    /// GPUs whose flows were all left to representatives (symmetry), ascending.
    std::vector<int> represented_gpus() const;

private:
    struct Run;
    /// A flow to start: a network transfer on a route, or a rank's memory work (on its HBM edge,
    /// or on no resource: arithmetic only).
    struct Pending {
        const std::span<const sim::ResourceId>* route = nullptr; ///< null: `edge` (or none)
        sim::ResourceId edge = detail::kNoEdge;
        std::uint32_t count = 1; ///< identical flows it stands for (Phase::round_groups)
        double bytes = 0;
        sim::Time latency;
        double max_rate = 0;
        int gpu_a = -1, gpu_b = -1; ///< GPUs at its ends (-1: a switch, or none)
        std::vector<sim::ResourceId> path() const;
    };
    void next_round(Run* run);
    void local_work(Run* run);
    /// Starts the batch built for the round (transfers, with the memory work if `overlap`).
    void start_round(Run* run, sim::Time latency, bool overlap);
    /// The round's share of the kernel's memory work on every rank, after `delay`; returns its
    /// bytes.
    double add_local_flows(Run* run, sim::Time delay);
    /// Starts batch_ (flows that run together); `then_local`: when all are done, the round's
    /// memory work follows, else the next round.
    void start_batch(Run* run, bool then_local);
    /// Starts flow `i` of the run's batch: under the cap of its proved `rate` (NaN: not proved,
    /// its own cap), as the representative of the identical flows left out if
    /// `stands_for_others`.
    void start_flow(Run* run, std::uint32_t i, double rate, bool stands_for_others);
    /// Symmetry: the proof of the run's batch (flow_fold.h), with the flows to start.
    struct FoldMemo;
    const FoldMemo& fold(Run* run);
    void on_flow_done(Run* run);
    /// Starts, as copies of their representatives, the flows left out of `run`'s round.
    void materialize(Run* run);
    void advance(Run* run);
    void finish(Run* run);
    void mark_gpu(int gpu, bool simulated);

    sim::Engine& engine_;
    sim::FlowNetwork& net_;
    const hardware::Topology& topology_;
    FlowOptions options_;
    FlowStats stats_;
    std::vector<std::unique_ptr<Run>> runs_;
    /// Collectives running per communicator (symmetry asks at every round whether another runs
    /// on the same one: a scan of runs_ made that quadratic in the collectives in flight).
    std::unordered_map<const detail::Plan*, int> running_per_plan_;
    std::vector<detail::PFlow> scratch_;
    std::vector<std::uint32_t> counts_; ///< of scratch_'s flows (Phase::round_groups)
    std::vector<Pending> batch_;
    // Symmetry: the claimed plans (a plan's place here is its claimant number in claims_), and
    // which of them can cross each resource.
    std::vector<const detail::Plan*> claimed_;
    detail::ResourceClaims claims_;
    /// The lumps of the batch being started, by what makes flows identical (size, rate,
    /// latency): a batch of 500,000 flows has a few hundred.
    struct LumpKey {
        double bytes, rate;
        sim::Time latency;
        bool operator==(const LumpKey&) const = default;
    };
    struct LumpHash {
        std::size_t operator()(const LumpKey& k) const {
            // The values' bits (+ 0.0 makes -0.0 hash as 0.0, which it equals), mixed.
            std::uint64_t h = std::bit_cast<std::uint64_t>(k.bytes + 0.0);
            h = (h ^ (h >> 29)) * 0x9e3779b97f4a7c15ULL +
                std::bit_cast<std::uint64_t>(k.rate + 0.0);
            h = (h ^ (h >> 29)) * 0x9e3779b97f4a7c15ULL +
                static_cast<std::uint64_t>(k.latency.picoseconds());
            return static_cast<std::size_t>(h ^ (h >> 32));
        }
    };
    std::unordered_map<LumpKey, std::uint32_t, LumpHash> lump_of_;
    detail::FairShareProof proof_; ///< fold's scratch
    std::vector<char> gpu_simulated_, gpu_represented_;
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
