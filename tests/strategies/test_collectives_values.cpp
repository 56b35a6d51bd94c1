// Values mode: every algorithm's schedule, run on real numbers, leaves on every rank what the
// collective defines, for every GPU count from 1 to 17 (one to three nodes), every root, and
// buffers that do not split evenly into chunks.
#include "collectives_test_util.h"

#include "strategies/collectives/values.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::strategies::collectives;
using collectives_test::topology;

namespace {

double input(int rank, std::int64_t i) {
    return (rank + 1) * 1000.0 + static_cast<double>(i);
}

/// Runs every applicable algorithm of every op on `comm`; returns the number of runs.
int check_all(const Communicator& comm, const std::string& label) {
    const int n = comm.size();
    int runs = 0;
    for (Op op : kAllOps) {
        std::vector<std::int64_t> sizes; // elements
        if (splits_per_rank(op))
            sizes = {std::int64_t(n), 3 * std::int64_t(n)};
        else
            sizes = {1, 5, 2 * std::int64_t(n) + 3};
        std::vector<int> roots{0};
        if (has_root(op)) {
            roots.clear();
            for (int r = 0; r < n; ++r)
                roots.push_back(r);
        }
        for (Algorithm a : kConcreteAlgorithms) {
            if (!comm.why_not(a, op).empty())
                continue;
            for (std::int64_t E : sizes) {
                for (int root : roots) {
                    // 4-byte chunks: pipelines run one element per chunk, many chunks.
                    for (std::int64_t chunk : {std::int64_t(4), std::int64_t(0)}) {
                        Collective c;
                        c.op = op;
                        c.bytes = 4 * E;
                        c.root = root;
                        const Buffers in = make_inputs(op, E, n, root, input);
                        const Buffers out = run_values(comm, c, a, Protocol::simple, in, {chunk});
                        const Buffers want = expected_outputs(op, E, n, root, in);
                        for (int r = 0; r < n; ++r) {
                            const View v = output_view(op, E, n, r, root);
                            const std::vector<double> got(out[size_t(r)].begin() + v.offset,
                                                          out[size_t(r)].begin() + v.offset +
                                                              v.count);
                            INFO(label << ": " << to_string(op) << " " << to_string(a) << " " << E
                                       << " elements, root " << root << ", chunk " << chunk
                                       << ", rank " << r);
                            REQUIRE(got == want[size_t(r)]);
                        }
                        ++runs;
                    }
                }
            }
        }
    }
    return runs;
}

} // namespace

TEST_CASE("collectives: every schedule leaves the right values on every rank, 1 to 17 GPUs",
          "[collectives][values]") {
    int runs = 0;
    for (int n = 1; n <= 17; ++n)
        runs += check_all(Communicator::first(topology("dgx-h100", 24), n),
                          std::to_string(n) + " GPUs");
    CHECK(runs > 5000);
}

TEST_CASE("collectives: values on irregular and multi-node communicators",
          "[collectives][values]") {
    const auto& topo = topology("dgx-h100", 24);
    CHECK(check_all(Communicator(topo, {0, 1, 2, 8, 9, 10}), "2 nodes x 3") > 0);
    CHECK(check_all(Communicator(topo, {3, 9, 1, 10, 17}), "ranks 3,9,1,10,17") > 0);
    CHECK(check_all(Communicator(topo, {16, 0, 8}), "one GPU on each of 3 nodes") > 0);
    CHECK(check_all(Communicator::first(topo, 24), "3 DGX nodes") > 0);
    CHECK(check_all(Communicator::first(topology("pcie-4gpu", 8), 8), "2 PCIe boxes") > 0);
    CHECK(check_all(Communicator::first(topology("dgx-a100", 16), 16), "2 DGX A100") > 0);
}

TEST_CASE("collectives: the lecture's reduce_scatter demo", "[collectives][values]") {
    // lecture_08.py: on 4 ranks, input = arange(4) + rank; rank r receives sum over ranks of
    // (r + rank) = 4r + 6.
    const auto comm = Communicator::first(topology("dgx-h100", 8), 4);
    Collective c;
    c.op = Op::reduce_scatter;
    c.bytes = 16;
    const Buffers in = make_inputs(Op::reduce_scatter, 4, 4, 0,
                                   [](int rank, std::int64_t i) { return double(rank + i); });
    const Buffers out = run_values(comm, c, Algorithm::ring, Protocol::simple, in);
    for (int r = 0; r < 4; ++r)
        CHECK(out[size_t(r)][size_t(r)] == 4.0 * r + 6);
}
