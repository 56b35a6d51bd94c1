// The one collective-op vocabulary and the one bus-bandwidth rule: strategies/collectives owns
// them, and calibrate's measurements, importers and the reports use them.
#include "calibrate/measurements.h"
#include "strategies/collectives/collective.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace clustersim;
namespace cl = clustersim::strategies::collectives;

TEST_CASE("collective vocabulary: the bus bandwidth factor is nccl-tests' for every op",
          "[calibrate][collectives]") {
    // nccl-tests' src/*.cu (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
    // reduce_scatter, alltoall, gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1.
    for (const int n : {1, 2, 3, 4, 8, 16, 1024}) {
        const double d = n;
        INFO(n << " ranks");
        CHECK(cl::bus_factor(cl::Op::all_reduce, n) == 2 * (d - 1) / d);
        CHECK(cl::bus_factor(cl::Op::all_gather, n) == (d - 1) / d);
        CHECK(cl::bus_factor(cl::Op::reduce_scatter, n) == (d - 1) / d);
        CHECK(cl::bus_factor(cl::Op::all_to_all, n) == (d - 1) / d);
        CHECK(cl::bus_factor(cl::Op::gather, n) == (d - 1) / d);
        CHECK(cl::bus_factor(cl::Op::scatter, n) == (d - 1) / d);
        CHECK(cl::bus_factor(cl::Op::broadcast, n) == 1);
        CHECK(cl::bus_factor(cl::Op::reduce, n) == 1);
        CHECK(cl::bus_factor(cl::Op::send_recv, n) == 1);
    }
    // The factors nccl-tests prints for 8 GPUs.
    CHECK(cl::bus_factor(cl::Op::all_reduce, 8) == 1.75);
    CHECK(cl::bus_factor(cl::Op::all_gather, 8) == 0.875);
    CHECK(cl::bus_factor(cl::Op::all_reduce, 2) == 1.0);
    CHECK(cl::bus_factor(cl::Op::all_gather, 4) == 0.75);
}

TEST_CASE("collective vocabulary: names are the file format and accept nccl-tests' spellings",
          "[calibrate][collectives]") {
    // The names written in measurement files, CSV tables and JSON output: unchanged.
    CHECK(cl::to_string(cl::Op::broadcast) == "broadcast");
    CHECK(cl::to_string(cl::Op::reduce) == "reduce");
    CHECK(cl::to_string(cl::Op::all_reduce) == "all_reduce");
    CHECK(cl::to_string(cl::Op::all_gather) == "all_gather");
    CHECK(cl::to_string(cl::Op::reduce_scatter) == "reduce_scatter");
    CHECK(cl::to_string(cl::Op::all_to_all) == "all_to_all");
    CHECK(cl::to_string(cl::Op::gather) == "gather");
    CHECK(cl::to_string(cl::Op::scatter) == "scatter");
    CHECK(cl::to_string(cl::Op::send_recv) == "send_recv");

    CHECK(cl::parse_op("all_reduce") == cl::Op::all_reduce);
    CHECK(cl::parse_op("all-reduce") == cl::Op::all_reduce);
    CHECK(cl::parse_op("allreduce") == cl::Op::all_reduce);
    CHECK(cl::parse_op("AllReduce") == cl::Op::all_reduce);
    CHECK(cl::parse_op("alltoall") == cl::Op::all_to_all);
    CHECK(cl::parse_op("sendrecv") == cl::Op::send_recv);
    CHECK(cl::parse_op("reduce-scatter") == cl::Op::reduce_scatter);
    CHECK_FALSE(cl::parse_op("hypercube"));
    CHECK_FALSE(cl::parse_op("allreduce2"));
    CHECK_FALSE(cl::parse_op(""));
    std::set<cl::Op> seen;
    for (const cl::Op op : cl::kAllOps) {
        CHECK(cl::parse_op(cl::to_string(op)) == op);
        seen.insert(op);
    }
    CHECK(seen.size() == cl::kAllOps.size());
    CHECK(cl::op_names() == "broadcast, reduce, all_reduce, all_gather, reduce_scatter, "
                            "all_to_all, gather, scatter, send_recv");
}
