#include "strategies/collectives/flow_estimate.h"

#include "base/error.h"
#include "hardware/memory_limit.h"
#include "strategies/collectives/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include <unistd.h>

namespace clustersim::strategies::collectives {

namespace {

// Peak heap per flow listed in the largest round (its list, batch, proof tables and memo) and
// per resource of the network (the flow network's and the proof's tables by resource). Fitted
// to peak RSS less the graph's (graph_size.h) on this repository's commands: 1 GiB all-reduce
// (tree) on 16,384 and 32,768 DGX A100 GPUs: 520 bytes per round flow; NVLSTree on 100,000 DGX
// H100 GPUs: 340-450; all-to-all on 4,096 DGX A100 GPUs: 300; GPT-3 175B steps (tp 8, pp 8) on
// 65,536-262,144 GPUs, where the per-resource tables dominate: about 55 per resource. Rounded up,
// so that what is refused would not have fitted.
constexpr double kBytesPerRoundFlow = 550;
constexpr double kBytesPerResource = 60;

/// What this process holds now that `limit` does not deduct: under RLIMIT_AS, which is what is
/// left of it, nothing; under physical memory or a cgroup's limit, its resident set (statm's
/// second field: the graph, built by now).
double held(const hardware::MemoryLimit& limit) {
    if (limit.which == "ulimit -v (RLIMIT_AS)")
        return 0;
    const long page = ::sysconf(_SC_PAGE_SIZE);
    double size = 0, resident = 0;
    std::ifstream statm("/proc/self/statm");
    if (!(statm >> size >> resident) || page <= 0)
        return 0;
    return resident * static_cast<double>(page);
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
    if (limit.bytes <= 0 || bytes + held(limit) <= 0.8 * limit.bytes)
        return;
    throw InputError(fmt::format(
        "{} in flow fidelity needs about {:.1f} GiB ({:.3g} flows in one round, listed before "
        "symmetry folds them); {} leaves {:.1f} GiB to this process: use --fidelity analytic, "
        "or simulate fewer GPUs (data-parallel replicas repeat: a smaller dp predicts the same "
        "step)",
        what, bytes / (1 << 30), round_flows, limit.which,
        (limit.bytes - held(limit)) / (1 << 30)));
}

} // namespace clustersim::strategies::collectives
