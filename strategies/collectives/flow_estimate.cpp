#include "strategies/collectives/flow_estimate.h"

#include "base/error.h"
#include "hardware/memory_limit.h"
#include "strategies/collectives/schedule.h"

#include <fmt/format.h>

#include <algorithm>

namespace clustersim::strategies::collectives {

namespace {

// Peak heap per flow listed in the largest round (its list, batch, proof tables and memo) and
// per resource of the network (the flow network's and the proof's tables by resource). Fitted
// to peak RSS less the graph's (graph_size.h) on this repository's commands: 1 GiB all-reduce
// (tree) on 16,384 and 32,768 DGX A100 GPUs: 520 bytes per round flow; NVLSTree on 100,000 DGX
// H100 GPUs: 340-450; all-to-all on 4,096 DGX A100 GPUs: 300; GPT-3 175B steps (tp 8, pp 8) on
// 65,536-262,144 GPUs, where the per-resource tables dominate: about 55 per resource. Rounded up,
// so that what is refused would not have fitted. scripts/measure-flow-cost.sh reprints the
// per-round-flow figure (its b_per_pf column, with the plan and the process counted in: the
// most a round flow costs): the tree on 16,384-32,768 DGX A100 GPUs 539-563, the all-to-all on
// 1,024-4,096 DGX A100 and AWS p4d GPUs 316-411, NVLSTree on 16,384 DGX H100 GPUs 591.
constexpr double kBytesPerRoundFlow = 550;
constexpr double kBytesPerResource = 60;

// CPU seconds per flow listed over all rounds (its listing, and what of the fold's proof and
// the flow network's filling it causes), the least that scripts/measure-flow-cost.sh measured
// per algorithm for a 1 GiB collective (Release build, one core of a 2-core EPYC VM; the whole
// process over the flows listed, so an overestimate where few flows are listed): rings and
// chains (all-reduce, all-gather, reduce-scatter, broadcast; 1,024-65,536 DGX A100 GPUs)
// 0.030-0.051 us, the double binary tree (1,024-32,768) 0.028-0.070 us, NVLSTree (4,096-16,384
// DGX H100) 1.3-1.8 us, the direct all-to-all (1,024-4,096, DGX A100 and AWS p4d) 1.1-2.2 us.
// Halved, for a machine twice as fast: the bound is meant to hold, not to be close.
double seconds_per_listed_flow(Algorithm a) {
    switch (a) {
    case Algorithm::nvls_tree:
        return 0.65e-6;
    case Algorithm::direct:
        return 0.5e-6;
    default: // rings, chains, trees, and what was not measured: the least of them all
        return 0.014e-6;
    }
}

} // namespace

FlowFootprint flow_footprint(const Communicator& comm, const Collective& c,
                             const FlowOptions& options) {
    comm.validate(c);
    const Choice choice = comm.choose(c);
    const Decomposition d = decompose(comm, c, choice.algorithm, choice.protocol);
    // Each round lists its transfers and, beside them or after them, every rank's memory work.
    const auto ranks = static_cast<double>(d.memory_bytes.size());
    FlowFootprint f;
    f.algorithm = choice.algorithm;
    for (const auto& phase : d.phases) {
        for (const StepRange r : phase->rounds(options.max_rounds)) {
            const double n = static_cast<double>(phase->round_size(r)) + ranks;
            f.rounds += 1;
            f.flows += n;
            f.peak_round = std::max(f.peak_round, n);
        }
    }
    if (d.phases.empty()) { // one GPU: the kernel's own memory work
        f.rounds = 1;
        f.flows = f.peak_round = ranks;
    }
    return f;
}

double flow_bytes(double round_flows, double resources) {
    return round_flows * kBytesPerRoundFlow + resources * kBytesPerResource;
}

void refuse_if_flows_too_large(double bytes, double round_flows, const std::string& what) {
    const hardware::MemoryLimit limit = hardware::memory_limit();
    if (limit.bytes <= 0)
        return;
    const double left = hardware::memory_left(limit);
    if (bytes + (limit.bytes - left) <= 0.8 * limit.bytes)
        return;
    throw InputError(fmt::format(
        "{} in flow fidelity needs about {:.1f} GiB ({:.3g} flows in one round, listed before "
        "symmetry folds them); {} leaves {:.1f} GiB to this process: use --fidelity analytic, "
        "or simulate fewer GPUs (data-parallel replicas repeat: a smaller dp predicts the same "
        "step)",
        what, bytes / (1 << 30), round_flows, limit.which, left / (1 << 30)));
}

double checked_max_seconds(double seconds) {
    if (!(seconds >= 0))
        throw InputError(fmt::format(
            "--max-seconds: expected a number of seconds >= 0 (0: no bound), got {}", seconds));
    return seconds;
}

double flow_seconds(const FlowFootprint& f) {
    return f.flows * seconds_per_listed_flow(f.algorithm);
}

void refuse_if_flows_too_slow(double seconds, double flows, double rounds, double max_seconds,
                              const std::string& what) {
    if (max_seconds <= 0 || seconds <= max_seconds)
        return;
    throw InputError(fmt::format(
        "{} in flow fidelity would take at least {:.3g} s of CPU ({:.3g} flows listed over {:.3g} "
        "rounds), more than --max-seconds {:g}: use --fidelity analytic, simulate fewer GPUs, or "
        "raise --max-seconds of collective or run (0: no bound)",
        what, seconds, flows, rounds, max_seconds));
}

} // namespace clustersim::strategies::collectives
