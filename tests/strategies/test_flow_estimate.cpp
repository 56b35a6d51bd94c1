// What a flow simulation will hold, counted before it runs (strategies/collectives/
// flow_estimate.h): the count of a round's flows is the list's own, and the runs the README
// times are within what any machine that runs them has.
#include "collectives_test_util.h"

#include "strategies/collectives/flow_estimate.h"
#include "strategies/collectives/schedule.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::strategies::collectives;
using collectives_test::GiB;
using collectives_test::topology;

namespace {
std::vector<int> first(int n) {
    std::vector<int> g;
    for (int i = 0; i < n; ++i)
        g.push_back(i);
    return g;
}
} // namespace

TEST_CASE("flow estimate: a round's size is the number of flows it lists",
          "[collectives][flow][estimate]") {
    struct Case {
        const char* preset;
        int gpus;
        Op op;
        Algorithm algo;
    };
    for (const Case& k : {Case{"dgx-a100", 64, Op::all_reduce, Algorithm::ring},
                          Case{"dgx-a100", 64, Op::all_reduce, Algorithm::tree},
                          Case{"dgx-a100", 64, Op::all_gather, Algorithm::ring},
                          Case{"dgx-a100", 32, Op::all_to_all, Algorithm::automatic},
                          Case{"dgx-h100", 64, Op::all_reduce, Algorithm::nvls_tree},
                          Case{"dgx-h100", 8, Op::all_reduce, Algorithm::nvls}}) {
        INFO(k.preset << " " << k.gpus << " GPUs, " << to_string(k.op) << ", "
                      << to_string(k.algo));
        const Communicator comm(topology(k.preset, k.gpus), first(k.gpus));
        Collective c;
        c.op = k.op;
        c.bytes = GiB;
        c.algorithm = k.algo;
        const Choice choice = comm.choose(c);
        const Decomposition d = decompose(comm, c, choice.algorithm, choice.protocol);
        double flows = 0, peak = 0;
        for (const auto& phase : d.phases) {
            for (const StepRange r : phase->rounds(FlowOptions{}.max_rounds)) {
                std::vector<detail::PFlow> out;
                std::vector<std::uint32_t> counts;
                phase->round_groups(r, out, counts);
                CHECK(phase->round_size(r) == out.size());
                const double n = static_cast<double>(out.size() + d.memory_bytes.size());
                flows += n;
                peak = std::max(peak, n);
            }
        }
        const FlowFootprint f = flow_footprint(comm, c);
        CHECK(f.flows == flows);
        CHECK(f.peak_round == peak);
        CHECK(f.peak_round > 0);
    }
}

TEST_CASE("flow estimate: the README's 100,000-GPU all-reduce is estimated within a machine "
          "that runs it",
          "[collectives][flow][estimate]") {
    // Measured: 512 MB peak RSS for the whole process, graph included (docs/performance.md). The
    // estimate of the flows' part must leave it accepted wherever 1 GiB is free, and not be
    // far below what the run takes (it is an estimate against bad_alloc).
    const auto& topo = topology("dgx-h100", 100000);
    const Communicator comm(topo, first(100000));
    Collective c;
    c.bytes = GiB;
    const FlowFootprint f = flow_footprint(comm, c);
    const double bytes = flow_bytes(f.peak_round, static_cast<double>(topo.edge_count()));
    CHECK(bytes < 0.75 * GiB);
    CHECK(bytes > 0.2 * GiB);
}
