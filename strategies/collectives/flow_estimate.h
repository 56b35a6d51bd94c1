#pragma once
/// \file
/// What a collective's flow simulation will hold and do, counted from its schedule before any
/// flow is made, so that a run that cannot finish within this process's memory is refused up
/// front (an input error naming the estimate, the limit and the ways out) rather than after
/// minutes, by bad_alloc.
///
/// Symmetry decides while the rounds run how many flows it simulates, but every round's flows
/// are listed first, one entry each (round_groups: an all-to-all's identical transfers as one):
/// what a round holds is its list, its batch, the proof's tables and the memo of the last
/// round, whatever the fold then leaves out. So the memory of the simulation follows the
/// largest round's list, and its work the lists of all rounds, both known from the schedule
/// (Phase::round_size) without listing a flow. Counting the unfolded transfers instead would
/// refuse what the fold finishes in seconds; counting the representatives would need the proof.

#include "strategies/collectives/communicator.h"
#include "strategies/collectives/flow_runner.h"

#include <string>

namespace clustersim::strategies::collectives {

struct FlowFootprint {
    Algorithm algorithm = Algorithm::ring; ///< the algorithm it runs (comm.choose)
    double rounds = 0;                     ///< rounds of flows started
    double flows = 0;      ///< flows listed over all rounds (transfers and memory work)
    double peak_round = 0; ///< the most one round lists
};

/// The footprint of `c` on `comm` in flow fidelity, as FlowCollectives would run it with
/// `options` (validates `c`, choosing its algorithm as start() does).
FlowFootprint flow_footprint(const Communicator& comm, const Collective& c,
                             const FlowOptions& options = {});

/// Heap bytes of flow simulations whose rounds in flight together hold `round_flows` flows at
/// most, on a network of `resources` (the per-resource tables of the flow network and of the
/// proof). Fitted to peak RSS on this repository's commands: see flow_estimate.cpp.
double flow_bytes(double round_flows, double resources);

/// Throws InputError, naming `what`, the estimate and the tightest memory limit
/// (hardware/memory_limit.h), when `bytes` would not fit in what this process may still take.
void refuse_if_flows_too_large(double bytes, double round_flows, const std::string& what);

/// CPU seconds the flow simulation of `f` takes at least: the flows it lists, at the least
/// cost per listed flow measured for its algorithm (scripts/measure-flow-cost.sh). A lower
/// bound, so that what it refuses would not have finished within the bound; the time of a run
/// it admits may be many times it.
double flow_seconds(const FlowFootprint& f);

/// `seconds` as `--max-seconds` takes it (>= 0; 0: no bound), or InputError naming the flag.
double checked_max_seconds(double seconds);

/// Throws InputError, naming `what`, the estimate and `--max-seconds`, when `seconds` (of
/// simulations listing `flows` flows over `rounds` rounds) exceeds `max_seconds` (0: no bound).
void refuse_if_flows_too_slow(double seconds, double flows, double rounds, double max_seconds,
                              const std::string& what);

} // namespace clustersim::strategies::collectives
